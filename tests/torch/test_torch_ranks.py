"""Importance shared across ranks: real process groups (gloo) of 2 and 4 ranks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from process_support import run_torchrun

HERE = Path(__file__).resolve().parent
#: systems whose every epoch trains each sample once across the ranks
#: scout: its first 5 epochs are IIS warm-up (full permutations), served exactly as drawn
EXACTLY_ONCE = ("pytorch", "fifo", "lru", "lfu", "minio", "base", "nopfs", "scout")


def _torchrun(script: str, world: int, logs: Path, *args: str) -> None:
    """Run ``script`` as ``world`` ranks under torch.distributed.run (gloo, one machine),
    each rank logging to a file of its own under ``logs`` (a failure shows each one's)."""
    run_torchrun([str(HERE / script), *args], nproc=world, logs=logs)


def _ranks(script: str, world: int, out: Path, *args: str) -> list[dict[str, Any]]:
    """Run ``script`` as ``world`` ranks writing ``out/rank{r}.json``; those results."""
    out.mkdir()
    _torchrun(script, world, out.parent / "logs", *args)
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(world)]


def _packed(dataset_dir: Path, tmp_path: Path, *, chunk_size: int, seed: int) -> Path:
    """A copy of the data set, packed as Brand §3.2 asks (a seeded shuffle cut into chunks)."""
    from hotset.data.chunks import pack_dataset

    packed = tmp_path / "packed"
    shutil.copytree(dataset_dir, packed)
    pack_dataset(packed, chunk_size=chunk_size, shuffle_seed=seed)
    return packed


def _job(
    dataset_dir: Path, out: Path, world: int, system: str, epochs: int = 3
) -> list[dict[str, Any]]:
    return _ranks("rank_job.py", world, out, str(dataset_dir), str(out), system, str(epochs))


@pytest.mark.parametrize("world", [2, 4])
def test_every_rank_holds_the_same_table_loss_accuracy_and_draw(
    dataset_dir: Path, tmp_path: Path, world: int
) -> None:
    ranks = _job(dataset_dir, tmp_path / "out", world, "shade")
    first = ranks[0]
    assert len(first["train_loss"]) == 3
    for other in ranks[1:]:
        assert other["scores"] == first["scores"]
        assert other["train_loss"] == first["train_loss"]
        assert other["val_accuracy"] == first["val_accuracy"]
        assert other["draw"] == first["draw"]  # one global draw, computed on every rank
    # the ranks' mean accuracy: each rank recorded 0.1 * (e + 1) + 0.01 * rank
    assert first["val_accuracy"][0] == pytest.approx(0.1 + 0.01 * (world - 1) / 2)
    # every sample some rank trained is scored on every rank
    trained = {i for r in ranks for epoch in r["served"] for i in epoch}
    unscored = [i for i in trained if first["scores"][i] == 1.0]
    assert not unscored


def test_exactly_once_across_ranks_for_a_plain_system(dataset_dir: Path, tmp_path: Path) -> None:
    ranks = _job(dataset_dir, tmp_path / "out", 2, "lru", epochs=2)
    for epoch in range(2):
        union = sorted(i for r in ranks for i in r["served"][epoch])
        assert union == list(range(200))  # 200 = 2 x 100: no padding needed


def test_a_ddp_job_resumes_mid_epoch_exactly(dataset_dir: Path, tmp_path: Path) -> None:
    """Each rank saves its state mid-epoch; a new job of the same size continues exactly."""
    for mode in ("full", "first", "second"):
        _torchrun("rank_resume_job.py", 2, tmp_path / "logs", str(dataset_dir), str(tmp_path), mode)
    for rank in range(2):
        full = json.loads((tmp_path / f"full{rank}.json").read_text())
        first = json.loads((tmp_path / f"first{rank}.json").read_text())
        second = json.loads((tmp_path / f"second{rank}.json").read_text())
        assert first["served"]["0"] == full["served"]["0"]
        assert first["served"]["1"] + second["served"]["1"] == full["served"]["1"]
        assert second["served"]["2"] == full["served"]["2"]
        assert second["scores"] == full["scores"]  # the shared table came out the same


