"""iCACHE jobs on one namespace publish their benefit and RIV as raw bytes, on a real Redis."""

from __future__ import annotations

import multiprocessing
import pickle
import time
from pathlib import Path

import numpy as np
import pytest

from hotset.cachestore.redis_store import RedisCache
from hotset.coordination.job_importance import SharedJobs, decode_entry, encode_entry
from hotset.errors import HotsetError
from hotset.importance.multijob import JobImportance, relative_importance
from redis_support import RedisCluster, RedisProcess, start_redis

N = 50


def _jobs(spec: str | list[str], job: str, namespace: str = "sweep@x", **kw: object) -> SharedJobs:
    cache = RedisCache(spec, namespace=namespace, capacity_bytes=10_000)
    return SharedJobs(cache, job, **kw)  # type: ignore[arg-type]


def test_each_job_reads_every_jobs_latest_entry(redis_url: str) -> None:
    a, b = _jobs(redis_url, "a"), _jobs(redis_url, "b")
    assert a.read(N) == []
    riv_a = relative_importance(np.arange(N, dtype=np.float64))
    riv_b = relative_importance(np.arange(N, 0, -1, dtype=np.float64))
    riv_b[3] = np.nan  # unknown to b
    a.publish(2.5, riv_a)
    b.publish(1.2, riv_b)
    a.publish(3.0, riv_a)  # replaces a's first entry
    got = {j.job: j for j in b.read(N)}
    assert sorted(got) == ["a", "b"] and got["a"].benefit == 3.0
    assert np.array_equal(got["a"].riv, riv_a.astype(np.float32).astype(np.float64))
    assert np.isnan(got["b"].riv[3])
    assert _jobs(redis_url, "c", namespace="other@x").read(N) == []  # per namespace
    b.leave()
    assert [j.job for j in a.read(N)] == ["a"]


def test_the_entry_is_raw_bytes_beside_the_namespace(redis_server: RedisProcess) -> None:
    redis_server.client().flushall()
    jobs = _jobs(redis_server.url, "a", ttl_s=30)
    jobs.publish(2.0, np.full(N, 0.5))
    raw = redis_server.client().hget(jobs.key, "a")
    assert raw == encode_entry(2.0, np.full(N, 0.5), at=decode_entry("a", raw, n=N)[1])  # type: ignore[index]
    assert raw.startswith(b"HSJI\x01") and len(raw) == 5 + 20 + 4 * N
    assert 0 < redis_server.client().ttl(jobs.key) <= 60  # the hash outlives a lease
    lease = redis_server.client().zscore(jobs.key + ":leases", "a")
    assert lease is not None and 0 < lease - time.time() <= 31  # the entry counts 30 s
    assert not jobs.key.startswith("hotset:")  # the namespace's scans never meet it


def test_what_the_server_holds_is_checked_and_never_unpickled(
    redis_server: RedisProcess,
) -> None:
    redis_server.client().flushall()
    jobs = _jobs(redis_server.url, "me")
    client = redis_server.client()
    good = encode_entry(2.0, np.full(N, 0.5), at=1e12)
    bad = {
        "pickled": pickle.dumps({"benefit": 9.0}),
        "short": good[:-4],
        "other-n": encode_entry(2.0, np.full(N + 1, 0.5), at=1e12),
        "riv-out-of-range": encode_entry(2.0, np.full(N, 1.5), at=1e12),
        "benefit-nan": encode_entry(float("nan"), np.full(N, 0.5), at=1e12),
        "stale": encode_entry(2.0, np.full(N, 0.5), at=0.0),
    }
    for name, value in bad.items():
        client.hset(jobs.key, name, value)
        client.zadd(jobs.key + ":leases", {name: time.time() + 600})
    client.hset(jobs.key, "fine", encode_entry(2.0, np.full(N, 0.5), at=jobs.clock()))
    client.zadd(jobs.key + ":leases", {"fine": time.time() + 600})
    assert [j.job for j in jobs.read(N)] == ["fine"]
    assert jobs.stats()["jobs_ignored"] == len(bad)
    assert client.hkeys(jobs.key) == [b"fine"]  # what is no entry was removed


