"""A store that behaves like a remote file system (NFS, OrangeFS, S3) in time.

The cost model, shared by both clocks
-------------------------------------
A remote store answers every request after a fixed **latency**, moves bytes over
**one link** whose bandwidth all requests in flight share, and serves at most
**max_concurrency** requests at once. We model that as ``max_concurrency`` lanes
and one link:

* a request issued at ``t`` takes the lane that frees earliest, starting at
  ``start = max(t, lane_free)`` (a queue in front of a fair semaphore);
* it waits ``latency``, then its bytes cross the link, which carries one transfer
  at a time: ``finish = max(start + latency, link_free) + nbytes / bandwidth``;
* the lane and the link are busy until ``finish``.

Serialising transfers on the link gives the same aggregate throughput, and the
same makespan, as splitting the bandwidth fairly between the transfers in flight,
with a far simpler bookkeeping. Because start times never decrease, the link
serves transfers in the order they become ready, and it is never idle while one
is waiting. Two bounds follow and the tests check them: the makespan of ``n``
requests issued together is at least
``max(ceil(n / c) * latency, total_bytes / bandwidth)`` and at most
``n * latency + total_bytes / bandwidth``.

Two clocks
----------
``clock="real"`` sleeps: each request is booked on the schedule above (time
measured from the store's creation) and the calling thread sleeps until its
booked finish. Booking under a lock is a FIFO semaphore in effect, and since a
lane's next request starts when the lane was *scheduled* to free rather than when
a late-waking thread noticed, sleep overshoot does not pile up over a run.

``clock="virtual"`` never sleeps: requests are booked at the driver's virtual
``now`` (all at once, as if issued as fast as possible) and
:attr:`ThrottledStore.modeled_seconds` is the makespan a real run would take.
:meth:`ThrottledStore.advance` moves ``now`` forward by compute time, and
:meth:`ThrottledStore.sync` moves it to the moment every read issued so far has
arrived (a loader without prefetch waits there before computing).

Both clocks are thread-safe and both count, in :meth:`ThrottledStore.stats`, one
read per request, its bytes once, and its service seconds (from lane start to
finish: wall seconds with the real clock, modeled seconds with the virtual one).
Only data moves are throttled; ``size``, ``exists`` and ``list_keys`` pass
straight through, as metadata a client would have cached. The inner store is read
for the bytes and keeps its own counters.

The lanes and the link live in one process: DataLoader worker *processes* each
get their own copy, so give each worker ``max_concurrency / num_workers`` (or
throttle in the main process) when modeling one shared server.
"""

from __future__ import annotations

import heapq
import math
import threading
import time
from collections.abc import Sequence
from typing import Literal

from hotset.errors import HotsetError
from hotset.storage.base import Store
from hotset.storage.charged import ChargedStore

Clock = Literal["real", "virtual"]
_CLOCKS = ("real", "virtual")
BYTES_PER_MB = 10**6


