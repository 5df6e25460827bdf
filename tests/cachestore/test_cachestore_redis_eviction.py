"""A server that evicts keys on its own is found at start and warned about, once."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from cachestore_support import item, payload

from hotset.cachestore import redis_eviction
from hotset.cachestore.redis_eviction import eviction_warning, warn_if_evicting
from hotset.cachestore.redis_store import RedisCache
from hotset.cachestore.session import CacheSession
from redis_support import RedisCluster, RedisProcess, start_evicting_redis, start_redis


@pytest.fixture(autouse=True)
def fresh_memory() -> Iterator[None]:
    """Each test sees the first warning for its server (the module warns once per server)."""
    redis_eviction._warned.clear()
    yield
    redis_eviction._warned.clear()


@pytest.fixture
def evicting(tmp_path: Path) -> Iterator[RedisProcess]:
    server = start_evicting_redis(tmp_path)
    yield server
    server.stop()


def _session(url: str) -> CacheSession:
    return CacheSession.open(
        url, capacity_bytes=5_000_000, n_slots=10, dataset_id="d" * 16, share=None, rank=0
    )


def test_a_loader_session_warns_once_naming_the_policy_and_the_fix(evicting: RedisProcess) -> None:
    with pytest.warns(RuntimeWarning) as caught:
        first = _session(evicting.url)
        second = _session(evicting.url)  # a second loader on the same server: no repeat
    texts = [str(w.message) for w in caught if "evicts keys" in str(w.message)]
    assert len(texts) == 1
    assert "maxmemory-policy allkeys-lru" in texts[0]
    assert "maxmemory 3145728 bytes" in texts[0]
    assert "CONFIG SET maxmemory-policy noeviction" in texts[0]
    assert f"127.0.0.1:{evicting.port}" in texts[0]
    first.close()
    second.close()


def test_a_server_that_does_not_evict_is_not_warned_about(redis_server: RedisProcess) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        session = _session(redis_server.url)
    session.close()


def test_a_policy_without_a_memory_limit_never_evicts(tmp_path: Path) -> None:
    server = start_redis(tmp_path, "--maxmemory-policy", "allkeys-lru")  # maxmemory 0
    try:
        assert warn_if_evicting(server.client(), server.url) is None
    finally:
        server.stop()


def test_a_server_refusing_config_is_asked_through_info(tmp_path: Path) -> None:
    """Managed servers (ElastiCache, Memorystore) rename or refuse CONFIG."""
    server = start_evicting_redis(tmp_path, extra=("--rename-command", "CONFIG", ""))
    try:
        with pytest.warns(RuntimeWarning, match="maxmemory-policy allkeys-lru"):
            assert warn_if_evicting(server.client(), server.url) is not None
    finally:
        server.stop()


def test_a_server_refusing_config_and_info_is_not_an_error(tmp_path: Path) -> None:
    server = start_evicting_redis(
        tmp_path,
        extra=("--rename-command", "CONFIG", "", "--rename-command", "INFO", ""),
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert warn_if_evicting(server.client(), server.url) is None
            session = _session(server.url)  # and a loader still opens its cache
        session.cache.put_many([item(0, payload(0, 100))])
        session.close()
    finally:
        server.stop()


def test_volatile_policies_are_named_with_what_they_can_take(tmp_path: Path) -> None:
    server = start_evicting_redis(tmp_path, policy="volatile-lru")
    try:
        with pytest.warns(RuntimeWarning, match="maxmemory-policy volatile-lru") as caught:
            warn_if_evicting(server.client(), server.url)
        assert "entries have no expiry" in str(caught[0].message)
    finally:
        server.stop()


def test_every_master_of_a_cluster_is_asked(redis_cluster: RedisCluster) -> None:
    node = redis_cluster.nodes[1].client()
    node.config_set("maxmemory", 100 * 2**20)
    node.config_set("maxmemory-policy", "allkeys-lfu")
    try:
        cache = RedisCache(redis_cluster.url, namespace="evict", capacity_bytes=1000)
        with pytest.warns(RuntimeWarning, match="maxmemory-policy allkeys-lfu"):
            warn_if_evicting(cache.client, cache.where)
        cache.close()
    finally:
        node.config_set("maxmemory-policy", "noeviction")
        node.config_set("maxmemory", 0)


def test_the_warning_for_several_answers_names_an_evicting_one() -> None:
    text = eviction_warning("x", [("noeviction", 0), ("allkeys-random", 10), ("noeviction", 5)])
    assert text is not None and "allkeys-random" in text
    assert eviction_warning("x", [("noeviction", 10), ("allkeys-lru", 0)]) is None
    assert eviction_warning("x", []) is None
