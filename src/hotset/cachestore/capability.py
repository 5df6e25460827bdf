"""A content-addressed Redis cache: entries keyed by their BLAKE2b, Quiver's capabilities.

Quiver (FAST'20 §4.3) addresses its shared cache by content hashes, so copies
of one data set in different users' storage share entries, and isolates users
by *digests*: a job can only form the key of content it has read, because the
key is a collision-resistant hash of that content. Here a job's digest
(:mod:`hotset.data.digest`) maps each cache id to its BLAKE2b-256, and
:class:`CapabilityRedisCache` stores entry ``(sample id, xxh3)`` under
``hotset:<namespace>:b2:<BLAKE2b-256 hex>`` -- the capability alone, no sample id
and no file name. So:

* two jobs whose data sets hold the same bytes under other names and ids find
  each other's entries (one entry, counted once against the namespace budget);
* a job without a sample's BLAKE2b cannot name its entry: a key it has no
  capability for (an id its digest does not cover, or an xxh3 other than the one
  the digest was made from) is a :class:`~hotset.errors.HotsetError`, never a
  lookup; a forged or guessed hash finds nothing (2^256 keys);
* a put is proven: its bytes must hash to the capability they go under, else an
  :class:`~hotset.errors.IntegrityError` (a digest made from other bytes), so a
  job through hotset cannot plant other bytes under someone's capability.

Why a subclass of :class:`~hotset.cachestore.redis_store.RedisCache` rather than
a wrapper around any :class:`~hotset.cachestore.base.CacheStore`: every
operation of ``RedisCache`` (its Lua reserve-and-write script that keeps the
namespace's byte counter exact, the cluster path and its repairs, ``clear``,
``drop``, ``resync``, failures mapped to ``CacheUnavailable``, the client the
lease uses) addresses an entry through :meth:`RedisCache.redis_key` only;
overriding that one method reuses all of it, budget included, where a wrapper
could only hand the inner store ``(id, xxh3)`` keys, which are what content
addressing replaces. Duplicate content within one job (two ids, same bytes) is
one entry: evicting one id removes it for the other too, which the loader's
fetcher already repairs (a rebuild read), as it does for entries another job
of a shared namespace deletes.

Over the embedded shared-memory cache a digest is refused
(:func:`hotset.cachestore.registry.open_cache`): that cache is private to one
loader and indexed by id, so there is nobody to share content with.

Limits. Isolation holds between clients that go through hotset. Redis has no
per-key access control: a client with raw access to the server can list keys
(capabilities) and read or write any of them, as it can every namespace today.
The loader re-hashes every hit against the manifest's xxh3 (``verify=True``),
so bytes planted by such a client are dropped and read from storage, not trained
on; a deployment with untrusted users gives them no raw access to the server.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hotset.cachestore.base import CacheKey, check_cache_key
from hotset.cachestore.redis_store import RedisCache
from hotset.data.digest import Digest, capability_of
from hotset.errors import HotsetError, IntegrityError

__all__ = ["CAPABILITY_TAG", "CapabilityRedisCache"]

#: the key segment that marks a content-addressed entry (the hash it is named by)
CAPABILITY_TAG = "b2"


class CapabilityRedisCache(RedisCache):
    """A :class:`RedisCache` whose entries are keyed by the BLAKE2b of their content.

    Takes :class:`CacheKey` ``(cache id, xxh3)`` like every store (the loader's
    fetcher is unchanged) and maps each to its capability through ``digest``.
    """

    def __init__(
        self,
        url_or_urls: str | Sequence[str],
        *,
        digest: Digest,
        namespace: str,
        capacity_bytes: int | str,
        verify: bool = False,
        socket_timeout: float | None = None,
        socket_connect_timeout: float | None = None,
    ) -> None:
        if not isinstance(digest, Digest):
            raise HotsetError(
                f"a content-addressed cache needs a Digest (hotset.data.digest.load_digest), "
                f"got {digest!r:.80}"
            )
        self._digest = digest
        super().__init__(
            url_or_urls,
            namespace=namespace,
            capacity_bytes=capacity_bytes,
            verify=verify,
            socket_timeout=socket_timeout,
            socket_connect_timeout=socket_connect_timeout,
        )

    @property
    def digest(self) -> Digest:
        return self._digest

    def capability(self, key: CacheKey) -> str:
        """``key``'s BLAKE2b-256 (64 hex), or a :class:`HotsetError` when the digest lacks it."""
        checked = check_cache_key(key)
        cap = self._digest.capability_for(checked.sample_id, checked.content_hash)
        if cap is None:
            raise HotsetError(
                f"cache key {tuple(checked)!r}: digest {self._digest.source} holds no capability "
                f"for it (it covers cache ids 0..{len(self._digest) - 1}, each for the bytes "
                "it was made from)"
            )
        return cap

    def redis_key(self, key: CacheKey) -> str:
        """``hotset:<namespace>:b2:<BLAKE2b-256>``: the content's capability, nothing else."""
        return f"{self._prefix}{CAPABILITY_TAG}:{self.capability(key)}"

    def put_many(self, items: Sequence[tuple[CacheKey, bytes]]) -> None:
        """Prove every payload hashes to its capability, then put as :class:`RedisCache` does."""
        for item in items:
            if not isinstance(item, tuple) or len(item) != 2:
                raise HotsetError(f"cache put: items must be (key, bytes) pairs, got {item!r:.80}")
            key, data = item
            cap = self.capability(key)
            if not isinstance(data, bytes | bytearray | memoryview):
                raise HotsetError(
                    f"cache put {tuple(key)!r}: data must be bytes, got {type(data).__name__}"
                )
            actual = capability_of(data)
            if actual != cap:
                raise IntegrityError(
                    f"cache put: id {key[0]}'s {len(data)} bytes hash to BLAKE2b {actual}, but "
                    f"digest {self._digest.source} gives it {cap}: the digest was made from "
                    "other bytes than the data set holds (make it again with `hotset data digest`)"
                )
        super().put_many(items)

    def reopen_options(self) -> dict[str, Any]:
        return {**super().reopen_options(), "digest": self._digest}

    def __repr__(self) -> str:
        return (
            f"CapabilityRedisCache({self._where!r}, namespace={self._namespace!r}, "
            f"capacity_bytes={self._capacity}, digest={self._digest.source!r})"
        )
