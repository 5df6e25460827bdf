"""What a cache must offer for jobs and ranks to coordinate through it.

The probe board, the shared chunk cycle, iCACHE's job entries, the chunk references
and the unit claims all keep small records beside the cached bytes, in the same
server, under the same name, and read them with the same failure rule (a server that
fails is "no other job"). They used to ask whether the cache *was* a
:class:`~hotset.cachestore.redis_store.RedisCache`; they now ask whether it offers
this: a name that every job of the namespace shares, a client that runs scripts, and
a context in which the client's failures become
:class:`~hotset.cachestore.redis_store.CacheUnavailable`. A Redis namespace (one
server or a cluster) offers it; the embedded shared-memory cache, private to one
loader, does not, and nobody can coordinate through it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from hotset.cachestore.base import CacheStore

__all__ = ["SharedCache", "SharedNamespace", "shared_namespace"]


@runtime_checkable
class SharedNamespace(Protocol):
    """A cache whose server other jobs reach under the same namespace."""

    @property
    def namespace(self) -> str:
        """The name every job of the namespace shares (records are keyed under it)."""
        ...

    @property
    def client(self) -> Any:
        """The server's client: scripts, hashes, sorted sets (redis-py's interface)."""
        ...

    def talking(self) -> AbstractContextManager[None]:
        """Around a call to ``client``: its failures raised as ``CacheUnavailable``."""
        ...


def shared_namespace(cache: object) -> SharedNamespace | None:
    """``cache`` where jobs can coordinate through it, else None (a private cache)."""
    return cache if isinstance(cache, SharedNamespace) else None


@runtime_checkable
class SharedCache(SharedNamespace, CacheStore, Protocol):
    """A cache store that is a shared namespace: what coordinated eviction wraps."""
