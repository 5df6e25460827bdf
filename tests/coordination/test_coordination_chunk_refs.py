"""Coordinated eviction over a real Redis namespace: ref, unref, evict, forced eviction."""

from __future__ import annotations

import pickle
import time
from pathlib import Path

import numpy as np
import pytest

from hotset.cachestore.base import CacheKey, content_hash
from hotset.cachestore.redis_store import RedisCache
from hotset.coordination.chunk_refs import ChunkRefs
from hotset.errors import HotsetError
from redis_support import RedisCluster

# ids 0..3 are chunk 0, 4..7 chunk 1, id 8 belongs to no chunk
GROUPS = np.array([0, 0, 0, 0, 1, 1, 1, 1, -1], dtype=np.int64)


def _items(ids: list[int]) -> list[tuple[CacheKey, bytes]]:
    out = []
    for i in ids:
        data = bytes([i]) * (10 + i)
        out.append((CacheKey(i, content_hash(data)), data))
    return out


def _jobs(spec: str | list[str], force_after_s: float = 30.0) -> tuple[ChunkRefs, ChunkRefs]:
    def one(job: str) -> ChunkRefs:
        cache = RedisCache(spec, namespace="sweep@x", capacity_bytes=10_000)
        return ChunkRefs(cache, GROUPS, force_after_s=force_after_s, job=job)

    return one("a"), one("b")


def _present(job: ChunkRefs, ids: list[int]) -> list[bool]:
    return [v is not None for v in job.get_many([k for k, _ in _items(ids)])]


def test_a_chunk_stays_until_every_job_using_it_released_it(redis_url: str) -> None:
    a, b = _jobs(redis_url)
    chunk0 = [0, 1, 2, 3]
    a.put_many(_items(chunk0))
    b.put_many(_items(chunk0))  # same entries: b uses the chunk too
    assert a.holders(0) == {"a", "b"}
    a.delete_many([k for k, _ in _items(chunk0)])
    assert _present(b, chunk0) == [True] * 4  # b is still in its pass over chunk 0
    assert a.deferred == 4 and a.holders(0) == {"b"}
    b.delete_many([k for k, _ in _items(chunk0)])
    assert _present(a, chunk0) == [False] * 4  # the last release evicts
    assert a.used_bytes() == 0  # the namespace's byte counter went down with them


def test_a_job_that_ends_releases_its_chunks_and_keeps_the_rest(redis_url: str) -> None:
    """leave(): the chunks a closing job holds are released as if consumed (the last
    holder's release evicts them); ids outside any chunk stay for the next job."""
    a, b = _jobs(redis_url)
    a.put_many(_items([0, 1, 2, 3, 4, 5, 6, 7, 8]))
    b.put_many(_items([4, 5, 6, 7]))
    a.leave([k for k, _ in _items([0, 1, 2, 3, 4, 5, 6, 7, 8])])
    assert a.holders(0) == set() and a.holders(1) == {"b"}
    assert _present(b, [0, 1, 2, 3]) == [False] * 4  # a held chunk 0 alone: evicted
    assert _present(b, [4, 5, 6, 7, 8]) == [True] * 5  # b still uses chunk 1; 8 stays
    b.leave([k for k, _ in _items([4, 5, 6, 7])])
    assert _present(a, [4, 5, 6, 7, 8]) == [False] * 4 + [True]


def test_ids_outside_any_chunk_are_deleted_as_planned(redis_url: str) -> None:
    a, b = _jobs(redis_url)
    a.put_many(_items([8, 4]))
    b.put_many(_items([4]))
    a.delete_many([k for k, _ in _items([8, 4])])
    assert _present(b, [8, 4]) == [False, True]


def test_a_slow_job_cannot_hold_a_chunk_past_the_forced_eviction(redis_url: str) -> None:
    a, b = _jobs(redis_url, force_after_s=0.3)
    chunk1 = [4, 5, 6, 7]
    a.put_many(_items(chunk1))
    b.put_many(_items(chunk1))
    a.delete_many([k for k, _ in _items(chunk1)])
    assert _present(b, chunk1) == [True] * 4
    time.sleep(0.35)
    a.put_many(_items([0]))  # a's next write: the released chunk is overdue
    assert _present(b, chunk1) == [False] * 4
    assert b.holders(1) == set()


def test_a_job_that_uses_a_chunk_again_keeps_it(redis_url: str) -> None:
    a, b = _jobs(redis_url, force_after_s=0.2)
    chunk0 = [0, 1, 2, 3]
    a.put_many(_items(chunk0))
    b.put_many(_items(chunk0))
    a.delete_many([k for k, _ in _items(chunk0)])
    a.put_many(_items(chunk0))  # a's next cycle reaches chunk 0 again
    time.sleep(0.25)
    a.put_many(_items([8]))
    assert _present(a, chunk0) == [True] * 4 and a.holders(0) == {"a", "b"}


