"""Prefetched read units, read in the main process and handed to the plans that need them.

The planner names units to prefetch in one batch's plan (``plan.prefetch``) and
serves from them in a later one (``Outcome.PREFETCHED``). The main process
starts each such read as soon as the plan that asks for it is made, on a small
pool of threads, and attaches the bytes to the later plan before a worker gets
it: the read overlaps the batches in between. Its requests are storage
requests and are counted (``prefetch_requests``, ``prefetch_bytes``); a unit
nothing served from before the epoch stopped is counted as wasted.

As with read-ahead, no thread of this pool runs while DataLoader workers fork:
the loader stops it (and it restarts lazily) around each ``iter``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass


@dataclass
class PrefetchCounts:
    """Cumulative counts since the object was made (the loader takes differences)."""

    requests: int = 0
    bytes: int = 0
    wasted: int = 0


class UnitPrefetcher:
    """Reads units ahead on a thread pool; ``take`` hands their bytes over once."""

    def __init__(self, read_unit: Callable[[int], bytes], *, threads: int) -> None:
        self._read_unit = read_unit
        self._threads = threads
        self._pool: ThreadPoolExecutor | None = None
        self._pending: dict[int, Future[bytes]] = {}
        self.counts = PrefetchCounts()

    def submit(self, units: Iterable[int]) -> None:
        for u in units:
            if u in self._pending:
                continue
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="hotset-prefetch")
            self._pending[u] = self._pool.submit(self._read_unit, u)

    def take(self, units: Iterable[int]) -> dict[int, bytes]:
        """The bytes of ``units`` (waiting for reads in flight); each unit is handed over once."""
        out: dict[int, bytes] = {}
        for u in units:
            fut = self._pending.pop(u, None)
            if fut is None:
                # not prefetched here (an abandoned epoch, a resumed one): read it now
                fut = Future()
                fut.set_result(self._read_unit(u))
            data = fut.result()
            self.counts.requests += 1
            self.counts.bytes += len(data)
            out[u] = data
        return out

    def stop(self) -> None:
        """Drop what nothing took (counted as wasted) and stop the threads."""
        for fut in self._pending.values():
            if fut.cancel():
                continue
            try:
                data = fut.result()
            except Exception:  # a failed read of a unit nobody needs is not an error
                continue
            self.counts.requests += 1
            self.counts.bytes += len(data)
            self.counts.wasted += 1
        self._pending.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
