"""A store wrapper that charges every request a modeled cost and counts it.

The throttled stores differ only in how they turn a batch of request sizes into
seconds (a per-process schedule or one shared across worker processes); how
reads reach the inner store and how they are counted is the same, and lives here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hotset.storage.base import StatsCounter, Store, StoreStats
from hotset.storage.ranges import Range, read_ranges


class ChargedStore:
    """Delegates to ``inner``; each read costs what :meth:`_charge` says."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self._stats = StatsCounter()

    def _charge(self, sizes: Sequence[int]) -> float:
        """Seconds spent serving requests of these sizes, issued together."""
        raise NotImplementedError

    def read(self, key: str) -> bytes:
        data = self.inner.read(key)
        self._stats.add_read(len(data), self._charge([len(data)]))
        return data

    def read_many(self, keys: Sequence[str]) -> list[bytes]:
        """One request per key, all issued at once (a batched, concurrent fetch)."""
        datas = self.inner.read_many(keys)
        sizes = [len(d) for d in datas]
        if sizes:
            self._stats.add_read(sum(sizes), self._charge(sizes), count=len(sizes))
        return datas

    def read_ranges(self, key: str, ranges: Sequence[Range]) -> list[bytes]:
        """A vector of byte ranges of one file: charged as ONE request moving the
        ranges' bytes (a store answering a multi-range read in one round trip)."""
        parts = read_ranges(self.inner, key, ranges)
        nbytes = sum(map(len, parts))
        self._stats.add_read(nbytes, self._charge([nbytes]))
        return parts

    def size(self, key: str) -> int:
        return self.inner.size(key)

    def exists(self, key: str) -> bool:
        return self.inner.exists(key)

    def write(self, key: str, data: bytes) -> None:
        self.inner.write(key, data)

    def list_keys(self) -> Iterable[str]:
        return self.inner.list_keys()

    def stats(self) -> StoreStats:
        return self._stats.snapshot()

    def reset_stats(self) -> None:
        """Zero the counters (a modeled clock, if any, keeps running)."""
        self._stats.reset()
