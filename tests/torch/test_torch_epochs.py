"""When an epoch begins and ends: an iterator that yields nothing consumes none.

Frameworks make iterators they never draw from: Lightning calls ``iter()`` once
to check that the loader is iterable and drops it, and it makes the epoch's
iterator before its epoch-start hooks (where ``set_epoch`` is called). Each
test runs a loader through such a sequence beside one that never saw the extra
iterator, and asks for the same epochs, the same batches and the same
decisions (docs/usage.md, "Epochs").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch_support import loss_of, run_epoch

import hotset

CONFIG: dict[str, Any] = {"cache": 0.25, "batch_size": 16, "seed": 5}


def _loader(dataset_dir: Path, system: str, workers: int) -> hotset.torch.HotsetLoader:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    return hotset.loader(data, system=system, num_workers=workers, **CONFIG)


def _served(batches: list[tuple[Any, ...]]) -> list[int]:
    return np.concatenate([b[2].numpy() for b in batches]).tolist()


def _drain(it: Any, loader: hotset.torch.HotsetLoader, epoch: int) -> list[int]:
    """Every batch of ``it``, with per-sample losses given back as a training loop does."""
    served: list[int] = []
    for _x, _y, ids, _w in it:
        loader.update(ids, torch.from_numpy(loss_of(ids.numpy(), epoch)))
        served.extend(ids.tolist())
    return served


def _reference(dataset_dir: Path, system: str, workers: int, epochs: int) -> tuple[list, list]:
    """Epochs 0.. with set_epoch before each iter and no other iterator: what is served
    and what was decided."""
    with _loader(dataset_dir, system, workers) as loader:
        served, logs = [], []
        for epoch in range(epochs):
            served.append(_served(run_epoch(loader, epoch)))
            logs.append(loader.decisions().rows())
    return served, logs


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("system", ["shade", "lru"])
def test_a_discarded_iterator_consumes_no_epoch(
    dataset_dir: Path, system: str, workers: int
) -> None:
    """Lightning's order: iter() to check and drop, iter() for the epoch, set_epoch, batches."""
    want_served, want_logs = _reference(dataset_dir, system, workers, epochs=2)
    with _loader(dataset_dir, system, workers) as loader:
        iter(loader)  # made to check the loader, never drawn from
        got_served, got_logs = [], []
        for epoch in range(2):
            it = iter(loader)
            loader.set_epoch(epoch)  # after iter(), before the first batch
            got_served.append(_drain(it, loader, epoch))
            got_logs.append(loader.decisions().rows())
        assert [row["epoch"] for row in loader.report()] == [0, 1]
    assert got_served == want_served
    assert got_logs == want_logs


@pytest.mark.parametrize("workers", [0, 2])
def test_an_iterator_closed_before_its_first_batch_consumes_no_epoch(
    dataset_dir: Path, workers: int
) -> None:
    """Without set_epoch, epochs count the iterators that yielded, not those made."""
    want_served, want_logs = _reference(dataset_dir, "shade", workers, epochs=2)
    with _loader(dataset_dir, "shade", workers) as loader:
        got_served, got_logs = [], []
        for epoch in range(2):
            iter(loader).close()  # type: ignore[attr-defined]
            iter(loader)  # and one simply dropped
            got_served.append(_drain(iter(loader), loader, epoch))
            got_logs.append(loader.decisions().rows())
        assert [row["epoch"] for row in loader.report()] == [0, 1]
        assert len(loader.system.train_loss) == 1  # epoch 0 closed; epoch 1 closes later
    assert got_served == want_served
    assert got_logs == want_logs


@pytest.mark.parametrize("workers", [0, 2])
def test_set_epoch_between_iter_and_the_first_batch_names_that_epoch(
    dataset_dir: Path, workers: int
) -> None:
    with _loader(dataset_dir, "lru", workers) as reference:
        want = _served(run_epoch(reference, 3, feedback=False))
    with _loader(dataset_dir, "lru", workers) as loader:
        it = iter(loader)
        loader.set_epoch(3)
        assert len(loader) == len(want) // CONFIG["batch_size"] + 1
        got = [i for _x, _y, ids, _w in it for i in ids.tolist()]
        assert [row["epoch"] for row in loader.report()] == [3]
    assert got == want


@pytest.mark.parametrize("workers", [0, 2])
def test_a_resumed_epoch_survives_a_discarded_iterator(dataset_dir: Path, workers: int) -> None:
    """A checkpoint restored, then Lightning's check iter(): the epoch still goes on."""
    want_served, want_logs = _reference(dataset_dir, "shade", workers, epochs=2)
    with _loader(dataset_dir, "shade", workers) as first:
        run_epoch(first, 0)
        first.set_epoch(1)
        head: list[int] = []
        for i, (_x, _y, ids, _w) in enumerate(first):
            first.update(ids, torch.from_numpy(loss_of(ids.numpy(), 1)))
            head.extend(ids.tolist())
            if i == 2:
                break
        state = first.state_dict()
    with _loader(dataset_dir, "shade", workers) as second:
        second.load_state_dict(state)
        iter(second)  # dropped
        tail = _drain(iter(second), second, 1)
        assert head + tail == want_served[1]
        assert second.decisions().rows() == want_logs[1]


@pytest.mark.parametrize("workers", [0, 2])
def test_a_state_loaded_before_the_first_batch_is_the_one_the_iterator_goes_on_from(
    dataset_dir: Path, workers: int
) -> None:
    """Lightning makes the epoch's iterator, then a callback restores the loader."""
    want_served, _ = _reference(dataset_dir, "shade", workers, epochs=2)
    with _loader(dataset_dir, "shade", workers) as first:
        run_epoch(first, 0)
        first.set_epoch(1)
        it = iter(first)
        head: list[int] = []
        for _ in range(2):
            _x, _y, ids, _w = next(it)
            first.update(ids, torch.from_numpy(loss_of(ids.numpy(), 1)))
            head.extend(ids.tolist())
        state = first.state_dict()
    with _loader(dataset_dir, "shade", workers) as second:
        it = iter(second)
        second.load_state_dict(state)
        assert head + _drain(it, second, 1) == want_served[1]