def _check_number(name: str, value: object, *, allow_inf: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise HotsetError(f"{name}: expected a number, got {value!r}")
    number = float(value)
    if math.isnan(number) or (math.isinf(number) and not allow_inf):
        raise HotsetError(f"{name}: must be a finite number, got {value!r}")
    return number


def check_link_args(
    inner: object, latency_ms: object, bandwidth_mb_s: object, max_concurrency: object
) -> tuple[float, float]:
    """Validate a throttled store's link model; shared by the thread and process variants.

    Returns (latency_ms, bandwidth_mb_s) as floats so both variants store the same values.
    """
    if not isinstance(inner, Store):
        raise HotsetError(f"inner: expected a Store, got {inner!r}")
    return check_link_numbers(latency_ms, bandwidth_mb_s, max_concurrency)


def check_link_numbers(
    latency_ms: object, bandwidth_mb_s: object, max_concurrency: object
) -> tuple[float, float]:
    """Validate the link model's numbers alone (a store preset checks them before any store
    exists); returns (latency_ms, bandwidth_mb_s) as floats."""
    latency = _check_number("latency_ms", latency_ms, allow_inf=False)
    if latency < 0:
        raise HotsetError(f"latency_ms: must be >= 0, got {latency_ms!r}")
    bandwidth = _check_number("bandwidth_mb_s", bandwidth_mb_s, allow_inf=True)
    if bandwidth <= 0:
        raise HotsetError(f"bandwidth_mb_s: must be > 0, got {bandwidth_mb_s!r}")
    if (
        isinstance(max_concurrency, bool)
        or not isinstance(max_concurrency, int)
        or max_concurrency < 1
    ):
        raise HotsetError(f"max_concurrency: must be an integer >= 1, got {max_concurrency!r}")
    return latency, bandwidth


class LinkSchedule:
    """Lanes plus one shared link, in seconds; pure arithmetic, no locking, no clock.

    Kept apart from :class:`ThrottledStore` so the simulator can cost a trace
    with exactly the model the store uses.
    """

    def __init__(self, *, latency_s: float, bytes_per_s: float, lanes: int) -> None:
        self.latency_s = latency_s
        self.bytes_per_s = bytes_per_s
        self.lanes = lanes
        self.reset()

    def reset(self) -> None:
        self._lane_free = [0.0] * self.lanes
        self._link_free = 0.0
        self.makespan = 0.0

    def book(self, issue: float, nbytes: int) -> tuple[float, float]:
        """Schedule one request issued at ``issue``; return its (start, finish)."""
        lane_free = heapq.heappop(self._lane_free)
        start = max(issue, lane_free)
        transfer_start = max(start + self.latency_s, self._link_free)
        finish = transfer_start + nbytes / self.bytes_per_s
        self._link_free = finish
        heapq.heappush(self._lane_free, finish)
        self.makespan = max(self.makespan, finish)
        return start, finish


def _sleep_until(deadline: float) -> float:
    """Sleep until ``time.perf_counter()`` reaches ``deadline``; return the wake time."""
    while True:
        now = time.perf_counter()
        if now >= deadline:
            return now
        time.sleep(deadline - now)


class ThrottledStore(ChargedStore):
    """Wrap ``inner`` so reads and writes cost what they would on a remote store.

    ``latency_ms`` per request, ``bandwidth_mb_s`` (MB = 10^6 bytes; ``math.inf``
    for an unlimited link) shared by all requests in flight, at most
    ``max_concurrency`` requests in flight. See the module docstring for the model.
    """

    def __init__(
        self,
        inner: Store,
        *,
        latency_ms: float = 0.0,
        bandwidth_mb_s: float = math.inf,
        max_concurrency: int = 1,
        clock: Clock = "real",
    ) -> None:
        latency, bandwidth = check_link_args(inner, latency_ms, bandwidth_mb_s, max_concurrency)
        if clock not in _CLOCKS:
            raise HotsetError(f"clock: must be one of {', '.join(_CLOCKS)}, got {clock!r}")
        super().__init__(inner)
        self.latency_ms = latency
        self.bandwidth_mb_s = bandwidth
        self.max_concurrency = max_concurrency
        self.clock: Clock = clock
        self._schedule = LinkSchedule(
            latency_s=latency / 1000.0,
            bytes_per_s=bandwidth * BYTES_PER_MB,
            lanes=max_concurrency,
        )
        self._lock = threading.Lock()
        self._origin = time.perf_counter()
        self._now = 0.0

    # -- the clock -----------------------------------------------------------

    @property
    def virtual(self) -> bool:
        return self.clock == "virtual"

    @property
    def modeled_seconds(self) -> float:
        """When the last request issued so far finishes, in seconds from the clock's origin.

        With the virtual clock this is the makespan a real run would take; with
        the real clock it is the scheduled wall time since creation (or
        :meth:`reset_clock`).
        """
        with self._lock:
            return self._schedule.makespan

    @property
    def now(self) -> float:
        """Seconds since the clock's origin: the driver's virtual now, or wall time."""
        with self._lock:
            return self._now if self.virtual else time.perf_counter() - self._origin

    def advance(self, seconds: float) -> float:
        """Virtual clock only: let ``seconds`` of compute pass; return the new now.

        Reads already issued keep going meanwhile (that is prefetching); reads
        issued afterwards start no earlier than the new now.
        """
        self._need_virtual("advance")
        step = _check_number("seconds", seconds, allow_inf=False)
        if step < 0:
            raise HotsetError(f"seconds: cannot advance the clock by {seconds!r}")
        with self._lock:
            self._now += step
            return self._now

    def sync(self) -> float:
        """Virtual clock only: wait for every read issued so far; return the new now."""
        self._need_virtual("sync")
        with self._lock:
            self._now = max(self._now, self._schedule.makespan)
            return self._now

    def reset_clock(self) -> None:
        """Idle lanes, idle link, time zero (counters are kept; see :meth:`reset_stats`)."""
        with self._lock:
            self._schedule.reset()
            self._origin = time.perf_counter()
            self._now = 0.0

    def _need_virtual(self, what: str) -> None:
        if not self.virtual:
            raise HotsetError(
                f"{what}() needs clock='virtual'; this store has clock={self.clock!r}"
            )

    def _charge(self, sizes: Sequence[int]) -> float:
        """Book one request per size; sleep if real; return summed service seconds."""
        with self._lock:
            origin = self._origin
            issue = self._now if self.virtual else time.perf_counter() - origin
            bookings = [self._schedule.book(issue, n) for n in sizes]
        if self.virtual:
            return sum(finish - start for start, finish in bookings)
        total = 0.0
        for start, finish in sorted(bookings, key=lambda b: b[1]):
            woke = _sleep_until(origin + finish)
            total += woke - (origin + start)
        return total

    def write(self, key: str, data: bytes) -> None:
        """Writes cross the same modeled link as reads."""
        self.inner.write(key, data)
        self._stats.add_write(len(data), self._charge([len(data)]))

    def __repr__(self) -> str:
        return (
            f"ThrottledStore({self.inner!r}, latency_ms={self.latency_ms:g}, "
            f"bandwidth_mb_s={self.bandwidth_mb_s:g}, max_concurrency={self.max_concurrency}, "
            f"clock={self.clock!r})"
        )