@pytest.mark.parametrize("system", ["lru", "shade"])
def test_ranks_share_one_pooled_cluster_cache_within_its_budget(
    dataset_dir: Path, tmp_path: Path, redis_cluster: Any, system: str
) -> None:
    """2 ranks, one namespace on a 3-master cluster: each rank plans half of the budget."""
    url = "redis+cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in redis_cluster.nodes)
    out = tmp_path / "out"
    ranks = _ranks("rank_pool_job.py", 2, out, str(dataset_dir), str(out), url, system, "3")
    capacity = ranks[0]["capacity"]
    for rank in ranks:
        assert all(0 < used <= capacity for used in rank["used"])  # the pool's one budget
        assert sum(row["refused_puts"] for row in rank["rows"]) == 0  # no rank crowds out
    if system == "lru":
        for epoch in range(3):
            union = sorted(i for r in ranks for i in r["served"][epoch])
            assert union == list(range(200))  # exactly once across ranks
    pool_hits = sum(row["pool_hits"] for r in ranks for row in r["rows"])
    assert pool_hits > 0  # a rank's planned misses served from what the other rank put


def test_every_system_runs_under_torchrun_with_and_without_workers(
    dataset_dir: Path, tmp_path: Path
) -> None:
    from hotset.systems.registry import capabilities_of

    packed = _packed(dataset_dir, tmp_path, chunk_size=16, seed=0)
    out = tmp_path / "out"
    ranks = _ranks("rank_systems_job.py", 2, out, str(dataset_dir), str(packed), str(out))
    assert ranks[0].keys() == ranks[1].keys() and len(ranks[0]) >= 2 * 15
    for key, first in ranks[0].items():
        name = key.split("/")[0]
        second = ranks[1][key]
        assert all(len(epoch) > 0 for epoch in first["served"] + second["served"]), key
        if capabilities_of(name).learns:
            assert first["scores"] == second["scores"], key  # one table on every rank
        if name in EXACTLY_ONCE:
            for epoch in range(2):
                union = sorted(first["served"][epoch] + second["served"][epoch])
                assert union == list(range(200)), key


@pytest.mark.parametrize(("world", "workers"), [(2, 0), (4, 2)])
def test_brand_across_ranks_delivers_each_sample_once_with_remote_requests_and_prefetch(
    dataset_dir: Path, tmp_path: Path, redis_server: Any, world: int, workers: int
) -> None:
    packed = _packed(dataset_dir, tmp_path, chunk_size=8, seed=1)
    out = tmp_path / "out"
    url = f"redis://127.0.0.1:{redis_server.port}/0"
    args = (str(packed), str(out), url, "3", str(workers))
    ranks = _ranks("rank_brand_job.py", world, out, *args)
    for epoch in range(3):
        union = sorted(i for r in ranks for i in r["served"][epoch])
        assert union == list(range(200))  # each sample once per epoch across the ranks
    for r in ranks:
        assert r["counts"]["remote_requests"] > 0
        assert r["counts"]["prefetch_hits"] > 0
        assert 0 < r["remote_memory_peak"] <= 0.1 * r["capacity"]
        assert sum(row["substitutions"] for row in r["rows"]) > 0


def test_brand_ranks_read_the_chunks_other_ranks_own_from_storage_themselves(
    dataset_dir: Path, tmp_path: Path, redis_server: Any
) -> None:
    """Owners are bookkeeping (docs/systems/brand.md): a remote request whose owner must
    refill is not sent to the owner; the requester reads the chunk from the shared store.
    Each rank's chunk reads, split by owner, are the chunks its workers read (or found
    whole in the pool), epoch by epoch, with ranks kept in step as DDP keeps them."""
    packed = _packed(dataset_dir, tmp_path, chunk_size=8, seed=1)
    out = tmp_path / "out"
    url = f"redis://127.0.0.1:{redis_server.port}/0"
    ranks = _ranks("rank_brand_job.py", 2, out, str(packed), str(out), url, "3", "2", "sync")
    for r in ranks:
        before = dict.fromkeys(r["epoch_counts"][0], 0)
        for after, row in zip(r["epoch_counts"], r["rows"], strict=True):
            got = {k: after[k] - before[k] for k in after}
            before = after
            decided = got["owned_chunk_reads"] + got["remote_chunk_reads"]
            assert decided == row["unit_reads"] + row["pool_unit_hits"] + row["claimed_units"]
            # a chunk read for a remote request is a remote request the owner could not
            # answer from memory (fewer only where two requests of a batch chose one chunk)
            assert got["remote_chunk_reads"] <= got["remote_requests"] - got["remote_hits"]
        assert r["counts"]["owned_chunk_reads"] > 0
        assert r["counts"]["remote_chunk_reads"] > 0  # it reads chunks another rank owns
