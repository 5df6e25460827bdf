"""iCACHE's optional rules (``full_fill``, ``l_floor``) through the real loader: the
loader makes its twin's decisions, delivers byte-exact samples, and a full epoch under
``full_fill`` substitutes nothing (every sample trained once)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from torch_support import bytes_and_twin

import hotset
from hotset.engine.planner import Planner

BATCH, SEED = 16, 2
#: selective epochs 1 and 2 (a 32-loss window, so IIS really selects), epoch 3 full
OPTIONS = {"warm_up": 1, "window": 32, "full_fill": True, "l_floor": True}


def _loss(ids: np.ndarray) -> np.ndarray:
    return ((ids * 7919) % 101) / 100.0 + 0.01


@pytest.mark.parametrize("workers", [0, 2])
def test_full_fill_and_l_floor_through_the_loader_as_the_twin_decides(
    dataset_dir: Path, workers: int
) -> None:
    data, truth, capacity, twin = bytes_and_twin(
        dataset_dir, "icache", frac=0.3, seed=SEED, **OPTIONS
    )
    n = len(data.manifest)
    sizes = np.asarray(data.manifest.sizes, dtype=np.int64)
    with hotset.loader(
        data,
        system="icache",
        system_options=OPTIONS,
        cache=capacity,
        batch_size=BATCH,
        num_workers=workers,
        seed=SEED,
    ) as loader:
        planner = Planner(twin, n=n, batch_size=BATCH, lag=loader.lag, sizes=sizes)
        served: list[list[int]] = []
        for epoch in range(4):
            loader.set_epoch(epoch)
            mine: list[int] = []
            for x, _y, ids, _w in loader:
                for blob, sid in zip(x, ids.tolist(), strict=True):
                    assert blob == truth[sid], f"epoch {epoch}: id {sid} bytes differ"
                loader.update(ids, _loss(ids.numpy()))
                mine += ids.tolist()
            served.append(mine)
            planner.begin(epoch)
            for plan in planner.plans():
                planner.give(plan.index, plan.served, _loss(plan.served))
            planner.finish(val_accuracy=None)
            assert loader.decisions().rows() == planner.log.rows(), f"epoch {epoch}"
        rows = loader.report()
    assert sum(r["substitutions"] for r in rows[1:3]) > 0  # selective epochs substitute
    assert rows[3]["substitutions"] == 0  # the full epoch does not
    assert sorted(served[3]) == list(range(n))  # and trains every sample once
