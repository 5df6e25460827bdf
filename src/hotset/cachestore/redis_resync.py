"""Repairing a namespace's byte counter: count what is stored and set the counter to it.

A counter that disagrees with what is there. The counter
``hotset:<namespace>:used-bytes`` should equal the bytes the namespace's entries
hold, but entries can leave without a delete going through the scripts: a
server whose ``maxmemory-policy`` evicts drops them when full (a loader warns
about such a server at start, :mod:`hotset.cachestore.redis_eviction`), and
another client may delete, shorten or overwrite an entry, or write the counter
itself. The delete script only takes off the bytes still there, so such entries
leave the counter too high -- for good, were nothing done -- and every later put
of the namespace would be refused. In a cluster a lost reply also leaves a
reservation's effect unknown. The repair is a resync, run where the
disagreement shows, so that the hot path pays nothing for it:

* a put the budget refuses resyncs and tries once more (single server and
  cluster alike): a counter too high never turns away bytes that fit. Why not a
  per-namespace index of entry sizes kept by the scripts: it would cost every
  put and delete a hash write and as much memory again per entry, and a server
  that evicts may evict the index too; a scan at refusals costs nothing until
  the counter is wrong, and finds what is really there. Resyncs forced by
  refusals are spaced (:data:`RESYNC_DUTY`, :class:`CounterHealth`): a namespace
  other jobs keep full refuses every put, and one scan per refused item would
  cost more than the puts;
* on a single server, a counter that is missing or not a count makes the put
  script store nothing, and the handle resyncs first, always
  (:mod:`hotset.cachestore.redis_scripts`);
* a cluster handle that lost a reply is *stale* and resyncs before its next
  operation (:mod:`hotset.cachestore.redis_cluster`).

On a single server a resync is one script that counts and sets
(:data:`~hotset.cachestore.redis_scripts.ATOMIC_RESYNC_SCRIPT`): nothing lands
between the count and the set. In a cluster the entries live on every master,
so a resync counts them by ``SCAN`` and pipelined ``STRLEN``
(:func:`stored_total`) and sets the counter with a compare-and-set against the
value it read before scanning (:func:`set_to_scanned`), so a put or delete
another client made during the scan is never overwritten -- unless a put and a
delete of equal size both land during the scan (the counter reads as before);
after :data:`RESYNC_TRIES` scans that others kept invalidating, it leaves the
counter alone (the next refusal tries again).
:meth:`hotset.cachestore.redis_store.RedisCache.resync` puts the parts together.

What is left: a counter lowered by hand, or one evicted and re-created as 0 by a
handle joining the namespace, reads too low until a refusal resyncs it; a
loader's own policy still keeps a private namespace within its budget.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

#: scans a resync repeats while other clients keep changing the counter
RESYNC_TRIES = 3
#: the share of a handle's time that resyncs forced by refused puts may take
RESYNC_DUTY = 0.1
#: the shortest gap between two resyncs a refused put forces: a one-script resync
#: (single server) takes a round trip, as a put does, so the duty alone would allow
#: one resync per ten refused puts
MIN_RESYNC_GAP_S = 0.05
#: keys per SCAN step and per pipelined STRLEN batch
SCAN_BATCH = 1000


def count(value: bytes | None) -> int:
    """A counter's value as read: 0 when missing or not a count (another client's)."""
    try:
        return max(0, int(value or 0))
    except ValueError:
        return 0


class CounterHealth:
    """Whether a handle may trust its namespace's counter, and when it may count again."""

    def __init__(self) -> None:
        #: cluster only: a failure left the counter's effect unknown; resync before use
        self.stale = False
        #: resyncs of the counter a refused put may run: not before this monotonic time
        self.resync_after = 0.0

    @contextlib.contextmanager
    def unsure(self) -> Iterator[None]:
        """A cluster step whose failure leaves the counter's effect unknown: mark stale."""
        try:
            yield
        except BaseException:
            self.stale = True
            raise

    def may_resync(self) -> bool:
        """Whether a refused put may resync the counter now."""
        return time.monotonic() >= self.resync_after

    def resynced(self, started: float) -> None:
        """A resync that began at ``started`` (monotonic) is done: trusted, and spaced.

        A refused put may resync again once 1 / :data:`RESYNC_DUTY` times this
        one's length has passed: a namespace that others keep full (every put
        refused, and each one tried alone) costs at most that share of the time
        in scans.
        """
        self.stale = False
        gap = max((time.monotonic() - started) / RESYNC_DUTY, MIN_RESYNC_GAP_S)
        self.resync_after = time.monotonic() + gap


def set_to_scanned(
    client: Any, script: Any, counter: str, scan: Callable[[], int]
) -> tuple[int, int | None]:
    """Set ``counter`` to ``scan()`` unless it changed meanwhile; retry a few times.

    ``script`` is the registered compare-and-set
    (:data:`~hotset.cachestore.redis_scripts.RESYNC_SCRIPT`).
    Returns the counter's value afterwards and how far off it was (None when
    others kept changing it and it was left alone).
    """
    for _ in range(RESYNC_TRIES):
        before = client.get(counter)
        total = scan()
        if int(script(keys=[counter], args=[before or b"", total])):
            return total, total - count(before)
    return count(client.get(counter)), None


def stored_total(
    client: Any, prefix: str, counter: str, strlen_sum: Callable[[list[bytes]], int]
) -> int:
    """The bytes the entries under ``prefix`` hold (the counter itself left out)."""
    total = 0
    batch: list[bytes] = []
    counter_key = counter.encode()
    for rkey in client.scan_iter(match=prefix + "*", count=SCAN_BATCH):
        if rkey != counter_key:
            batch.append(rkey)
        if len(batch) >= SCAN_BATCH:
            total += strlen_sum(batch)
            batch = []
    return total + strlen_sum(batch)


class CounterOwner(Protocol):
    """What the write paths call back into: the store that resyncs and reads the counter."""

    def resync(self) -> int: ...

    def used_bytes(self) -> int: ...
