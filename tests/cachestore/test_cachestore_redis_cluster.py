"""RedisCache against a real three-master Redis Cluster on loopback ports."""

from __future__ import annotations

import time

import pytest
from cachestore_support import SendCounter, command_calls, item, payload

from hotset.cachestore import CacheKey, content_hash
from hotset.cachestore.redis_store import CacheUnavailable, RedisCache
from hotset.errors import HotsetError
from redis_support import RedisCluster


@pytest.fixture
def cache(cluster: RedisCluster) -> RedisCache:
    c = RedisCache(cluster.url, namespace="ds", capacity_bytes=100_000)
    yield c
    c.close()


def _entries_per_node(cluster: RedisCluster) -> list[int]:
    return [
        sum(
            1 for k in node.client().scan_iter(match="hotset:ds:*") if not k.endswith(b"used-bytes")
        )
        for node in cluster.nodes
    ]


def test_entries_spread_over_every_master_and_read_back_exactly(
    cache: RedisCache, cluster: RedisCluster
) -> None:
    assert cache.is_cluster
    items = [item(i, payload(i, 50 + i)) for i in range(60)]
    cache.put_many(items)
    per_node = _entries_per_node(cluster)
    assert sum(per_node) == 60
    assert all(n > 0 for n in per_node), f"keys not spread over the masters: {per_node}"
    assert cache.get_many([k for k, _ in items]) == [d for _, d in items]
    assert cache.used_bytes() == sum(len(d) for _, d in items)


def test_a_batch_is_one_round_trip_per_node(
    cache: RedisCache, cluster: RedisCluster, send_counter: SendCounter
) -> None:
    items = [item(i, payload(i, 64)) for i in range(90)]
    assert cache.get_many([k for k, _ in items]) == [None] * 90  # opens a connection per node
    send_counter.reset()
    cache.put_many(items)
    # The reservation on the counter's node, then one SET round trip per node.
    assert send_counter.total == len(cluster.nodes) + 1, send_counter.by_port
    for node in cluster.nodes:
        node.client().config_resetstat()
    send_counter.reset()
    assert cache.get_many([k for k, _ in items]) == [d for _, d in items]
    assert sorted(send_counter.by_port) == sorted(n.port for n in cluster.nodes)
    assert all(count == 1 for count in send_counter.by_port.values()), send_counter.by_port
    assert sum(command_calls(n.client(), "get") for n in cluster.nodes) == 90

    send_counter.reset()
    cache.delete_many([k for k, _ in items[:45]])
    # One pipelined round trip per node, plus the counter update on its node.
    assert send_counter.total == len(cluster.nodes) + 1, send_counter.by_port
    assert cache.used_bytes() == 45 * 64


def test_budget_is_enforced_across_the_cluster(cluster: RedisCluster) -> None:
    a = RedisCache(cluster.url, namespace="ds", capacity_bytes=1000)
    b = RedisCache(cluster.node_list, namespace="ds", capacity_bytes=1000)
    a.put_many([item(i, payload(i, 100)) for i in range(9)])
    assert b.used_bytes() == 900
    with pytest.raises(HotsetError, match=r"adding 200 bytes \(200 B\) to 900 bytes used"):
        b.put_many([item(20, payload(20, 100)), item(21, payload(21, 100))])
    assert b.used_bytes() == 900
    b.put_many([item(20, payload(20, 100))])
    assert a.used_bytes() == 1000


def test_clear_empties_every_master(cache: RedisCache, cluster: RedisCluster) -> None:
    cache.put_many([item(i, payload(i, 10)) for i in range(30)])
    cache.clear()
    assert _entries_per_node(cluster) == [0, 0, 0]
    assert cache.used_bytes() == 0
    assert cache.get_many([CacheKey(0, content_hash(payload(0, 10)))]) == [None]


def test_unreachable_cluster_fails_fast() -> None:
    with pytest.raises(HotsetError, match=r"^cannot reach redis at redis\+cluster://127"):
        RedisCache("redis+cluster://127.0.0.1:1,127.0.0.1:2", namespace="x", capacity_bytes=1)


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("redis+cluster://127.0.0.1:7000/2", "only database 0"),
        ("redis+cluster://127.0.0.1", "expected host:port"),
        ("redis+cluster://", "no startup nodes"),
        (["127.0.0.1:notaport"], "expected host:port"),
    ],
)
def test_bad_cluster_specs_are_named(spec: str | list[str], match: str) -> None:
    with pytest.raises(HotsetError, match=match):
        RedisCache(spec, namespace="x", capacity_bytes=1)


def _stored_and_counted(cluster: RedisCluster, namespace: str) -> tuple[int, int]:
    """(STRLEN of every entry on every master, the counter's value)."""
    counter = f"hotset:{namespace}:used-bytes".encode()
    stored, counted = 0, 0
    for node in cluster.nodes:
        client = node.client()
        for key in client.scan_iter(match=f"hotset:{namespace}:*"):
            if key == counter:
                counted = int(client.get(key) or 0)
            else:
                stored += int(client.strlen(key))
    return stored, counted


def test_writes_a_master_refuses_are_refunded(cache: RedisCache, cluster: RedisCluster) -> None:
    cache.put_many([item(i, payload(i, 100)) for i in range(10)])
    full = cluster.nodes[0].client()
    full.config_set("maxmemory-policy", "noeviction")
    full.config_set("maxmemory", 1)  # this master refuses every write (OOM)
    try:
        with pytest.raises(CacheUnavailable, match="maxmemory"):
            cache.put_many([item(i, payload(i, 100)) for i in range(10, 60)])
    finally:
        full.config_set("maxmemory", 0)
    stored, counted = _stored_and_counted(cluster, "ds")
    assert 1000 < stored < 6000 and counted == stored == cache.used_bytes()


def test_a_counter_left_high_is_resynced_before_refusing(
    cache: RedisCache, cluster: RedisCluster
) -> None:
    small = RedisCache(cluster.url, namespace="ds", capacity_bytes=1000)
    small.put_many([item(i, payload(i, 100)) for i in range(5)])
    # A reservation whose reply was lost, in some other client: counted, never written.
    cache.client.incrby("hotset:ds:used-bytes", 500)
    small.put_many([item(i, payload(i, 100)) for i in range(5, 10)])  # fits: 500 are free
    assert _stored_and_counted(cluster, "ds") == (1000, 1000)
    with pytest.raises(HotsetError, match="to 1000 bytes used"):
        small.put_many([item(10, payload(10, 1))])
    small.close()


def test_a_lost_reply_marks_the_counter_stale_until_resynced(cluster: RedisCluster) -> None:
    cache = RedisCache(cluster.url, namespace="ds", capacity_bytes=10_000, socket_timeout=0.1)
    cache.put_many([item(i, payload(i, 100)) for i in range(10)])
    for node in cluster.nodes:
        node.client().execute_command("CLIENT", "PAUSE", 400, "ALL")
    with pytest.raises(CacheUnavailable):
        cache.put_many([item(i, payload(i, 100)) for i in range(10, 20)])
    time.sleep(0.5)
    cache.delete_many([item(0, payload(0, 100))[0]])  # resyncs first
    stored, counted = _stored_and_counted(cluster, "ds")
    assert counted == stored == cache.used_bytes()
    assert cache.resync() == stored
    cache.close()
