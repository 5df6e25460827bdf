"""open_cache: one spec string to a cache store, unknown specs named."""

from __future__ import annotations

import pytest
from cachestore_support import item, payload

from hotset.cachestore import CacheStore, open_cache
from hotset.cachestore.redis_store import RedisCache
from hotset.cachestore.shm import SharedMemoryCache
from hotset.errors import HotsetError
from redis_support import RedisCluster


@pytest.mark.parametrize("spec", ["memory", "shm", " SHM "])
def test_embedded_specs_open_shared_memory(spec: str) -> None:
    cache = open_cache(spec, capacity_bytes="2kb", namespace="ds", n_slots=10, verify=True)
    try:
        assert isinstance(cache, SharedMemoryCache) and isinstance(cache, CacheStore)
        assert cache.capacity_bytes == 2000 and cache.n_slots == 10
        entry = item(3, payload(3, 100))
        cache.put_many([entry])
        assert cache.get_many([entry[0]]) == [entry[1]]
    finally:
        cache.close()


def test_redis_url_opens_redis(redis_url: str) -> None:
    cache = open_cache(redis_url, capacity_bytes=1000, namespace="reg", n_slots=10)
    assert isinstance(cache, RedisCache) and not cache.is_cluster
    assert cache.namespace == "reg" and cache.capacity_bytes == 1000
    entry = item(1, payload(1, 10))
    cache.put_many([entry])
    assert cache.get_many([entry[0]]) == [entry[1]]
    cache.close()


def test_cluster_url_and_node_list_open_a_cluster(cluster: RedisCluster) -> None:
    for spec in (cluster.url, cluster.node_list):
        cache = open_cache(spec, capacity_bytes=1000, namespace="reg", n_slots=10)
        assert isinstance(cache, RedisCache) and cache.is_cluster
        cache.close()


@pytest.mark.parametrize("spec", ["s3://bucket", "disk", "", "memcached://h:1"])
def test_unknown_spec_is_named(spec: str) -> None:
    with pytest.raises(HotsetError, match=f"unknown cache {spec!r}"):
        open_cache(spec, capacity_bytes=10, namespace="x", n_slots=1)


def test_bad_capacity_is_named() -> None:
    with pytest.raises(HotsetError, match="capacity_bytes"):
        open_cache("memory", capacity_bytes="much", namespace="x", n_slots=1)


def test_a_plug_in_backend_opens_its_own_scheme_and_cannot_take_a_built_in() -> None:
    from hotset.cachestore import registry

    seen: list[tuple[object, registry.CacheRequest]] = []

    def opener(spec: object, request: registry.CacheRequest) -> CacheStore:
        seen.append((spec, request))
        return SharedMemoryCache(request.capacity_bytes, n_slots=request.n_slots)

    before = registry.BACKENDS.snapshot()
    try:
        with pytest.raises(HotsetError, match="unknown cache 'myc://x'"):
            open_cache("myc://x", capacity_bytes=1000, namespace="ns", n_slots=4)
        registry.register_backend("myc", opener)
        cache = open_cache("myc://x", capacity_bytes="2kb", namespace="ns", n_slots=4)
        try:
            assert registry.parse_cache_spec("myc://anything") == "myc"
            assert seen == [("myc://x", registry.CacheRequest(2000, "ns", 4))]
            assert cache.capacity_bytes == 2000
        finally:
            cache.close()
        with pytest.raises(HotsetError, match="cache backend 'redis' is already registered"):
            registry.register_backend("redis", opener)
        with pytest.raises(HotsetError, match="bad cache scheme 'my c'"):
            registry.register_backend("my c", opener)
    finally:
        registry.BACKENDS.restore(before)
    with pytest.raises(HotsetError, match="unknown cache 'myc://x'"):
        open_cache("myc://x", capacity_bytes=1000, namespace="ns", n_slots=4)
