"""The loader and the simulator's loop make the same decisions for the same seed.

The reference is a second, identical System driven by a plain loop (the
simulator's order of calls: access every sample of a batch, train, feed the
losses back), with feedback applied ``num_workers * prefetch_factor`` batches
late -- the lag the loader documents. Every access is compared: outcome,
served id, admission and evictions.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from torch_support import reference_epoch, run_epoch

import hotset
from hotset.policies.base import Budget
from hotset.systems.registry import build_system


@pytest.mark.parametrize(
    ("system", "workers", "prefetch"),
    [("shade", 0, None), ("shade", 2, 2), ("lru", 2, 1), ("emul_quiv", 0, None)],
)
def test_same_decisions_as_simulator(
    dataset_dir: Path, system: str, workers: int, prefetch: int | None
) -> None:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    manifest = data.manifest
    capacity = int(0.25 * manifest.total_bytes)
    batch_size = 16
    with hotset.loader(
        data,
        system=system,
        cache=capacity,
        batch_size=batch_size,
        num_workers=workers,
        prefetch_factor=prefetch,
        seed=5,
    ) as loader:
        twin = build_system(
            system,
            n=len(manifest),
            budget=Budget(capacity_bytes=capacity, sizes=np.asarray(manifest.sizes)),
            seed=5,
            batch_size=batch_size,
        )
        assert loader.lag == workers * (prefetch or 0)
        kinds = set()
        for epoch in range(3):
            batches = run_epoch(loader, epoch)
            want = reference_epoch(twin, epoch, batch_size=batch_size, lag=loader.lag)
            got = loader.decisions().rows()
            assert got == want, f"epoch {epoch}: loader and simulator disagree"
            served = np.concatenate([b[2].numpy() for b in batches]).tolist()
            assert served == [row[2] for row in want]
            kinds |= {row[1] for row in want}
        assert len(kinds) >= 2  # the comparison covered hits and misses, not one outcome


def test_lag_matters(dataset_dir: Path) -> None:
    """The comparison can fail: the same run with the wrong lag makes other decisions."""
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    manifest = data.manifest
    capacity = int(0.25 * manifest.total_bytes)
    with hotset.loader(data, system="shade", cache=capacity, batch_size=16, seed=5) as loader:
        twin = build_system(
            "shade",
            n=len(manifest),
            budget=Budget(capacity_bytes=capacity, sizes=np.asarray(manifest.sizes)),
            seed=5,
            batch_size=16,
        )
        same = []
        for epoch in range(3):
            run_epoch(loader, epoch)
            want = reference_epoch(twin, epoch, batch_size=16, lag=6)
            same.append(loader.decisions().rows() == want)
        assert not all(same)
