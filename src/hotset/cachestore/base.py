"""What every cache store is: a byte budget that moves bytes and decides nothing.

The policy (pure, in the main process) decides which samples are admitted and
which are evicted; a cache store only stores, serves and deletes as it is told.
It keeps one promise of its own: it never holds more payload bytes than
``capacity_bytes``. A put that would break the budget is refused with a
:class:`~hotset.errors.HotsetError` naming the sizes, and leaves the store as it
was, so a policy bug shows up as an error instead of a silently bloated cache.

Entries are keyed by :class:`CacheKey` = (sample id, content hash). The hash is
part of the key so that bytes cached for an older version of a file can never be
served for the new one: a changed file has a new hash and simply misses.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import NamedTuple, Protocol, runtime_checkable

import xxhash

from hotset.errors import HotsetError, HotsetRuntimeError, IntegrityError
from hotset.units import format_bytes

_HASH_PATTERN = re.compile(r"^[0-9a-f]{16}$")


class CacheKey(NamedTuple):
    """One cached sample: its id in the manifest and the xxh3-64 hex of its bytes."""

    sample_id: int
    content_hash: str


def content_hash(data: bytes | bytearray | memoryview) -> str:
    """The content hash a :class:`CacheKey` carries: 16 lowercase hex digits of xxh3-64."""
    return xxhash.xxh3_64_hexdigest(data)


def check_cache_key(key: object) -> CacheKey:
    """Return ``key`` as a :class:`CacheKey`, or raise naming what is wrong with it.

    Plain ``(int, str)`` tuples are accepted so callers need not import the type.
    """
    if not isinstance(key, tuple) or len(key) != 2:
        raise HotsetError(f"cache key must be (sample_id, content_hash), got {key!r}")
    sample_id, digest = key
    if isinstance(sample_id, bool) or not isinstance(sample_id, int) or sample_id < 0:
        raise HotsetError(f"cache key {key!r}: sample id must be a non-negative int")
    if not isinstance(digest, str) or _HASH_PATTERN.match(digest) is None:
        raise HotsetError(
            f"cache key {key!r}: content hash must be 16 lowercase hex digits (xxh3-64)"
        )
    return key if isinstance(key, CacheKey) else CacheKey(sample_id, digest)


def check_payload(key: CacheKey, data: object, *, verify: bool) -> bytes:
    """Accept bytes-like payloads; with ``verify`` also prove they match the key's hash."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise HotsetError(
            f"cache put {tuple(key)!r}: data must be bytes, got {type(data).__name__}"
        )
    payload = bytes(data)
    if verify:
        verify_payload(key, payload, where="put")
    return payload


def verify_payload(key: CacheKey, data: bytes, *, where: str) -> None:
    """Raise :class:`IntegrityError` when ``data`` does not hash to ``key.content_hash``."""
    actual = content_hash(data)
    if actual != key.content_hash:
        raise IntegrityError(
            f"cache {where}: sample {key.sample_id} should hash to {key.content_hash} "
            f"but its {len(data)} bytes hash to {actual}"
        )


class PutRefused(HotsetRuntimeError):
    """A put the store turned away because it would pass ``capacity_bytes``.

    Its own class so that a caller tells a full budget (which the loader skips
    and counts where the store may hold bytes it did not put: a Redis namespace
    others write to, or whose server evicts) from any other
    :class:`~hotset.errors.HotsetError` a put raises (a bad key, a missing
    capability), which is always a bug to report.
    """

    def __init__(self, *, items: int, adding: int, used: int, capacity: int) -> None:
        super().__init__(
            f"cache put refused: {items} item(s) adding {adding} bytes ({format_bytes(adding)}) "
            f"to {used} bytes used would exceed capacity_bytes={capacity} "
            f"({format_bytes(capacity)})"
        )
        self.items, self.adding, self.used, self.capacity = items, adding, used, capacity


def refuse_over_budget(*, items: int, adding: int, used: int, capacity: int) -> None:
    """Raise the one over-budget error every backend uses (names the sizes exactly)."""
    raise PutRefused(items=items, adding=adding, used=used, capacity=capacity)


@dataclass
class CacheStats:
    """Totals of one cache handle since it was opened (per process, not global).

    ``gets`` counts keys asked for, so ``gets == hits + misses``; ``bytes_served``
    counts hit bytes. ``puts``/``bytes_written`` count entries actually stored (a
    put of an entry already present stores nothing); ``deletes`` counts entries
    actually removed. ``resyncs`` counts the times a Redis handle set its
    namespace's byte counter to the bytes its entries hold, and
    ``resync_bytes`` how far off the counter was, summed (a server that evicts
    leaves it too high; see :meth:`~hotset.cachestore.redis_store.RedisCache.resync`).
    """

    gets: int = 0
    hits: int = 0
    misses: int = 0
    bytes_served: int = 0
    puts: int = 0
    bytes_written: int = 0
    deletes: int = 0
    resyncs: int = 0
    resync_bytes: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class CacheStatsCounter:
    """Thread-safe accumulation of :class:`CacheStats` (loaders call from threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stats = CacheStats()

    def add_gets(self, hits: int, misses: int, bytes_served: int) -> None:
        with self._lock:
            self._stats.gets += hits + misses
            self._stats.hits += hits
            self._stats.misses += misses
            self._stats.bytes_served += bytes_served

    def add_puts(self, count: int, nbytes: int) -> None:
        with self._lock:
            self._stats.puts += count
            self._stats.bytes_written += nbytes

    def add_deletes(self, count: int) -> None:
        with self._lock:
            self._stats.deletes += count

    def add_resync(self, drift: int) -> None:
        with self._lock:
            self._stats.resyncs += 1
            self._stats.resync_bytes += abs(drift)

    def snapshot(self) -> CacheStats:
        with self._lock:
            return CacheStats(**asdict(self._stats))


@runtime_checkable
class CacheStore(Protocol):
    """Bytes by :class:`CacheKey`, bounded by ``capacity_bytes`` of payload.

    Batched on purpose: a loader asks for a whole batch at once so that networked
    backends pay one round trip per batch, not one per sample.
    """

    @property
    def capacity_bytes(self) -> int: ...

    def get_many(self, keys: Sequence[CacheKey]) -> list[bytes | None]:
        """The bytes of each key, or ``None`` for a miss (absent or other content)."""
        ...

    def put_many(self, items: Sequence[tuple[CacheKey, bytes]]) -> None:
        """Store every item or none: raises HotsetError if the batch breaks the budget."""
        ...

    def delete_many(self, keys: Sequence[CacheKey]) -> None: ...

    def contains(self, key: CacheKey) -> bool: ...

    def used_bytes(self) -> int: ...

    def clear(self) -> None: ...

    def drop(self) -> None:
        """Remove every trace of this cache's namespace, bookkeeping included.

        For a namespace private to one job, at its end: a shared server must not
        collect one abandoned namespace per run.
        """
        ...

    def close(self) -> None: ...

    def stats(self) -> CacheStats: ...
