"""Records other jobs write, on a real Redis: leases, bounded reads, and what is planted.

Every record kind another job can write (probe board, job importance) goes through
:class:`~hotset.coordination.leased.LeasedRecords`; each test plants what a hostile
or broken client could (with a plain redis client, around the scripts) and checks
that a read raises nothing, returns at most its bound, and cleans up after it.
"""

from __future__ import annotations

import json
import time

import pytest

from hotset.cachestore.bounded_json import load_json, nesting
from hotset.cachestore.redis_store import RedisCache
from hotset.coordination.leased import BUDGET, LeasedRecords
from hotset.errors import HotsetError
from redis_support import RedisCluster, RedisProcess

TAG = "hotset-test:{sweep@x}"
KEYS = [f"{TAG}:records", f"{TAG}:leases", f"{TAG}:sweep"]


def _records(spec: str | list[str], **kw: int) -> LeasedRecords:
    cache = RedisCache(spec, namespace="sweep@x", capacity_bytes=1000)
    bounds = {"max_read": 4, "max_bytes": 64} | kw
    return LeasedRecords(cache, KEYS, ttl_s=60, **bounds)


def test_a_publish_leases_and_a_read_returns_the_latest_leases_first(redis_url: str) -> None:
    leased = _records(redis_url, max_read=2)
    for job in ("a", "b", "c"):
        leased.publish(job, f"record of {job}")
    got = leased.read()
    assert len(got.records) == 2  # the bound, though three are live
    assert abs(got.now - time.time()) < 5  # the server's clock
    leased.withdraw("a")
    assert {f for f, _ in leased.read().records} == {b"b", b"c"}


def test_expired_unleased_and_future_dated_records_are_removed(
    redis_server: RedisProcess,
) -> None:
    client = redis_server.client()
    client.flushall()
    leased = _records(redis_server.url)
    leased.publish("live", "ok")
    now = time.time()
    planted = {"expired": now - 10, "future": now + 10 * 60 * 60}
    for job, lease in planted.items():
        client.hset(KEYS[0], job, "x")
        client.zadd(KEYS[1], {job: lease})
    client.hset(KEYS[0], "unleased", "x")  # written around the scripts: no lease at all
    assert [f for f, _ in leased.read().records] == [b"live"]
    assert leased.aged == 3
    assert client.hkeys(KEYS[0]) == [b"live"] and client.zcard(KEYS[1]) == 1


def test_a_record_of_a_size_no_record_has_is_dropped_unread(
    redis_server: RedisProcess,
) -> None:
    client = redis_server.client()
    client.flushall()
    leased = _records(redis_server.url)
    leased.publish("ok", "x" * 8)
    for job, value in (("huge", b"x" * (1 << 20)), ("empty", b"")):
        client.hset(KEYS[0], job, value)
        client.zadd(KEYS[1], {job: time.time() + 30})
    client.zadd(KEYS[1], {"lease-only": time.time() + 30})  # a lease without a record
    assert leased.read().records == [(b"ok", b"x" * 8)]
    assert leased.dropped == 3
    assert leased.read(exact_bytes=9).records == []  # another size: dropped as well
    with pytest.raises(HotsetError, match="exceeds 64"):
        leased.publish("big", "x" * 65)


def test_keys_of_another_type_are_replaced_not_raised(redis_server: RedisProcess) -> None:
    client = redis_server.client()
    client.flushall()
    leased = _records(redis_server.url)
    client.set(KEYS[0], "not a hash")
    client.hset(KEYS[1], "not", "a zset")
    client.rpush(KEYS[2], "not a cursor")
    assert leased.read().records == []
    leased.publish("a", "ok")
    client.set(KEYS[2], "99999999999999999999999")  # a cursor no scan gave: starts over
    assert leased.read().records == [(b"a", b"ok")]


def test_100000_planted_records_cost_a_read_a_bounded_step(redis_server: RedisProcess) -> None:
    """Planted unleased, and leased but oversized: each read removes at most BUDGET of
    each kind and returns within its bound; the live record is found every time."""
    client = redis_server.client()
    client.flushall()
    leased = _records(redis_server.url, max_read=4)
    leased.publish("live", "ok")
    pipe = client.pipeline(transaction=False)
    for i in range(100_000):
        pipe.hset(KEYS[0], f"planted-{i}", "x" * (100 if i % 2 else 8))
        if i % 2:
            pipe.zadd(KEYS[1], {f"planted-{i}": time.time() + 30})
    pipe.execute()
    took = []
    for _ in range(3):
        start = time.perf_counter()
        got = leased.read()
        took.append(time.perf_counter() - start)
        assert (b"live", b"ok") in got.records and len(got.records) <= 4
    assert client.hlen(KEYS[0]) < 100_001  # the sweep made progress
    assert max(took) < 1.0, took  # one step of BUDGET fields, not 100,000
    assert leased.aged + leased.dropped <= 3 * 2 * BUDGET


def test_over_a_cluster(cluster: RedisCluster) -> None:
    leased = _records(cluster.node_list)
    leased.publish("a", "ok")
    assert leased.read().records == [(b"a", b"ok")]
    assert leased.drop(b"a", b"ok")
    assert leased.read().records == []


def test_nesting_is_counted_without_recursion_and_bounds_the_parse() -> None:
    deep = b"[" * 2048 + b"]" * 2048  # 4 kB: json.loads alone raises RecursionError
    with pytest.raises(RecursionError):
        json.loads(deep)
    assert nesting(deep) == 2048
    assert load_json(deep, max_bytes=4096, max_depth=2) is None
    assert nesting(b'{"a": "[[[[", "b": [1]}') == 2  # brackets in strings do not nest
    assert load_json(b'{"a": [1]}', max_bytes=64, max_depth=2) == {"a": [1]}
    for bad in (b'{"a": NaN}', b'{"a": Infinity}', b"\xff", b"{", b"x" * 65, 3):
        assert load_json(bad, max_bytes=64, max_depth=2) is None, bad
