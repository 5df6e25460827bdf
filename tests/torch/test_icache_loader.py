"""iCACHE through the real loader: packages written and read as files, byte-exact samples,
the decisions and counts of the engine's twin, and no package left behind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from torch_support import bytes_and_twin

import hotset
from hotset.engine.counters import COUNTER_KEYS, EpochCounts
from hotset.engine.packages import DEFAULT_PREFIX
from hotset.engine.planner import Planner
from hotset.errors import HotsetError
from hotset.policies.base import Outcome

EPOCHS, BATCH, SEED = 4, 16, 2
OPTIONS = {"warm_up": 1}  # selective epochs from epoch 1: the L-cache is used early


def _loss(ids: np.ndarray) -> np.ndarray:
    return ((ids * 7919) % 101) / 100.0 + 0.01


def _loader(data: Any, system: str, capacity: int, workers: int, **options: Any) -> Any:
    return hotset.loader(
        data,
        system=system,
        system_options=OPTIONS,
        cache=capacity,
        batch_size=BATCH,
        num_workers=workers,
        seed=SEED,
        **options,
    )


@pytest.mark.parametrize("system", ["icache", "icache_static_pack"])
@pytest.mark.parametrize("workers", [0, 2, 4])
def test_icache_reads_packages_byte_exact_as_its_twin_decides(
    dataset_dir: Path, system: str, workers: int
) -> None:
    data, truth, capacity, twin = bytes_and_twin(
        dataset_dir, system, frac=0.3, seed=SEED, **OPTIONS
    )
    n = len(data.manifest)
    sizes = np.asarray(data.manifest.sizes, dtype=np.int64)
    with _loader(data, system, capacity, workers) as loader:
        planner = Planner(twin, n=n, batch_size=BATCH, lag=loader.lag, sizes=sizes)
        want_counts = []
        for epoch in range(EPOCHS):
            loader.set_epoch(epoch)
            for x, _y, ids, _w in loader:
                for blob, sid in zip(x, ids.tolist(), strict=True):
                    assert blob == truth[sid], f"epoch {epoch}: id {sid} bytes differ"
                loader.update(ids, _loss(ids.numpy()))
            planner.begin(epoch)
            counts = EpochCounts()
            for plan in planner.plans():
                counts.add_plan(plan)
                planner.give(plan.index, plan.served, _loss(plan.served))
            planner.finish(val_accuracy=None)
            assert loader.decisions().rows() == planner.log.rows(), f"epoch {epoch}"
            want_counts.append(counts)
        rows = loader.report()
        folder = dataset_dir / DEFAULT_PREFIX
        if system == "icache_static_pack":  # read every epoch: kept until close()
            assert any(folder.rglob("*.pkg"))
    assert not any(folder.rglob("*.pkg"))  # and the run's folder goes with the loader
    for got, want in zip(rows, want_counts, strict=True):
        for key in COUNTER_KEYS:
            assert got[key] == getattr(want, key), (key, got[key], getattr(want, key))
    assert sum(r["unit_reads"] for r in rows) > 0 and sum(r["pack_reads"] for r in rows) > 0
    assert sum(r["substitutions"] for r in rows) > 0
    assert all(r["exact_hits"] + r["substitutions"] <= r["requests"] for r in rows)
    assert {int(o) for o in Outcome} >= {int(row[1]) for row in loader.decisions().rows()}


@pytest.mark.parametrize("workers", [0, 2])
def test_a_dynamic_package_file_is_deleted_once_its_batch_is_trained(
    dataset_dir: Path, workers: int
) -> None:
    data, _truth, capacity, twin = bytes_and_twin(
        dataset_dir, "icache", frac=0.3, seed=SEED, **OPTIONS
    )
    n = len(data.manifest)
    sizes = np.asarray(data.manifest.sizes, dtype=np.int64)
    folder = dataset_dir / DEFAULT_PREFIX
    with _loader(data, "icache", capacity, workers) as loader:
        planner = Planner(twin, n=n, batch_size=BATCH, lag=loader.lag, sizes=sizes)
        read: set[int] = set()
        seen_files: set[str] = set()
        for epoch in range(EPOCHS):
            loader.set_epoch(epoch)
            planner.begin(epoch)
            plans = iter(planner.plans())
            for _x, _y, ids, _w in loader:
                plan = next(plans)  # the twin's plan of this very batch
                read.update(plan.unit_reads.tolist())
                planner.give(plan.index, plan.served, _loss(plan.served))
                files = {f.name for f in folder.rglob("*.pkg")}
                seen_files |= files
                # no file left of a package a trained batch read
                assert not {f"p{u:08d}.pkg" for u in read} & files
                loader.update(ids, _loss(ids.numpy()))
            planner.finish(val_accuracy=None)
        writer = loader._parts.packer
        assert writer is not None and read and writer.deleted == len(read)
        assert seen_files  # files did exist while they were needed


@pytest.mark.parametrize("workers", [0, 2])
def test_packages_go_to_package_dir_and_the_data_store_is_left_untouched(
    dataset_dir: Path, tmp_path: Path, workers: int
) -> None:
    data, truth, capacity, _twin = bytes_and_twin(
        dataset_dir, "icache_static_pack", frac=0.3, seed=SEED, **OPTIONS
    )
    before = sorted(p.relative_to(dataset_dir) for p in dataset_dir.rglob("*"))
    pkg_dir = tmp_path / "packages"
    with _loader(data, "icache_static_pack", capacity, workers, package_dir=pkg_dir) as loader:
        for epoch in range(EPOCHS):
            loader.set_epoch(epoch)
            for x, _y, ids, _w in loader:
                for blob, sid in zip(x, ids.tolist(), strict=True):
                    assert blob == truth[sid]
                loader.update(ids, _loss(ids.numpy()))
        assert any(pkg_dir.rglob("*.pkg"))  # written here, read back from here
        assert sum(r["unit_reads"] for r in loader.report()) > 0
        assert sorted(p.relative_to(dataset_dir) for p in dataset_dir.rglob("*")) == before
    assert not any(pkg_dir.rglob("*.pkg"))


def test_package_dir_is_refused_where_nothing_is_packed(dataset_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(HotsetError, match="builds no packages"):
        hotset.loader(dataset_dir, system="lru", package_dir=tmp_path / "p")
    with pytest.raises(HotsetError, match="package_dir must be a directory path"):
        hotset.loader(dataset_dir, system="icache", package_dir=3)  # type: ignore[arg-type]
