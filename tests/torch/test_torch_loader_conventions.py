"""DataLoader conventions and the common mistakes, each a clear error naming the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

import hotset


def _data(dataset_dir: Path, decode: str = "image") -> Any:
    return hotset.open_dataset(dataset_dir, decode=decode)


def test_the_defaults_work_with_a_fifth_of_the_data_cached(dataset_dir: Path) -> None:
    data = _data(dataset_dir)
    with hotset.loader(data, batch_size=16) as loader:
        assert loader.capacity_bytes == int(0.2 * data.manifest.total_bytes)
        assert loader.dataset is data
        loader.set_epoch(0)
        assert sum(len(ids) for _, _, ids, _ in loader) == 200


def test_collate_inputs_gets_the_decoded_samples(dataset_dir: Path) -> None:
    def collate(samples: list[torch.Tensor]) -> dict[str, Any]:
        return {"images": torch.stack(samples), "count": len(samples)}

    with hotset.loader(_data(dataset_dir), batch_size=16, collate_inputs=collate) as loader:
        loader.set_epoch(0)
        batches = [(x, y, ids) for x, y, ids, _ in loader]
    assert all(b["images"].shape[1:] == (3, 8, 8) for b, _, _ in batches)
    assert sum(b["count"] for b, _, _ in batches) == 200
    labels = loader.data.manifest.labels
    assert all(y.tolist() == labels[ids.numpy()].tolist() for _, y, ids in batches)


def one_hot_collate(items: list[tuple[torch.Tensor, int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """A DataLoader-style collate_fn: (x, y) items in, (x, y) out, y one-hot."""
    xs, ys = zip(*items, strict=True)
    return torch.stack(xs), torch.nn.functional.one_hot(torch.tensor(ys), 10).float()


@pytest.mark.parametrize("workers", [0, 2])
def test_a_dataloader_collate_fn_works_unchanged(dataset_dir: Path, workers: int) -> None:
    """torch's default_collate, and a function that makes its own y, take (x, y) items
    as a DataLoader's do; the batch's x and y are what they return."""
    from torch.utils.data import default_collate

    data = _data(dataset_dir)
    labels = data.manifest.labels
    with hotset.loader(data, batch_size=16, num_workers=workers, collate_fn=default_collate) as ld:
        ld.set_epoch(0)
        for x, y, ids, _ in ld:
            assert torch.equal(x, torch.stack([data[i][0] for i in ids.tolist()]))
            assert y.tolist() == labels[ids.numpy()].tolist()
    with hotset.loader(data, batch_size=16, num_workers=workers, collate_fn=one_hot_collate) as ld:
        ld.set_epoch(0)
        x, y, ids, _ = next(iter(ld))
    assert x.shape == (16, 3, 8, 8) and y.shape == (16, 10)
    assert y.argmax(1).tolist() == labels[ids.numpy()].tolist()


def test_a_collate_fn_that_returns_no_pair_and_both_collates_are_named(
    dataset_dir: Path,
) -> None:
    with (
        hotset.loader(_data(dataset_dir), batch_size=16, collate_fn=len) as loader,
        pytest.raises(hotset.HotsetError, match=r"collate_fn must return the batch as \(x, y\)"),
    ):
        loader.set_epoch(0)
        next(iter(loader))
    with pytest.raises(hotset.HotsetError, match="not both"):
        hotset.loader(_data(dataset_dir), collate_fn=list, collate_inputs=list)


def test_pil_images_without_a_transform_name_both_fixes(dataset_dir: Path) -> None:
    with (
        hotset.loader(_data(dataset_dir, "pil"), batch_size=16) as loader,
        pytest.raises(hotset.HotsetError, match=r"collate_inputs=.*ToTensor"),
    ):
        loader.set_epoch(0)
        next(iter(loader))


def test_pil_images_with_a_transform(dataset_dir: Path) -> None:
    import numpy as np

    def to_tensor(image: Any) -> torch.Tensor:
        return torch.from_numpy(np.asarray(image, dtype=np.float32) / 255.0).permute(2, 0, 1)

    data = hotset.open_dataset(dataset_dir, decode="pil", transform=to_tensor)
    plain = _data(dataset_dir)
    with hotset.loader(data, batch_size=16) as loader:
        loader.set_epoch(0)
        x, _, ids, _ = next(iter(loader))
    assert torch.allclose(x, torch.stack([plain[i][0] for i in ids.tolist()]))


def test_a_scalar_loss_names_reduction_none(dataset_dir: Path) -> None:
    with hotset.loader(_data(dataset_dir), system="shade", batch_size=16) as loader:
        loader.set_epoch(0)
        _, _, ids, _ = next(iter(loader))
        with pytest.raises(hotset.HotsetError, match="reduction='none'"):
            loader.update(ids, torch.tensor(0.5))


def test_forgetting_update_with_a_learning_system_names_the_fix(dataset_dir: Path) -> None:
    with hotset.loader(_data(dataset_dir), system="shade", batch_size=16) as loader:
        loader.set_epoch(0)
        for _ in loader:
            pass
        loader.set_epoch(1)
        with pytest.raises(hotset.HotsetError, match=r"loader.update\(ids, loss\)"):
            next(iter(loader))


def test_a_system_that_does_not_learn_needs_no_update(dataset_dir: Path) -> None:
    with hotset.loader(_data(dataset_dir), system="lru", batch_size=16) as loader:
        for epoch in range(2):
            loader.set_epoch(epoch)
            for _ in loader:
                pass
        assert len(loader.report()) == 2


def test_ids_from_another_loader_are_refused(dataset_dir: Path) -> None:
    data = _data(dataset_dir)
    with (
        hotset.loader(data, system="shade", batch_size=16, seed=1) as one,
        hotset.loader(data, system="shade", batch_size=16, seed=2) as two,
    ):
        one.set_epoch(0)
        two.set_epoch(0)
        _, _, ids_one, _ = next(iter(one))
        _, _, ids_two, _ = next(iter(two))
        stranger = [i for i in ids_two.tolist() if i not in set(ids_one.tolist())][:1]
        with pytest.raises(hotset.HotsetError, match="not yielded by this loader"):
            one.update(torch.tensor(stranger), torch.ones(len(stranger)))


def test_summary_before_any_epoch_names_the_system(dataset_dir: Path) -> None:
    with hotset.loader(_data(dataset_dir), system="lru", batch_size=16) as loader:
        lines = loader.summary().splitlines()
    assert lines[0] == "system lru" and "distinct trained" in lines[1]
    assert lines[2:] == ["(no epoch run yet)"]


def test_summary_is_a_table_with_coverage_loss_and_accuracy(dataset_dir: Path) -> None:
    with hotset.loader(_data(dataset_dir), system="shade", batch_size=16) as loader:
        for epoch in range(2):
            loader.set_epoch(epoch)
            for _, _, ids, _ in loader:
                loader.update(ids, torch.full((len(ids),), 0.5))
            loader.record_validation(0.25)
        loader.set_epoch(2)
        for _, _, ids, _ in loader:  # closes epoch 1
            loader.update(ids, torch.full((len(ids),), 0.5))
        table = loader.summary()
    lines = table.splitlines()
    assert lines[0] == "system shade"  # the spec (no options given)
    assert lines[1].startswith("guard coverage_floor=0.1: every sample trained")  # on by default
    assert "distinct trained" in lines[2] and "val acc" in lines[2]
    assert len(lines) == 6  # system, guard, header + 3 epochs
    assert "0.5000" in lines[3] and "25.00%" in lines[3]
