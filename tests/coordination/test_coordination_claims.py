"""Claims on unit loads over a real Redis namespace: one reader at a time, released after."""

from __future__ import annotations

import time

import numpy as np

from hotset.cachestore.redis_store import RedisCache
from hotset.coordination.chunk_refs import ChunkRefs
from hotset.coordination.claims import claim, release


def _cache(url: str, namespace: str = "sweep@x") -> RedisCache:
    return RedisCache(url, namespace=namespace, capacity_bytes=1000)


def test_one_job_claims_a_unit_and_the_others_leave_it(redis_url: str) -> None:
    a, b = _cache(redis_url), _cache(redis_url)
    assert claim(a, ["h1", "h2"]) == [True, True]
    assert claim(b, ["h2", "h3"]) == [False, True]  # h2 is being read by a
    release(a, ["h1", "h2"])
    assert claim(b, ["h1", "h2"]) == [True, True]  # in the pool now, or read again


def test_claims_are_per_namespace_and_expire(redis_url: str) -> None:
    a, other = _cache(redis_url), _cache(redis_url, "other@x")
    assert claim(a, ["h"], ttl_s=0.2) == [True]
    assert claim(other, ["h"]) == [True]  # another namespace, another pool
    time.sleep(0.25)
    assert claim(a, ["h"]) == [True]  # a claimant that died frees the unit


def test_a_coordinated_namespace_claims_through_its_redis(redis_url: str) -> None:
    groups = np.zeros(4, dtype=np.int64)
    a = ChunkRefs(_cache(redis_url), groups, force_after_s=1.0, job="a")
    b = ChunkRefs(_cache(redis_url), groups, force_after_s=1.0, job="b")
    assert claim(a, ["h"]) == [True]
    assert claim(b, ["h"]) == [False]


def test_without_redis_nothing_is_claimed_away() -> None:
    assert claim(object(), ["h1", "h2"]) == [True, True]
    assert claim(object(), []) == []
    release(object(), ["h1"])  # nothing to release: no error


def test_a_claim_no_claimant_set_is_taken_over(redis_url: str) -> None:
    """A claim with no expiry, a longer one, or a key of another type would hold a unit's
    background read forever: it is not honoured."""
    import redis

    a = _cache(redis_url)
    client = redis.Redis.from_url(redis_url)
    client.set("hotset-claim:{sweep@x}:forever", b"1")
    client.set("hotset-claim:{sweep@x}:long", b"1", ex=3600)
    client.hset("hotset-claim:{sweep@x}:hash", "a", "b")
    assert claim(a, ["forever", "long", "hash"]) == [True, True, True]
    assert claim(_cache(redis_url), ["forever", "long", "hash"]) == [False] * 3
    assert 0 < client.pttl("hotset-claim:{sweep@x}:forever") <= 3000
