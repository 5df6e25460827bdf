"""Open a cache store from one spec string, the way users write it on the command line.

``"memory"`` or ``"shm"`` is the embedded default (:class:`SharedMemoryCache`, no
server); ``"redis://host:port/db"`` is one Redis server; ``"redis+cluster://h1:p1,h2:p2"``
(or a list of ``host:port`` startup nodes) is a Redis Cluster. Redis support is
imported only when such a spec is opened, so the default needs no extra package.
"""

from __future__ import annotations

from collections.abc import Sequence

from hotset.cachestore.base import CacheStore
from hotset.errors import HotsetError
from hotset.units import parse_bytes

__all__ = ["EMBEDDED_SPECS", "open_cache"]

EMBEDDED_SPECS = ("memory", "shm")


def open_cache(
    spec: str | Sequence[str],
    *,
    capacity_bytes: int | str,
    namespace: str,
    n_slots: int,
    verify: bool = False,
) -> CacheStore:
    """A cache store for ``spec`` holding at most ``capacity_bytes`` of payload.

    ``namespace`` names the dataset in a shared Redis (keys are
    ``hotset:<namespace>:<hash>``); ``n_slots`` is the dataset size, which sizes
    the shared-memory index. ``verify`` re-hashes every served sample.
    """
    capacity = parse_bytes(capacity_bytes, name="capacity_bytes")
    if isinstance(spec, str) and spec.strip().lower() in EMBEDDED_SPECS:
        from hotset.cachestore.shm import SharedMemoryCache

        return SharedMemoryCache(capacity, n_slots=n_slots, verify=verify)
    from hotset.cachestore.redis_store import is_redis_spec

    if is_redis_spec(spec):
        from hotset.cachestore.redis_store import RedisCache

        return RedisCache(spec, namespace=namespace, capacity_bytes=capacity, verify=verify)
    raise HotsetError(
        f"unknown cache {spec!r}: use 'memory' (or 'shm'), 'redis://host:port/db', "
        "'redis+cluster://host:port,host:port' or a list of cluster nodes"
    )
