"""Content-addressed entries over a real redis-server: sharing by content, isolation by digest.

Three real data sets on disk: A, A's bytes under other file names and ids (A2),
and B with other content. Every count below is of bytes actually served.
"""

from __future__ import annotations

import pickle
import secrets
from dataclasses import dataclass
from pathlib import Path

import pytest

from digest_support import renamed_copy
from hotset.cachestore import CacheKey
from hotset.cachestore.capability import CapabilityRedisCache
from hotset.cachestore.redis_store import RedisCache
from hotset.cachestore.registry import open_cache
from hotset.data import Manifest, SynthConfig, make_synth
from hotset.data.digest import Digest, capability_of, compute_digest
from hotset.errors import HotsetError, IntegrityError
from hotset.storage.local import LocalStore
from redis_support import RedisCluster, RedisProcess

NAMESPACE = "team@content"


@dataclass
class Job:
    """A user's data set: its manifest, the bytes of each id, its digest."""

    manifest: Manifest
    blobs: list[bytes]
    digest: Digest

    @property
    def keys(self) -> list[CacheKey]:
        return [CacheKey(i, h) for i, h in enumerate(self.manifest.hashes)]

    @property
    def items(self) -> list[tuple[CacheKey, bytes]]:
        return list(zip(self.keys, self.blobs, strict=True))

    @property
    def total(self) -> int:
        return sum(len(b) for b in self.blobs)


def _job(path: Path) -> Job:
    manifest = Manifest.load(path)
    store = LocalStore(path)
    return Job(
        manifest,
        [store.read(k) for k in manifest.keys],
        compute_digest(manifest, store, workers=1),
    )


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Job]:
    root = tmp_path_factory.mktemp("capability")
    make_synth(root / "a", SynthConfig(n=30, image_size=8, classes=3, seed=21), workers=1)
    make_synth(root / "b", SynthConfig(n=30, image_size=8, classes=3, seed=22), workers=1)
    renamed_copy(root / "a", root / "a2")
    found = {name: _job(root / name) for name in ("a", "b", "a2")}
    assert not set(found["a"].digest.caps[i : i + 32] for i in range(0, 30 * 32, 32)) & set(
        found["b"].digest.caps[i : i + 32] for i in range(0, 30 * 32, 32)
    )  # the two users' data share no sample
    assert found["a2"].manifest.keys != found["a"].manifest.keys
    return found


def _open(url: str | list[str], job: Job, capacity: int = 10**6) -> CapabilityRedisCache:
    cache = open_cache(
        url, capacity_bytes=capacity, namespace=NAMESPACE, n_slots=30, digest=job.digest
    )
    assert isinstance(cache, CapabilityRedisCache)
    return cache


def _stored_bytes(client: object, prefix: str) -> int:
    total = 0
    for rkey in client.scan_iter(match=prefix + "*"):  # type: ignore[attr-defined]
        if not rkey.endswith(b"used-bytes"):
            total += int(client.strlen(rkey))  # type: ignore[attr-defined]
    return total


def test_entries_are_keyed_by_their_blake2b_alone(
    redis_url: str, redis_server: RedisProcess, jobs: dict[str, Job]
) -> None:
    a = jobs["a"]
    with _open(redis_url, a) as cache:
        cache.put_many(a.items)
        assert cache.used_bytes() == a.total
        assert cache.stats().bytes_written == a.total
    raw = redis_server.client()
    keys = {k.decode() for k in raw.keys(f"hotset:{NAMESPACE}:*")}
    want = {f"hotset:{NAMESPACE}:b2:{capability_of(b)}" for b in a.blobs}
    assert keys == want | {f"hotset:{NAMESPACE}:used-bytes"}
    for blob in a.blobs:
        assert raw.get(f"hotset:{NAMESPACE}:b2:{capability_of(blob)}") == blob


def test_another_users_job_reads_zero_bytes_of_it(redis_url: str, jobs: dict[str, Job]) -> None:
    a, b = jobs["a"], jobs["b"]
    with _open(redis_url, a) as cache_a:
        cache_a.put_many(a.items)
    with _open(redis_url, b) as cache_b:
        assert cache_b.get_many(b.keys) == [None] * 30
        stats = cache_b.stats()
        assert (stats.hits, stats.bytes_served, stats.misses) == (0, 0, 30)
        # B's digest names no key for A's samples: their (id, xxh3) is no capability.
        for key in a.keys[:5]:
            with pytest.raises(HotsetError, match="holds no capability"):
                cache_b.get_many([key])
        assert cache_b.stats().bytes_served == 0
        # B's own content is there for B once B put it, and A's entries are untouched.
        cache_b.put_many(b.items)
        assert cache_b.get_many(b.keys) == b.blobs
        assert cache_b.stats().bytes_served == b.total
        assert cache_b.used_bytes() == a.total + b.total
    # An id-keyed handle on the namespace (no digest) finds nothing either.
    with RedisCache(redis_url, namespace=NAMESPACE, capacity_bytes=10**6) as plain:
        assert plain.get_many(a.keys) == [None] * 30
        assert plain.stats().bytes_served == 0
    with _open(redis_url, a) as cache_a:
        assert cache_a.get_many(a.keys) == a.blobs
        assert cache_a.stats().bytes_served == a.total


