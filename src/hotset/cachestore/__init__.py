"""Where cached bytes live: shared memory across DataLoader workers, Redis, Redis Cluster.

Stores move bytes and decide nothing; the (pure) policy decides admissions and
evictions. Every store refuses a put that would exceed its byte budget.
"""

from hotset.cachestore.base import (
    CacheKey,
    CacheStats,
    CacheStore,
    check_cache_key,
    content_hash,
)
from hotset.cachestore.redis_store import RedisCache
from hotset.cachestore.registry import open_cache
from hotset.cachestore.shm import SharedMemoryCache, index_overhead_bytes

__all__ = [
    "CacheKey",
    "CacheStats",
    "CacheStore",
    "RedisCache",
    "SharedMemoryCache",
    "check_cache_key",
    "content_hash",
    "index_overhead_bytes",
    "open_cache",
]
