"""How a worker talks to the cache: its keys, and calls that fail without failing training.

A failing cache never fails training. When a cache call raises a backend error
(:data:`BACKEND_ERRORS`: the server is down, frozen past its timeout, or
refusing writes) the batch's cached ids are read from storage instead
(``degraded_reads``), the batch writes nothing to the cache but still takes its
write turn (later batches wait on it), and this process leaves the cache alone
for a short interval that grows while failures repeat (:class:`CacheBackoff`);
the first call that succeeds again resets it. Only byte moving degrades: the
plans, made by the policy in the main process, stay exactly as they were.

Every call a batch makes goes through its :class:`CacheTurn`, which counts the
failures, marks the cache unusable for the rest of the batch and backs the
process off.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from hotset.cachestore.base import CacheKey
from hotset.cachestore.redis_store import CacheUnavailable
from hotset.engine.units import UnitLayout

__all__ = ["BACKEND_ERRORS", "CacheBackoff", "CacheKeys", "CacheTurn"]

#: what a cache raises when its backend fails (not a refused put, not bad bytes):
#: RedisCache wraps redis-py's errors in CacheUnavailable; OSError covers a store
#: whose socket or file fails unwrapped
BACKEND_ERRORS: tuple[type[BaseException], ...] = (CacheUnavailable, OSError)
#: first and longest pause (seconds) of the cache after a failure
BACKOFF_MIN_S = 0.25
BACKOFF_MAX_S = 8.0


class CacheBackoff:
    """When this process may use the cache again after failures (per process, no I/O).

    Each failure doubles the pause, from :data:`BACKOFF_MIN_S` up to
    :data:`BACKOFF_MAX_S`, so a dead server costs one failed call per pause
    (a frozen one up to its socket timeout) instead of one per batch, and a
    server that comes back is used again within one pause.
    """

    def __init__(self, min_s: float = BACKOFF_MIN_S, max_s: float = BACKOFF_MAX_S) -> None:
        self.min_s, self.max_s = min_s, max_s
        self.pause_s = 0.0
        self.until = 0.0
        self.failures = 0
        #: cache keys whose deletes a degraded batch skipped, replayed on the next write
        self.pending_deletes: dict[CacheKey, None] = {}

    def usable(self) -> bool:
        return time.monotonic() >= self.until

    def failed(self) -> None:
        self.failures += 1
        self.pause_s = min(self.max_s, max(self.min_s, 2 * self.pause_s))
        self.until = time.monotonic() + self.pause_s

    def succeeded(self) -> None:
        self.pause_s = 0.0


class CacheTurn:
    """One batch's dealings with the cache: still usable by it, and calls that failed."""

    __slots__ = ("backoff", "errors", "ok", "refused", "refused_bytes", "resyncs")

    def __init__(self, backoff: CacheBackoff, ok: bool) -> None:
        self.backoff = backoff
        self.ok = ok
        self.errors = 0
        #: puts refused over budget: other jobs filled a shared namespace, or the
        #: server evicted or another client wrote behind this loader's back
        self.refused = 0
        self.refused_bytes = 0
        #: times the store set its byte counter to what its entries hold
        self.resyncs = 0

    def call(self, call: Callable[[Any], Any], arg: Any) -> Any:
        """``call(arg)``, or ``None`` when the cache's backend fails (then back off).

        A call returning nothing (a put, a delete) returns ``True`` on success.
        """
        try:
            out = call(arg)
        except BACKEND_ERRORS:
            self.errors += 1
            self.ok = False
            self.backoff.failed()
            return None
        self.backoff.succeeded()
        return out if out is not None else True


class CacheKeys:
    """Cache ids to cache keys: a sample below ``n``, read unit ``cid - n`` above.

    A key carries the content hash of what it names (the manifest's for a
    sample, the layout's for a unit), so a served entry can be checked against it.
    """

    def __init__(self, hashes: Sequence[str], layout: UnitLayout | None) -> None:
        self.hashes = hashes
        self.layout = layout
        self.n = len(hashes)

    def key_of(self, cid: int) -> CacheKey:
        """The cache key of cache id ``cid``."""
        if cid < self.n:
            return CacheKey(cid, self.hashes[cid])
        assert self.layout is not None
        return CacheKey(cid, self.layout.chunk_hashes[cid - self.n])