def _forged(job: Job, caps: list[str]) -> Digest:
    """A digest claiming ``job``'s public xxh3s with capabilities it never computed."""
    return Digest.from_hex(
        caps, list(job.manifest.hashes), count=30, dataset="forged", source="<forged>"
    )


def test_forged_hashes_find_nothing(redis_url: str, jobs: dict[str, Job]) -> None:
    a, b = jobs["a"], jobs["b"]
    with _open(redis_url, a) as cache_a:
        cache_a.put_many(a.items)
    random_caps = [secrets.token_hex(32) for _ in range(30)]
    other_content = [capability_of(blob) for blob in b.blobs]  # hashes of other bytes
    for caps in (random_caps, other_content):
        forged = Job(a.manifest, a.blobs, _forged(a, caps))
        with _open(redis_url, forged) as cache:
            assert cache.get_many(a.keys) == [None] * 30
            assert all(not cache.contains(k) for k in a.keys)
            stats = cache.stats()
            assert (stats.hits, stats.bytes_served) == (0, 0)
            # Nor can a forger plant bytes under a capability they do not hash to.
            with pytest.raises(IntegrityError, match="BLAKE2b"):
                cache.put_many(a.items[:3])
            assert cache.used_bytes() == a.total


def test_same_content_under_other_names_and_ids_is_shared(
    redis_url: str, jobs: dict[str, Job]
) -> None:
    a, a2 = jobs["a"], jobs["a2"]
    with _open(redis_url, a) as cache_a:
        cache_a.put_many(a.items)
    with _open(redis_url, a2) as cache_a2:
        got = cache_a2.get_many(a2.keys)
        assert got == a2.blobs  # byte-exact, by A2's own ids
        assert got == a.blobs[::-1]  # which are A's, reversed
        stats = cache_a2.stats()
        assert (stats.hits, stats.bytes_served) == (30, a.total)
        cache_a2.put_many(a2.items)  # already there: stores nothing, counts nothing
        assert cache_a2.stats().bytes_written == 0
        assert cache_a2.used_bytes() == a.total
        cache_a2.delete_many(a2.keys[:10])  # A2's eviction removes the shared entry
    with _open(redis_url, a) as cache_a:
        assert cache_a.get_many(a.keys[-10:]) == [None] * 10
        assert cache_a.used_bytes() == a.total - sum(len(x) for x in a.blobs[-10:])


def test_budget_is_never_exceeded_and_the_counter_is_exact(
    redis_url: str, redis_server: RedisProcess, jobs: dict[str, Job]
) -> None:
    a, b, a2 = jobs["a"], jobs["b"], jobs["a2"]
    capacity = (a.total + b.total) * 2 // 5
    caches = [_open(redis_url, job, capacity) for job in (a, b, a2)]
    refused = 0
    raw = redis_server.client()
    try:
        for start in range(0, 30, 5):
            for job, cache in zip((a, b, a2), caches, strict=True):
                try:
                    cache.put_many(job.items[start : start + 5])
                except HotsetError as exc:
                    assert "would exceed capacity_bytes" in str(exc)
                    refused += 1
                used = cache.used_bytes()
                assert used <= capacity
                assert used == _stored_bytes(raw, f"hotset:{NAMESPACE}:")
            caches[1].delete_many(b.keys[start : start + 2])
            assert caches[1].used_bytes() == _stored_bytes(raw, f"hotset:{NAMESPACE}:")
    finally:
        for cache in caches:
            cache.close()
    assert refused > 0  # the budget really bound


def test_pickled_for_a_worker_it_keeps_its_digest(redis_url: str, jobs: dict[str, Job]) -> None:
    a = jobs["a"]
    with _open(redis_url, a) as cache:
        cache.put_many(a.items[:4])
        clone = pickle.loads(pickle.dumps(cache))
    try:
        assert isinstance(clone, CapabilityRedisCache)
        assert clone.digest.caps == a.digest.caps
        assert clone.namespace == NAMESPACE
        assert clone.get_many(a.keys[:5]) == [*a.blobs[:4], None]
    finally:
        clone.close()


def test_embedded_cache_refuses_a_digest(jobs: dict[str, Job]) -> None:
    for spec in ("memory", "shm"):
        with pytest.raises(HotsetError, match=f"cache '{spec}' with a digest"):
            open_cache(
                spec, capacity_bytes=1000, namespace="x", n_slots=30, digest=jobs["a"].digest
            )
    with pytest.raises(HotsetError, match="needs a Digest"):
        CapabilityRedisCache(
            "redis://127.0.0.1:1/0", digest="a.json", namespace="x", capacity_bytes=1
        )


def test_cluster_shares_by_content(cluster: RedisCluster, jobs: dict[str, Job]) -> None:
    a, a2, b = jobs["a"], jobs["a2"], jobs["b"]
    with _open(cluster.url, a) as cache_a:
        cache_a.put_many(a.items)
        assert cache_a.used_bytes() == a.total
    with _open(cluster.node_list, a2) as cache_a2:
        assert cache_a2.get_many(a2.keys) == a2.blobs
        assert cache_a2.stats().bytes_served == a.total
    with _open(cluster.url, b) as cache_b:
        assert cache_b.get_many(b.keys) == [None] * 30
        assert cache_b.stats().bytes_served == 0
