"""The chunk a shared namespace's jobs load now (Quiver's getCurrentChunk), on a real Redis."""

from __future__ import annotations

from pathlib import Path

import pytest

from hotset.cachestore.redis_store import RedisCache
from hotset.coordination.shared_cycle import SharedCycle, parse_step
from hotset.errors import HotsetError
from redis_support import RedisCluster, RedisProcess, start_redis


def _cycle(spec: str | list[str], namespace: str = "sweep@x", **kw: float) -> SharedCycle:
    return SharedCycle(RedisCache(spec, namespace=namespace, capacity_bytes=10_000), **kw)


def test_nothing_loaded_reads_none_and_the_largest_step_wins(redis_url: str) -> None:
    a, b = _cycle(redis_url), _cycle(redis_url)
    assert a.current() is None  # the paper's manager: no chunk cached
    a.publish(4)
    assert b.current() == 4
    b.publish(9)
    a.publish(6)  # a job behind does not pull the current chunk back
    assert a.current() == b.current() == 9
    assert _cycle(redis_url, namespace="other@x").current() is None  # per namespace


def test_the_step_expires_when_no_job_publishes(redis_server: RedisProcess) -> None:
    redis_server.client().flushall()
    cycle = _cycle(redis_server.url, ttl_s=30)
    cycle.publish(3)
    ttl = redis_server.client().ttl(cycle.key)
    assert 0 < ttl <= 30
    assert not cycle.key.startswith("hotset:")  # beside the namespace: its scans miss it


def test_what_the_server_holds_is_read_as_a_number_or_as_nothing(
    redis_server: RedisProcess,
) -> None:
    redis_server.client().flushall()
    cycle = _cycle(redis_server.url)
    for garbage in (b"-1", b"1e3", b"3 ", b"\x80\x04K\x01.", b"9" * 19, b"9" * 13):
        redis_server.client().set(cycle.key, garbage)
        assert cycle.current() is None, garbage
    cycle.publish(2)  # a garbled value is replaced by the next publish
    assert cycle.current() == 2
    assert parse_step(b"17") == 17 and parse_step(None) is None


def test_over_a_cluster(cluster: RedisCluster) -> None:
    cluster.flushall()
    cycle = _cycle(cluster.node_list)
    cycle.publish(5)
    assert _cycle(cluster.node_list).current() == 5


def test_a_dead_server_reads_as_nothing_loaded(tmp_path: Path) -> None:
    server = start_redis(tmp_path)
    try:
        cycle = _cycle(f"{server.url}?socket_timeout=0.3")
        cycle.publish(1)
        server.process.kill()
        server.process.wait(timeout=5)
        assert cycle.current() is None
        cycle.publish(2)  # skipped, not raised: where a job starts changes only its reads
        assert cycle.failures == 2
    finally:
        server.stop()


def test_bad_arguments_are_named(redis_url: str) -> None:
    with pytest.raises(HotsetError, match="Redis namespace"):
        SharedCycle(object())  # type: ignore[arg-type]
    with pytest.raises(HotsetError, match="ttl_s"):
        _cycle(redis_url, ttl_s=0)
    for bad in (-1, True, 2.0, 10**18):
        with pytest.raises(HotsetError, match="chunk cycle step"):
            _cycle(redis_url).publish(bad)  # type: ignore[arg-type]


def test_a_step_no_publish_wrote_is_not_joined(redis_server: RedisProcess) -> None:
    """A value without the expiry a publish sets (or a longer one), or of more digits
    than a join may take, reads as nothing; a joined 10**18 - 1 made the job's next
    publish raise, two chunks on."""
    client = redis_server.client()
    client.flushall()
    cycle = _cycle(redis_server.url, ttl_s=30)
    client.set(cycle.key, b"7")  # no expiry
    assert cycle.current() is None and client.exists(cycle.key) == 0
    client.set(cycle.key, b"7", ex=3600)  # longer than any publish's
    assert cycle.current() is None
    client.set(cycle.key, b"9" * 18, ex=10)
    assert cycle.current() is None
    cycle.publish(3)  # and a publish replaces it
    assert cycle.current() == 3
    client.hset(cycle.key + "x", "a", "b")
    client.rename(cycle.key + "x", cycle.key)  # another type
    assert cycle.current() is None
    cycle.publish(4)
    assert cycle.current() == 4