def _job_process(url: str, job: str, start: object, out: str) -> None:
    """A separate job: publish its own entry, wait for the other's, write what it read."""
    jobs = _jobs(url, job)
    scores = np.random.default_rng(len(job)).random(N)
    jobs.publish(2.0 if job == "a" else 1.7, relative_importance(scores))
    start.wait(timeout=30)  # type: ignore[attr-defined]
    got = jobs.read(N)
    np.save(out, np.stack([j.riv for j in got]))
    Path(out + ".names").write_text(",".join(j.job for j in got))


def test_two_job_processes_see_each_others_riv(redis_url: str, tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(2)
    outs = {job: str(tmp_path / f"{job}.npy") for job in ("a", "b")}
    procs = [
        ctx.Process(target=_job_process, args=(redis_url, j, start, o[:-4]))
        for j, o in outs.items()
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    seen = {job: np.load(out) for job, out in outs.items()}
    assert np.array_equal(seen["a"], seen["b"])  # both jobs read the same two entries
    for job, out in outs.items():
        assert Path(out[:-4] + ".names").read_text() == "a,b"
        want = relative_importance(np.random.default_rng(len(job)).random(N)).astype(np.float32)
        assert np.array_equal(seen["a"][0 if job == "a" else 1], want.astype(np.float64))


def test_over_a_cluster(cluster: RedisCluster) -> None:
    _jobs(cluster.node_list, "a").publish(2.0, np.zeros(N))
    assert [j.job for j in _jobs(cluster.node_list, "b").read(N)] == ["a"]


def test_a_dead_server_reads_as_no_other_job(tmp_path: Path) -> None:
    server = start_redis(tmp_path)
    try:
        jobs = _jobs(f"{server.url}?socket_timeout=0.3", "a")
        jobs.publish(2.0, np.zeros(N))
        server.process.kill()
        server.process.wait(timeout=5)
        assert jobs.read(N) == []
        jobs.publish(2.0, np.zeros(N))  # skipped, not raised
        assert jobs.failures == 2
    finally:
        server.stop()


def test_bad_arguments_are_named(redis_url: str) -> None:
    with pytest.raises(HotsetError, match="Redis namespace"):
        SharedJobs(object(), "a")  # type: ignore[arg-type]
    with pytest.raises(HotsetError, match="job name"):
        _jobs(redis_url, "")
    with pytest.raises(HotsetError, match="ttl_s"):
        _jobs(redis_url, "a", ttl_s=0)


def test_hostile_entries_are_skipped_removed_and_bounded(redis_server: RedisProcess) -> None:
    """What another client can plant: benefits of 1e308 (their sum overflowed to inf),
    a publish time a year ahead, an unleased entry, 10,000 valid-looking jobs."""
    from hotset.coordination.job_importance import MAX_JOBS
    from hotset.importance.multijob import adjusted_importance

    client = redis_server.client()
    client.flushall()
    jobs = _jobs(redis_server.url, "me")
    jobs.publish(2.0, np.full(N, 0.5))
    leases = jobs.key + ":leases"
    now = time.time()
    planted = {
        **{f"huge-{i}": encode_entry(1e308, np.full(N, 1.0), at=now) for i in range(3)},
        "future": encode_entry(2.0, np.full(N, 1.0), at=now + 365 * 24 * 3600),
    }
    for name, value in planted.items():
        client.hset(jobs.key, name, value)
        client.zadd(leases, {name: now + 600})
    client.hset(jobs.key, "unleased", encode_entry(2.0, np.full(N, 1.0), at=now))
    got = jobs.read(N)
    assert [j.job for j in got] == ["me"]
    assert jobs.stats()["jobs_ignored"] == 4 and jobs.stats()["jobs_aged"] == 1
    assert client.hkeys(jobs.key) == [b"me"]
    aiv = adjusted_importance(
        [JobImportance(f"h{i}", 1e308, np.ones(N)) for i in range(3)], threshold=1.5
    )
    assert aiv is not None and np.isfinite(aiv).all()  # capped weights: no inf
    pipe = client.pipeline(transaction=False)
    for i in range(10_000):
        pipe.hset(jobs.key, f"j{i:05d}", encode_entry(2.0, np.full(N, 0.5), at=now))
        pipe.zadd(leases, {f"j{i:05d}": now + 600})
    pipe.execute()
    assert len(jobs.read(N)) == MAX_JOBS
