"""One modeled remote server shared by every process of a job (DataLoader workers).

:class:`~hotset.storage.throttled.ThrottledStore` keeps its lanes and its link in
one process, so four DataLoader workers with a 4-lane store each would model a
16-request server. :class:`SharedThrottledStore` keeps the same schedule (the
lanes-plus-one-link model of :mod:`hotset.storage.throttled`) in a small shared
array guarded by a process-shared lock: a request booked by any worker delays the
requests every other worker books after it, so "4 in flight" holds job-wide.

Time is ``time.monotonic()``, which is system-wide on Linux (CLOCK_MONOTONIC),
so bookings made by different processes are on one clock. Only real time is
modeled here: the virtual clock belongs to single-process simulations.

The shared state travels to workers by inheritance (fork, or pickling while a
process is being spawned, which is how DataLoader starts workers), so it works
with every start method; pickling it any other time fails, as it must.
"""

from __future__ import annotations

import math
import multiprocessing
import time
from collections.abc import Sequence
from typing import Any

from hotset.storage.base import Store
from hotset.storage.charged import ChargedStore
from hotset.storage.throttled import BYTES_PER_MB, check_link_args

# shared array layout: [origin, link_free, makespan, lane_free * lanes]
_ORIGIN, _LINK, _MAKESPAN, _LANES = 0, 1, 2, 3


class SharedThrottledStore(ChargedStore):
    """Wrap ``inner`` so reads cost ``latency_ms`` each, ``max_concurrency`` at a time, job-wide.

    ``bandwidth_mb_s`` (MB = 10^6 bytes, ``math.inf`` for none) is one link shared
    by every request of every process. Writes pass through unthrottled (the
    loader never writes to the dataset store). ``context`` is the
    multiprocessing start method the workers will use (``None``: the default).
    """

    def __init__(
        self,
        inner: Store,
        *,
        latency_ms: float = 0.0,
        bandwidth_mb_s: float = math.inf,
        max_concurrency: int = 1,
        context: str | None = None,
    ) -> None:
        latency, bandwidth = check_link_args(inner, latency_ms, bandwidth_mb_s, max_concurrency)
        ctx = multiprocessing.get_context(context)
        super().__init__(inner)
        self.latency_ms = latency
        self.bandwidth_mb_s = bandwidth
        self.max_concurrency = max_concurrency
        self._latency_s = latency / 1000.0
        self._bytes_per_s = bandwidth * BYTES_PER_MB
        self._lock: Any = ctx.Lock()
        self._state: Any = ctx.RawArray("d", _LANES + max_concurrency)
        self._state[_ORIGIN] = time.monotonic()

    # -- the schedule ------------------------------------------------------------

    def _book(self, sizes: Sequence[int]) -> list[tuple[float, float]]:
        """Book one request per size now; return absolute (start, finish) monotonic times."""
        state, lanes = self._state, self.max_concurrency
        out: list[tuple[float, float]] = []
        with self._lock:
            now = time.monotonic()
            for nbytes in sizes:
                lane = min(range(lanes), key=lambda i: state[_LANES + i])
                start = max(now, state[_LANES + lane])
                transfer_start = max(start + self._latency_s, state[_LINK])
                finish = transfer_start + nbytes / self._bytes_per_s
                state[_LINK] = finish
                state[_LANES + lane] = finish
                state[_MAKESPAN] = max(state[_MAKESPAN], finish)
                out.append((start, finish))
        return out

    def _charge(self, sizes: Sequence[int]) -> float:
        bookings = self._book(sizes)
        total = 0.0
        for start, finish in sorted(bookings, key=lambda b: b[1]):
            while True:
                now = time.monotonic()
                if now >= finish:
                    break
                time.sleep(finish - now)
            total += now - start
        return total

    @property
    def modeled_seconds(self) -> float:
        """When the last request booked so far finishes, in seconds since creation."""
        with self._lock:
            return float(self._state[_MAKESPAN] - self._state[_ORIGIN])

    def __repr__(self) -> str:
        return (
            f"SharedThrottledStore({self.inner!r}, latency_ms={self.latency_ms:g}, "
            f"bandwidth_mb_s={self.bandwidth_mb_s:g}, max_concurrency={self.max_concurrency})"
        )
