"""``hotset.eval_loader``: every sample once, in order, uncached, unsharded unless asked."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import hotset


def test_every_sample_once_in_order(dataset_dir: Path) -> None:
    data = hotset.open_dataset(dataset_dir)
    labels = [int(v) for v in data.manifest.labels]
    got_y: list[int] = []
    for x, y in hotset.eval_loader(data, batch_size=64):
        assert x.dtype == torch.float32 and x.shape[1:] == (3, 8, 8)
        got_y += y.tolist()
    assert got_y == labels


def test_shards_split_the_set_when_asked(dataset_dir: Path) -> None:
    data = hotset.open_dataset(dataset_dir)
    seen = []
    for rank in range(2):
        loader = hotset.eval_loader(data, batch_size=32, shard=True, rank=rank, world_size=2)
        seen.append(sum(len(y) for _, y in loader))
    assert seen == [100, 100]
    with pytest.raises(hotset.HotsetError, match="shard=True needs"):
        hotset.eval_loader(data, shard=True)


def test_a_location_and_a_dataset_item(dataset_dir: Path) -> None:
    data = hotset.open_dataset(dataset_dir, decode="pil")
    image, label = data[5]
    assert image.size == (8, 8) and label == int(data.manifest.labels[5])
    assert data[-1][1] == int(data.manifest.labels[199])
    with pytest.raises(IndexError):
        data[200]
    assert sum(len(y) for _, y in hotset.eval_loader(str(dataset_dir), batch_size=50)) == 200


def test_a_corrupted_file_is_refused_by_item_access(dataset_dir: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(dataset_dir, copy)
    data = hotset.open_dataset(copy)
    path = copy / data.manifest.keys[7]
    path.write_bytes(path.read_bytes()[:-1] + b"\x00")
    with pytest.raises(hotset.IntegrityError, match="id 7"):
        data[7]