def test_it_travels_to_a_worker_as_the_same_job(redis_url: str) -> None:
    a, _ = _jobs(redis_url)
    clone = pickle.loads(pickle.dumps(a))
    assert clone.job == a.job and clone.namespace == a.namespace
    clone.put_many(_items([0]))
    assert a.holders(0) == {"a"}


def test_over_a_cluster_the_chunk_keys_share_a_slot(cluster: RedisCluster) -> None:
    a, b = _jobs(cluster.node_list)
    a.put_many(_items([0, 1, 2, 3, 4]))
    b.put_many(_items([0, 1, 2, 3]))
    a.delete_many([k for k, _ in _items([0, 1, 2, 3, 4])])
    assert _present(b, [0, 1, 2, 3, 4]) == [True, True, True, True, False]
    b.delete_many([k for k, _ in _items([0, 1, 2, 3])])
    assert _present(a, [0, 1, 2, 3]) == [False] * 4


def test_bad_options_are_named(redis_url: str) -> None:
    cache = RedisCache(redis_url, namespace="n@x", capacity_bytes=100)
    with pytest.raises(HotsetError, match="force_after_s"):
        ChunkRefs(cache, GROUPS, force_after_s=0)
    with pytest.raises(HotsetError, match="Redis namespace"):
        ChunkRefs(object(), GROUPS, force_after_s=1)  # type: ignore[arg-type]


def test_a_dead_server_fails_as_the_store_does(tmp_path: Path) -> None:
    from hotset.cachestore.redis_store import CacheUnavailable
    from redis_support import start_redis

    server = start_redis(tmp_path)
    try:
        cache = RedisCache(f"{server.url}?socket_timeout=0.3", namespace="n@x", capacity_bytes=1000)
        job = ChunkRefs(cache, GROUPS, force_after_s=1)
        job.put_many(_items([0]))
        server.process.kill()
        server.process.wait(timeout=5)
        with pytest.raises(CacheUnavailable):
            job.put_many(_items([1]))
        with pytest.raises(CacheUnavailable):
            job.delete_many([k for k, _ in _items([0])])
    finally:
        server.stop()


def test_chunks_of_two_data_sets_in_one_namespace_are_refed_apart(redis_url: str) -> None:
    """A content-addressed namespace holds several data sets, each with a chunk 0: a job
    releasing its data set's chunk 0 is its only holder, whoever holds the other's."""

    def one(job: str, scope: str) -> ChunkRefs:
        cache = RedisCache(redis_url, namespace="sweep@content", capacity_bytes=10_000)
        return ChunkRefs(cache, GROUPS, force_after_s=30.0, job=job, scope=scope)

    a, b = one("a", "data-a"), one("b", "data-b")
    a.put_many(_items([0, 1]))
    b_items = _items([2, 3])  # its own data set's chunk 0: other entries
    b.put_many(b_items)
    assert a.holders(0) == {"a"} and b.holders(0) == {"b"}
    b.delete_many([k for k, _ in b_items])  # b turned its caching off: its chunk goes now
    assert b.get_many([k for k, _ in b_items]) == [None, None] and b.deferred == 0
    assert _present(a, [0, 1]) == [True, True]
    again = pickle.loads(pickle.dumps(b))  # a worker's copy keeps the data set's refs
    assert again.scope == "data-b" and again.holders(0) == set()


def test_what_another_client_writes_never_fails_a_put_or_a_release(redis_url: str) -> None:
    """A job set of another type, a first-release time that is no number or lies a year
    ahead (rewritten): puts and releases go on, and a chunk another (fake) holder keeps
    is still evicted by 2 x force_after_s after this job released it."""
    import redis

    client = redis.Redis.from_url(redis_url)
    a, _ = _jobs(redis_url, force_after_s=0.5)
    jobs0 = a._keys(0)[0]
    jobs1, first1 = a._keys(1)
    client.set(jobs0, b"not a set")  # the put's SADD would fail WRONGTYPE
    a.put_many(_items([0, 1, 2, 3]))
    assert a.holders(0) == {"a"}
    a.put_many(_items([4, 5, 6, 7]))
    client.sadd(jobs1, "fake")  # a holder that never releases
    client.set(first1, b"not a number")
    a.delete_many([k for k, _ in _items([4, 5, 6, 7])])  # kept for "fake"
    assert _present(a, [4, 5, 6, 7]) == [True] * 4
    client.set(first1, f"{time.time() + 365 * 86400:.3f}")  # a release a year ahead
    time.sleep(0.6)
    a.put_many(_items([8]))  # any write asks again for chunks past force_after_s
    assert _present(a, [4, 5, 6, 7]) == [True] * 4  # the forged time restarted the clock
    client.set(first1, f"{time.time() + 365 * 86400:.3f}")  # and is forged again
    time.sleep(0.5)
    a.put_many(_items([8]))
    assert _present(a, [4, 5, 6, 7]) == [False] * 4  # forced by 2 x force_after_s
