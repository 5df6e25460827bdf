"""Never a wrong or stale sample: corrupted cache entries and changed files are caught."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from torch_support import run_epoch

import hotset
from hotset.cachestore.base import CacheKey
from hotset.cachestore.shm import SharedMemoryCache
from hotset.errors import IntegrityError


def test_corrupted_cache_entry_is_never_served_with_verify(dataset_dir: Path) -> None:
    """A poisoned entry is dropped and re-read (counted), not delivered and not fatal."""
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    files = [(dataset_dir / key).read_bytes() for key in data.manifest.keys]
    with hotset.loader(data, system="lru", cache=0.5, batch_size=16, verify=True) as loader:
        run_epoch(loader, 0)
        cache = loader.cache
        assert isinstance(cache, SharedMemoryCache)
        resident = sorted(loader.system.policy.resident())
        assert resident
        # a second, non-verifying handle writes wrong bytes under the right key
        other = SharedMemoryCache(name=cache.name, create=False)
        manifest = data.manifest
        for sid in resident:
            key = CacheKey(sid, manifest.hashes[sid])
            other.delete_many([key])
            other.put_many([(key, b"x" * int(manifest.sizes[sid]))])
        other.close()
        for x, _, ids, _ in run_epoch(loader, 1):
            for blob, sid in zip(x, ids.tolist(), strict=True):
                assert blob == files[sid]
        row = loader.report()[1]
        assert 0 < row["integrity_errors"] <= len(resident)
        assert row["rebuild_reads"] >= row["integrity_errors"]


def test_changed_file_in_store_is_caught(dataset_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "ds"
    shutil.copytree(dataset_dir, copy)
    data = hotset.open_dataset(copy, decode="bytes")
    key = data.manifest.keys[5]
    blob = bytearray((copy / key).read_bytes())
    blob[-1] ^= 0xFF  # same size, other content: only the hash can tell
    with hotset.loader(data, system="lru", cache=0.3, batch_size=16, verify=True) as loader:
        (copy / key).write_bytes(bytes(blob))
        with pytest.raises(IntegrityError, match=r"id 5\)"):
            run_epoch(loader, 0)
    with hotset.loader(data, system="lru", cache=0.3, batch_size=16, verify=False) as loader:
        (copy / key).write_bytes(bytes(blob) + b"!")  # a size change is always caught
        with pytest.raises(IntegrityError, match="the manifest says"):
            run_epoch(loader, 0)


def test_ranks_take_disjoint_shards(dataset_dir: Path) -> None:
    """Under DDP every rank plans its own shard; together they cover the epoch once."""
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    seen = []
    for rank in range(2):
        with hotset.loader(
            data, system="lru", cache=0.3, batch_size=16, rank=rank, world_size=2
        ) as loader:
            ids = torch.cat([b[2] for b in run_epoch(loader, 0)]).tolist()
            assert len(ids) == 100
            seen.append(set(ids))
    assert not seen[0] & seen[1]
    assert seen[0] | seen[1] == set(range(200))


def test_progress_bar_and_report(dataset_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    with hotset.loader(data, system="lru", cache=0.3, batch_size=50, progress=True) as loader:
        run_epoch(loader, 0)
        row = loader.report()[0]
    assert "lru epoch 0" in capsys.readouterr().err
    assert row["batches"] == 4 and row["requests"] == 200
    assert row["wall_seconds"] >= row["stall_seconds"] > 0
    assert row["samples_per_s"] == pytest.approx(200 / row["wall_seconds"])


def _ddp_rank(rank: int, init_file: str, dataset: str, out: str) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=2)
    try:
        data = hotset.open_dataset(dataset, decode="bytes")
        with hotset.loader(data, system="lru", cache=0.3, batch_size=16) as loader:
            assert (loader.rank, loader.world_size) == (rank, 2)
            ids = torch.cat([b[2] for b in run_epoch(loader, 0)])
        torch.save(ids, out)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def test_ranks_come_from_torch_distributed(dataset_dir: Path, tmp_path: Path) -> None:
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    outs = [str(tmp_path / f"rank{r}.pt") for r in range(2)]
    procs = [
        ctx.Process(target=_ddp_rank, args=(r, str(tmp_path / "pg"), str(dataset_dir), outs[r]))
        for r in range(2)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    shards = [set(torch.load(o).tolist()) for o in outs]
    assert not shards[0] & shards[1]
    assert shards[0] | shards[1] == set(range(200))
