"""Datasets as torchvision gives them (issue #28): labels and PIL modes, over real files.

``from_dataset(ds, read=...)`` never reads an item, so it used to give every sample
label -1 without a word (training then failed in the loss); ``decode="pil"`` kept
grayscale files in mode L where torchvision's loader converts to RGB (``Normalize``
then failed on the shape). Real PNG and JPEG files, real DataLoader workers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from tv_support import MODES, ImageFolderLike, SamplesOnly, Unlabeled, to_tensor, write_tree

import hotset
from hotset.data import import_folder

CLASSES = len(MODES)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tree(tmp_path_factory.mktemp("tv") / "train")


def _train_one_epoch(data: Any, workers: int) -> list[int]:
    """A cross-entropy step per batch, as a training script does; the labels it saw."""
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.LazyLinear(CLASSES))
    seen: list[int] = []
    with hotset.loader(data, system="lru", cache="100%", batch_size=8, num_workers=workers) as ld:
        ld.set_epoch(0)
        for x, y, ids, _ in ld:
            loss = F.cross_entropy(model(x), y, reduction="none")
            ld.update(ids, loss.detach())
            seen += y.tolist()
    return seen


@pytest.mark.parametrize("cls", [ImageFolderLike, SamplesOnly])
def test_read_without_labels_takes_them_from_targets_or_samples(tree: Path, cls: type) -> None:
    ds = cls(tree)
    data = hotset.from_dataset(ds, read=ds.read, decode="pil", transform=to_tensor)
    want = [label for _, label in ds.samples]
    assert data.manifest.labels.tolist() == want
    assert sorted(_train_one_epoch(data, workers=2)) == sorted(want)


def test_read_with_no_labels_anywhere_names_labels_before_reading(tree: Path) -> None:
    ds = Unlabeled(tree)
    with pytest.raises(hotset.HotsetError) as caught:
        hotset.from_dataset(ds, read=ds.read, decode="bytes")
    message = str(caught.value)
    assert message.startswith("from_dataset(Unlabeled): no labels")
    assert "hotset.from_dataset(ds, ..., labels=[the label of index 0, 1, ...])" in message
    assert "labels=None for data without labels" in message
    assert ds.reads == 0  # refused before the measuring pass, not an epoch of reads later


def test_labels_none_says_there_are_none(tree: Path) -> None:
    ds = Unlabeled(tree)
    data = hotset.from_dataset(ds, read=ds.read, decode="bytes", labels=None)
    assert (data.manifest.labels == -1).all()
    given = hotset.from_dataset(ds, read=ds.read, decode="bytes", labels=[2] * len(ds))
    assert (given.manifest.labels == 2).all()


def test_a_target_transform_is_not_bypassed(tree: Path) -> None:
    """read= never calls __getitem__, so .targets would not be what ds[i][1] gives."""
    ds = ImageFolderLike(tree, target_transform=lambda y: y + 10)
    with pytest.raises(hotset.HotsetError, match=r"target_transform, which read= would bypass"):
        hotset.from_dataset(ds, read=ds.read, decode="pil")
    given = [ds[i][1] for i in range(len(ds))]  # what the user passes instead
    data = hotset.from_dataset(ds, read=ds.read, decode="pil", labels=given)
    assert data.manifest.labels.tolist() == [y + 10 for y in ds.targets]


def test_items_that_are_no_pairs_need_labels(tree: Path) -> None:
    """Without read=, items that carry no label are refused too (naming the index)."""
    ds = Unlabeled(tree)
    with pytest.raises(hotset.HotsetError, match=r"Unlabeled\[0\] is no \(input, int label\)"):
        hotset.from_dataset(ds)
    assert (hotset.from_dataset(ds, labels=None).manifest.labels == -1).all()
    items = [(torch.zeros(2), i % 3) for i in range(9)]
    with pytest.raises(hotset.HotsetError, match="sizes= reads nothing"):
        hotset.from_dataset(items, sizes=[64] * 9)


@pytest.mark.parametrize(
    ("labels", "match"),
    [
        ([0, 1], r"labels must have 24 entries \(one per index\), got 2"),
        ([0.5] * 24, r"labels\[0\] = 0.5 is not an integer label"),
        ([-2] * 24, r"labels\[0\] = -2 is not a label"),
        (["cat"] * 24, "labels must be integer labels, got dtype <U3"),
        ([True] * 24, "labels must be integer labels, got dtype bool"),
    ],
)
def test_bad_labels_are_named(tree: Path, labels: Any, match: str) -> None:
    ds = ImageFolderLike(tree)
    with pytest.raises(hotset.HotsetError, match=match):
        hotset.from_dataset(ds, read=ds.read, decode="pil", labels=labels)


def test_integer_valued_floats_are_labels(tree: Path) -> None:
    ds = ImageFolderLike(tree)
    data = hotset.from_dataset(ds, read=ds.read, decode="pil", labels=np.ones(len(ds)))
    assert data.manifest.labels.dtype == np.int64 and (data.manifest.labels == 1).all()


# -- decode="pil": RGB as torchvision's loader gives it ------------------------------


def test_pil_is_rgb_as_torchvision_gives_it(tree: Path) -> None:
    ds = ImageFolderLike(tree)
    data = hotset.from_dataset(ds, read=ds.read, decode="pil")
    for i in range(len(ds)):
        image, label = data[i]
        want, want_label = ds[i]
        assert image.mode == "RGB" and label == want_label
        assert np.array_equal(np.asarray(image), np.asarray(want))


def test_a_grayscale_set_trains_through_normalize(tree: Path) -> None:
    """A three-channel Normalize after decode="pil", in DataLoader workers."""
    import_folder(tree, out=tree.parent / "manifest")
    data = hotset.open_dataset(tree.parent / "manifest", decode="pil", transform=to_tensor)
    gray = [i for i, key in enumerate(data.manifest.keys) if "_l/" in key]
    assert gray and _train_one_epoch(data.subset(gray), workers=2)


def test_pil_keep_keeps_the_files_mode(tree: Path) -> None:
    ds = ImageFolderLike(tree)
    data = hotset.from_dataset(ds, read=ds.read, decode="pil-keep")
    modes = {data[i][0].mode for i in range(len(ds))}
    assert modes == set(MODES)
    with pytest.raises(hotset.HotsetError, match="image, bytes, pil, pil-keep or a callable"):
        hotset.from_dataset(ds, read=ds.read, decode="PIL")
    with pytest.raises(hotset.HotsetError, match=r"decode='pil-keep': cannot identify"):
        hotset.from_dataset(ds, read=lambda i: b"not an image", decode="pil-keep")[0]
