"""Batches as a DataLoader gives them: ``batch="xy"`` and ``batch="dict"``.

A loop written for a plain DataLoader unpacks ``(x, y)``; with ``batch="xy"``
it runs unchanged and gives per-sample losses through ``loader.last_ids``. The
shape must change nothing else: a learning system (shade) and a substituting
one (quiver) make the same decisions on the same samples as with the default
``(x, y, ids, w)``, with and without DataLoader workers, and a checkpoint taken
in one mode resumes in the other.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import torch
from torch_support import loss_of

import hotset
from hotset.errors import HotsetError

CONFIG: dict[str, Any] = {"cache": 0.25, "batch_size": 16, "seed": 7}


def _loader(dataset_dir: Path, system: str, workers: int, **options: Any) -> Any:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    return hotset.loader(data, system=system, num_workers=workers, **CONFIG, **options)


def _epoch(loader: Any, epoch: int, *, stop: int | None = None) -> list[tuple[Any, ...]]:
    """One epoch (or its first ``stop`` batches) as (x, y, ids) rows, whatever the shape.

    The default shape's loop takes the ids from the batch; ``"xy"``'s loop is the
    plain DataLoader loop and takes them from ``loader.last_ids``; ``"dict"``'s
    from the mapping.
    """
    loader.set_epoch(epoch)
    shape = loader.options.batch
    rows = []
    for i, batch in enumerate(loader):
        if shape == "xy":
            x, y = batch
            ids = loader.last_ids
        elif shape == "dict":
            x, y, ids = batch["x"], batch["y"], batch["ids"]
        else:
            x, y, ids, _w = batch
        loader.update(ids, torch.from_numpy(loss_of(ids.numpy(), epoch)))
        rows.append((x, y.tolist(), ids.tolist()))
        if stop is not None and i + 1 == stop:
            break
    return rows


@pytest.mark.parametrize("system", ["shade", "quiver"])
@pytest.mark.parametrize("workers", [0, 2])
def test_xy_and_dict_batches_train_as_the_default_does(
    dataset_dir: Path, system: str, workers: int
) -> None:
    runs = {}
    for shape in ("tuple", "xy", "dict"):
        with _loader(dataset_dir, system, workers, batch=shape) as loader:
            epochs = [_epoch(loader, e) for e in range(2)]
            runs[shape] = (epochs, loader.decisions().rows(), loader.report()[-1]["requests"])
    want_epochs, want_rows, requests = runs["tuple"]
    assert requests > 0 and len(want_epochs[1]) > 1
    for shape in ("xy", "dict"):
        epochs, rows, _ = runs[shape]
        assert epochs == want_epochs, shape  # same bytes, labels and ids, batch by batch
        assert rows == want_rows, shape  # and the same decisions


@pytest.mark.parametrize("workers", [0, 2])
def test_an_xy_batch_is_what_a_dataloader_gives(dataset_dir: Path, workers: int) -> None:
    with _loader(dataset_dir, "shade", workers, batch="xy") as loader:
        with pytest.raises(HotsetError, match="last_ids: no batch yielded yet"):
            _ = loader.last_ids
        for batch in loader:
            assert isinstance(batch, tuple) and len(batch) == 2
            x, y = batch
            ids = loader.last_ids
            assert ids.dtype == torch.int64 and len(ids) == len(x) == len(y)
            store, keys = loader.data.store, loader.data.manifest.keys
            assert x == [store.read(keys[s]) for s in ids.tolist()]
            assert y.tolist() == [int(loader.data.manifest.labels[s]) for s in ids.tolist()]
            loader.update(loader.last_ids, torch.from_numpy(loss_of(ids.numpy(), 0)))
        assert loader.report()[-1]["unique_ids_trained"] > 0


def test_a_dict_batch_holds_x_y_ids_and_w(dataset_dir: Path) -> None:
    with _loader(dataset_dir, "shade[unbiased=true]", 0, batch="dict") as loader:
        weights = []
        for batch in loader:
            assert sorted(batch) == ["ids", "w", "x", "y"]
            assert len(batch["ids"]) == len(batch["w"]) == len(batch["x"])
            weights += batch["w"].tolist()
            loader.update(batch["ids"], torch.from_numpy(loss_of(batch["ids"].numpy(), 0)))
    assert weights and all(w > 0 for w in weights)


def test_xy_is_refused_for_a_system_that_weights_losses(dataset_dir: Path) -> None:
    with pytest.raises(HotsetError, match=r"batch='xy' .* without the loss weights w.*'dict'"):
        _loader(dataset_dir, "shade[unbiased=true]", 0, batch="xy")


@pytest.mark.parametrize("bad", ["list", "XY", 2, None])
def test_a_bad_batch_shape_names_itself_and_the_valid_ones(dataset_dir: Path, bad: Any) -> None:
    with pytest.raises(HotsetError, match=rf"batch must be one of 'tuple', 'xy', 'dict'.*{bad!r}"):
        _loader(dataset_dir, "lru", 0, batch=bad)


def _through_torch_save(state: dict[str, Any]) -> dict[str, Any]:
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    return torch.load(buf)  # weights_only=True, torch's default


@pytest.mark.parametrize(("system", "workers"), [("shade", 2), ("quiver", 0), ("shade", 0)])
def test_an_xy_loader_resumes_exactly(dataset_dir: Path, system: str, workers: int) -> None:
    with _loader(dataset_dir, system, workers) as whole:
        want = [_epoch(whole, e) for e in range(3)]
        want_rows = whole.decisions().rows()
    with _loader(dataset_dir, system, workers, batch="xy") as first:
        _epoch(first, 0)
        head = _epoch(first, 1, stop=3)
        state = _through_torch_save(first.state_dict())
    assert head == want[1][:3]
    with _loader(dataset_dir, system, workers, batch="xy") as second:
        second.load_state_dict(state)
        assert head + _epoch(second, 1) == want[1]
        assert _epoch(second, 2) == want[2]
        assert second.decisions().rows() == want_rows
