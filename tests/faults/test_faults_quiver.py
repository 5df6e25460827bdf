"""Quiver when its cache fails mid-epoch (FAST'20 §4.8): no step fails, no sample lost.

The paper masks a lost cache server by substituting from what is left. When
entries are lost and the cache still answers (a flushed server), hotset does the
same (``quiver[mask_failures=true]``): the policy is told what a batch failed to
read, substitutes entries still cached and loads the lost units back with its
chunks. When the only server dies nothing is left to substitute from: the planned
cache reads that fail are served from storage, counted as degraded reads; loads
into the dead server are skipped and the cache is used again once it answers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

import hotset
from packed_support import packed_synth
from redis_support import RedisCluster, start_redis


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return packed_synth(
        tmp_path_factory.mktemp("quiverfault") / "ds", n=240, seed=3, chunk_size=8, shuffle_seed=0
    )


@pytest.mark.parametrize("workers", [0, 2])
def test_killing_the_cache_server_mid_epoch_fails_no_step(
    packed: Path, tmp_path: Path, workers: int
) -> None:
    server = start_redis(tmp_path)
    try:
        data = hotset.open_dataset(packed, decode="bytes")
        n = len(data.manifest)
        truth = [data.store.read(k) for k in data.manifest.keys]
        url = f"{server.url}?socket_timeout=0.3&socket_connect_timeout=0.3"
        with hotset.loader(
            data,
            system="quiver",
            cache=url,
            cache_bytes=0.2,
            batch_size=16,
            num_workers=workers,
            namespace="quiver-fault",
            seed=1,
        ) as loader:
            rows = []
            for epoch in range(3):
                loader.set_epoch(epoch)
                served: list[int] = []
                for step, (x, _y, ids, _w) in enumerate(loader):
                    if epoch == 1 and step == 3:
                        server.process.kill()
                        server.process.wait(timeout=5)
                    assert x == [truth[s] for s in ids.tolist()], f"epoch {epoch} step {step}"
                    served += ids.tolist()
                    time.sleep(0.01)
                assert sorted(served) == list(range(n)), f"epoch {epoch}: not each sample once"
                rows.append(loader.report()[-1])
        warm, hit, down = rows
        assert warm["substitutions"] > 0 and warm["degraded_reads"] == 0
        assert hit["cache_errors"] > 0 and hit["degraded_reads"] > 0
        assert down["degraded_reads"] > 0  # still down: planned cache reads went to storage
        assert all(r["finished"] and r["unique_ids_trained"] == n for r in rows)
    finally:
        server.stop()


def _flushed_mid_epoch(packed: Path, tmp_path: Path, *, mask: bool) -> list[dict[str, int]]:
    """Three epochs on a real redis-server whose entries all go after epoch 1's third
    batch (FLUSHALL: the server answers, the cache is empty)."""
    tmp_path.mkdir()
    server = start_redis(tmp_path)
    try:
        return _lose_mid_epoch(packed, server.url, lambda: server.client().flushall(), mask=mask)
    finally:
        server.stop()


def _lose_mid_epoch(
    packed: Path, url: str, lose: Callable[[], object], *, mask: bool
) -> list[dict[str, int]]:
    """Three epochs on the cache at ``url``, ``lose()`` run after epoch 1's third
    batch; each epoch checked for every sample once and byte-exact. The report rows."""
    data = hotset.open_dataset(packed, decode="bytes")
    n = len(data.manifest)
    truth = [data.store.read(k) for k in data.manifest.keys]
    with hotset.loader(
        data,
        system=f"quiver[mask_failures={mask}]",
        cache=url,
        cache_bytes=0.2,
        batch_size=16,
        num_workers=2,
        seed=1,
    ) as loader:
        rows = []
        for epoch in range(3):
            loader.set_epoch(epoch)
            served: list[int] = []
            for step, (x, _y, ids, _w) in enumerate(loader):
                if epoch == 1 and step == 3:
                    lose()
                assert x == [truth[s] for s in ids.tolist()], f"epoch {epoch} step {step}"
                served += ids.tolist()
            assert sorted(served) == list(range(n)), f"epoch {epoch}: not each sample once"
            rows.append(loader.report()[-1])
    return rows


@pytest.fixture(scope="module")
def larger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Large enough that the cache (20%) holds many more samples than the batches the
    workers have planned ahead when a loss is reported (masking acts on the rest)."""
    return packed_synth(tmp_path_factory.mktemp("quivermask") / "ds", n=2000, seed=3, chunk_size=8)


def test_a_flushed_cache_is_masked_by_substitutes_and_reloaded_with_the_chunks(
    larger: Path, tmp_path: Path
) -> None:
    """§4.8: entries lost to a failure are substituted by cached ones still there and
    loaded back with the chunk cycle, so fewer of the failed cache reads are read from
    storage in the batch than when each is (mask_failures=False, hotset's earlier way)."""
    plain = _flushed_mid_epoch(larger, tmp_path / "plain", mask=False)
    masked = _flushed_mid_epoch(larger, tmp_path / "masked", mask=True)
    assert plain[0] == {**plain[0], "rebuild_reads": 0, "degraded_reads": 0}
    lost_plain = sum(r["rebuild_reads"] + r["degraded_reads"] for r in plain)
    lost_masked = sum(r["rebuild_reads"] + r["degraded_reads"] for r in masked)
    assert lost_plain > 0, "the flush took nothing the plan read: no failure to mask"
    assert lost_masked < lost_plain, (lost_masked, lost_plain)
    # the healthy epoch before the failure is decided alike with or without masking
    same = ("exact_hits", "substitutions", "storage_requests", "storage_bytes")
    assert [plain[0][k] for k in same] == [masked[0][k] for k in same]


def test_one_lost_node_of_a_cluster_is_masked_by_the_others_entries(
    larger: Path, redis_cluster: RedisCluster
) -> None:
    """The paper's case: one server of a distributed cache loses what it held (a node
    of a three-node Redis Cluster flushed), the others' entries serve substitutes."""
    node = redis_cluster.nodes[1]
    rows = {}
    for mask in (False, True):
        redis_cluster.flushall()
        rows[mask] = _lose_mid_epoch(
            larger, redis_cluster.url, lambda: node.client().flushall(), mask=mask
        )
    lost = {m: sum(r["rebuild_reads"] + r["degraded_reads"] for r in rows[m]) for m in rows}
    assert lost[False] > 0, "the lost node held nothing the plan read"
    assert lost[True] < lost[False], lost
