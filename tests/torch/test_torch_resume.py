"""state_dict round trips: mid-epoch, at epoch end and from scratch.

Each resumed run is compared with an uninterrupted one of the same seed: the
remaining batches of the interrupted epoch and the whole next epoch must be
the same samples, with the same decisions, and the bytes must still be exact
(the resumed loader starts with an empty cache and rebuilds it lazily).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch_support import loss_of, run_epoch

import hotset

CONFIG: dict[str, Any] = {"cache": 0.25, "batch_size": 16, "seed": 7}


def _loader(dataset_dir: Path, system: str, workers: int) -> hotset.torch.HotsetLoader:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    return hotset.loader(data, system=system, num_workers=workers, **CONFIG)


def _through_bytes(state: dict[str, Any]) -> dict[str, Any]:
    """What a checkpoint goes through: torch.save / torch.load."""
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=False)


def _served(batches: list) -> list[int]:
    return np.concatenate([b[2].numpy() for b in batches]).tolist() if batches else []


def _uninterrupted(dataset_dir: Path, system: str, workers: int) -> tuple[list, list]:
    with _loader(dataset_dir, system, workers) as loader:
        served, logs = [], []
        for epoch in range(3):
            served.append(_served(run_epoch(loader, epoch)))
            logs.append(loader.decisions().rows())
    return served, logs


@pytest.mark.parametrize(
    ("system", "workers", "stop"), [("shade", 0, 5), ("lru", 2, 2), ("shade", 2, 3)]
)
def test_resume_mid_epoch(dataset_dir: Path, system: str, workers: int, stop: int) -> None:
    want_served, want_logs = _uninterrupted(dataset_dir, system, workers)
    with _loader(dataset_dir, system, workers) as first:
        run_epoch(first, 0)
        first.set_epoch(1)
        head = []
        for i, (_, _, ids, _) in enumerate(first):
            first.update(ids, torch.from_numpy(loss_of(ids.numpy(), 1)))
            head.extend(ids.tolist())
            if i + 1 == stop:
                break
        state = _through_bytes(first.state_dict())
    assert head == want_served[1][: len(head)]
    with _loader(dataset_dir, system, workers) as second:
        second.load_state_dict(state)
        tail_batches = run_epoch(second, 1)
        assert head + _served(tail_batches) == want_served[1]
        assert second.decisions().rows() == want_logs[1]
        row = second.report()[-1]
        assert row["epoch"] == 1 and row["requests"] == len(want_served[1])
        assert row["rebuild_reads"] > 0  # the emptied cache was refilled from storage
        store = second.data.store
        keys = second.data.manifest.keys
        for x, _, ids, _ in tail_batches:
            assert x == [store.read(keys[s]) for s in ids.tolist()]
        assert _served(run_epoch(second, 2)) == want_served[2]
        assert second.decisions().rows() == want_logs[2]
        assert [r["epoch"] for r in second.report()] == [0, 1, 2]


def test_resume_at_epoch_end_and_from_scratch(dataset_dir: Path) -> None:
    want_served, want_logs = _uninterrupted(dataset_dir, "shade", 0)
    with _loader(dataset_dir, "shade", 0) as first:
        scratch = _through_bytes(first.state_dict())
        run_epoch(first, 0)  # exhausted: the epoch is over but not yet closed
        end = _through_bytes(first.state_dict())
    with _loader(dataset_dir, "shade", 0) as second:
        second.load_state_dict(end)
        assert _served(run_epoch(second, 1)) == want_served[1]
        assert second.decisions().rows() == want_logs[1]
    with _loader(dataset_dir, "shade", 0) as third:
        third.load_state_dict(scratch)
        assert [_served(run_epoch(third, e)) for e in range(3)] == want_served


def test_state_of_another_loader_is_refused(dataset_dir: Path) -> None:
    with _loader(dataset_dir, "shade", 0) as first:
        state = first.state_dict()
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    with (
        hotset.loader(data, system="lru", cache=0.25, batch_size=16, seed=7) as other,
        pytest.raises(hotset.HotsetError, match="system='shade'"),
    ):
        other.load_state_dict(state)


@pytest.mark.parametrize(("rank", "world"), [(0, 4), (1, 2)])
def test_a_rank_resumes_only_its_own_state_at_its_own_world_size(
    dataset_dir: Path, rank: int, world: int
) -> None:
    """Not elastic: another world size (or another rank's state) is refused, named."""
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    with hotset.loader(data, system="lru", rank=0, world_size=2, **CONFIG) as first:
        run_epoch(first, 0)
        state = _through_bytes(first.state_dict())
    with (
        hotset.loader(data, system="lru", rank=rank, world_size=world, **CONFIG) as other,
        pytest.raises(hotset.HotsetError, match=f"saved by rank 0 of 2, loaded by rank {rank}"),
    ):
        other.load_state_dict(state)
    with hotset.loader(data, system="lru", rank=0, world_size=2, **CONFIG) as same:
        same.load_state_dict(state)  # the same rank at the same size resumes
