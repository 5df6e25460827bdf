"""The probes a shared namespace's jobs published (Quiver §5.3), on a real Redis:
leases that age out, records parsed as plain JSON and checked, never evaluated."""

from __future__ import annotations

import json
import pickle
import time
from pathlib import Path
from typing import Any

import pytest

from hotset.cachestore.redis_store import RedisCache
from hotset.coordination.probe_board import ProbeBoard, parse_record
from hotset.errors import HotsetError
from hotset.policies.quiver.placement import from_record
from redis_support import RedisCluster, RedisProcess, start_redis


def _board(spec: str | list[str], namespace: str = "sweep@x", **kw: float) -> ProbeBoard:
    cache = RedisCache(spec, namespace=namespace, capacity_bytes=10_000)
    return ProbeBoard(cache, check=from_record, **kw)


def _record(job: str, t_miss: float = 0.3, t_hit: float = 0.1) -> dict[str, Any]:
    return {
        "job": job,
        "dataset": "d",
        "t_miss": t_miss,
        "t_hit": t_hit,
        "gpus": 1,
        "size_bytes": 1000,
        "chunk_bytes": 100,
    }


def test_every_job_reads_every_record_and_a_withdrawn_one_is_gone(redis_url: str) -> None:
    a, b = _board(redis_url), _board(redis_url)
    assert a.read() == []
    a.publish(_record("a"))
    b.publish(_record("b", 0.5, 0.5))
    assert [r["job"] for r in a.read()] == ["a", "b"]
    assert b.read()[1] == _record("b", 0.5, 0.5)
    a.publish(_record("a", 0.9, 0.1))  # a re-publish replaces the job's record
    assert a.read()[0]["t_miss"] == 0.9
    a.withdraw("a")
    assert [r["job"] for r in b.read()] == ["b"]
    assert _board(redis_url, namespace="other@x").read() == []  # per namespace


def test_a_dead_jobs_record_ages_out_at_its_lease(redis_server: RedisProcess) -> None:
    redis_server.client().flushall()
    live, dead = _board(redis_server.url, ttl_s=2), _board(redis_server.url, ttl_s=2)
    dead.publish(_record("dead"))
    live.publish(_record("live"))
    assert len(live.read()) == 2
    time.sleep(1.5)
    live.publish(_record("live"))  # a live job renews its lease; the dead one does not
    time.sleep(1.6)  # the server's clock counts whole seconds: past dead's lease now
    assert [r["job"] for r in live.read()] == ["live"]
    assert redis_server.client().hlen(live.keys[0]) == 1  # its record was removed too
    assert not live.keys[0].startswith("hotset:")  # beside the namespace: scans miss it


@pytest.mark.parametrize(
    "garbage",
    [
        pickle.dumps(_record("j")),
        b"\xff\xfe",
        b"[1, 2]",
        json.dumps(_record("j") | {"t_miss": "0.3"}).encode(),
        json.dumps(_record("j") | {"gpus": 0}).encode(),
        b'{"job": "j", "dataset": "d", "t_miss": NaN, "t_hit": 1, "gpus": 1, '
        b'"size_bytes": 1, "chunk_bytes": 1}',
        json.dumps(_record("other")).encode(),  # filed under another job's id
        b"{" + b" " * 5000 + b"}",
    ],
)
def test_what_is_not_a_record_is_skipped_and_counted(
    redis_server: RedisProcess, garbage: bytes
) -> None:
    redis_server.client().flushall()
    board = _board(redis_server.url)
    board.publish(_record("ok"))
    redis_server.client().hset(board.keys[0], "j", garbage)
    redis_server.client().zadd(board.keys[1], {"j": time.time() + 600})
    assert [r["job"] for r in board.read()] == ["ok"]
    assert board.stats()["board_garbled"] == 1
    assert parse_record(json.dumps(_record("j")), from_record) == _record("j")


def test_only_a_well_formed_record_is_published(redis_url: str) -> None:
    board = _board(redis_url)
    with pytest.raises(HotsetError, match="finite"):
        board.publish(_record("a", t_miss=float("nan")))
    with pytest.raises(HotsetError, match="lacks"):
        board.publish({"job": "a"})
    with pytest.raises(HotsetError, match="Redis namespace"):
        ProbeBoard(object())  # type: ignore[arg-type]
    with pytest.raises(HotsetError, match="ttl_s"):
        _board(redis_url, ttl_s=0)


def test_over_a_cluster(redis_cluster: RedisCluster) -> None:
    redis_cluster.flushall()
    _board(redis_cluster.node_list).publish(_record("a"))
    assert [r["job"] for r in _board(redis_cluster.node_list).read()] == ["a"]


def test_a_dead_server_reads_as_an_empty_board(tmp_path: Path) -> None:
    server = start_redis(tmp_path)
    try:
        board = _board(f"{server.url}?socket_timeout=0.3")
        board.publish(_record("a"))
        server.process.kill()
        server.process.wait(timeout=5)
        assert board.read() == []
        board.publish(_record("a"))  # skipped: the job places by its own probe
        board.withdraw("a")
        assert board.failures == 3
    finally:
        server.stop()


def _hostile() -> dict[str, tuple[bytes, float | None]]:
    """What another client can plant on the board: (value, lease end; None: no lease)."""
    leased = time.time() + 300
    record = _record("j")
    return {
        "deep": (b"[" * 2048 + b"]" * 2048, leased),  # a RecursionError for json.loads
        "huge": (json.dumps(record | {"pad": "x" * (1 << 20)}).encode(), leased),
        "claims-1e30-bytes": (json.dumps(record | {"size_bytes": 10**30}).encode(), leased),
        "chunk-above-size": (json.dumps(record | {"chunk_bytes": 2000}).encode(), leased),
        "infinite": (json.dumps(record).replace("0.3", "1e999").encode(), leased),
        "negative": (json.dumps(record | {"t_hit": -1.0}).encode(), leased),
        "gpus-1e9": (json.dumps(record | {"gpus": 10**9}).encode(), leased),
        "unleased": (json.dumps(record).encode(), None),
        "future-dated": (json.dumps(record).encode(), time.time() + 30 * 24 * 3600),
    }


@pytest.mark.parametrize("kind", list(_hostile()))
def test_a_hostile_record_is_skipped_counted_and_removed_never_raised(
    redis_server: RedisProcess, kind: str
) -> None:
    client = redis_server.client()
    client.flushall()
    board = _board(redis_server.url)
    board.publish(_record("ok"))
    value, lease = _hostile()[kind]
    client.hset(board.keys[0], "j", value)
    if lease is not None:
        client.zadd(board.keys[1], {"j": lease})
    assert [r["job"] for r in board.read()] == ["ok"]
    stats = board.stats()
    assert stats["board_garbled"] + stats["board_aged"] == 1, stats
    assert client.hkeys(board.keys[0]) == [b"ok"]  # the planted record is gone


def test_a_read_returns_at_most_max_records_of_100000_planted(
    redis_server: RedisProcess,
) -> None:
    from hotset.coordination.probe_board import MAX_RECORDS

    client = redis_server.client()
    client.flushall()
    board = _board(redis_server.url)
    pipe = client.pipeline(transaction=False)
    for i in range(100_000):
        pipe.hset(board.keys[0], f"j{i}", json.dumps(_record(f"j{i}")))
        pipe.zadd(board.keys[1], {f"j{i}": time.time() + 300})
    pipe.execute()
    start = time.perf_counter()
    assert len(board.read()) == MAX_RECORDS
    assert time.perf_counter() - start < 1.0
