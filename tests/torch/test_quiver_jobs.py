"""Two Quiver jobs on one shared namespace, stepped in lockstep in one process.

Lockstep (one batch of A, then one of B, no workers) makes the interleaving a
function of the test, so the figures are exact: the jobs follow one chunk cycle,
load each chunk's units in their own orders and find each other's loads in the
pool, chunks are evicted in concert (ChunkRefs), each job plans two thirds of
the namespace, and nothing the plans count on is refused or lost.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import hotset
from hotset.coordination.chunk_refs import ChunkRefs
from packed_support import packed_synth
from redis_support import RedisProcess


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return packed_synth(
        tmp_path_factory.mktemp("quiverjobs") / "ds", n=960, seed=4, chunk_size=8, shuffle_seed=3
    )


def _run(packed: Path, url: str, *, jobs: int, namespace: str | None) -> list[dict[str, int]]:
    data = hotset.open_dataset(packed, decode="bytes")
    n = len(data.manifest)
    truth = [data.store.read(k) for k in data.manifest.keys]
    loaders = [
        hotset.loader(
            data,
            system="quiver",
            cache=url,
            cache_bytes=0.3,
            namespace=namespace,
            batch_size=16,
            seed=10 + j,
        )
        for j in range(jobs)
    ]
    totals: list[dict[str, int]] = []
    try:
        for epoch in range(3):
            for loader in loaders:
                loader.set_epoch(epoch)
            seen: list[list[int]] = [[] for _ in loaders]
            for batches in zip(*loaders, strict=True):
                for j, (x, _y, ids, _w) in enumerate(batches):
                    assert x == [truth[s] for s in ids.tolist()]
                    seen[j] += ids.tolist()
            for j in range(jobs):
                assert sorted(seen[j]) == list(range(n)), f"job {j} epoch {epoch}"
        for loader in loaders:
            rows = loader.report()
            totals.append(
                {
                    "unit_reads": sum(r["unit_reads"] for r in rows),
                    "pool_unit_hits": sum(r["pool_unit_hits"] for r in rows),
                    "rebuild": sum(r["rebuild_reads"] for r in rows),
                    "refused": sum(r["refused_puts"] for r in rows),
                    "substitutions": sum(r["substitutions"] for r in rows),
                }
            )
            if namespace is not None:
                assert isinstance(loader.cache, ChunkRefs)
    finally:
        for loader in loaders:
            loader.close()
    return totals


def test_two_jobs_read_each_unit_about_once_between_them(
    packed: Path, redis_server: RedisProcess
) -> None:
    url = redis_server.url
    alone = _run(packed, url, jobs=1, namespace=None)[0]
    pair = _run(packed, url, jobs=2, namespace="quiver-pair")
    reads = sum(t["unit_reads"] for t in pair)
    assert sum(t["pool_unit_hits"] for t in pair) > 0
    # two private jobs would read twice what one reads alone; shared, about the same
    assert reads < 1.1 * alone["unit_reads"], (alone, pair)
    assert all(t["rebuild"] == 0 and t["refused"] == 0 for t in pair), pair
    assert all(t["substitutions"] > 0 for t in pair)
