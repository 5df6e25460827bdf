"""A user's own map-style Dataset through hotset: ids are indices, bytes are what it returns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from user_support import Augmenting, Folder, Stream

import hotset
from hotset.torch.user import encode_item


def _folder(dataset_dir: Path, cls: type = Folder) -> Any:
    manifest = hotset.open_dataset(dataset_dir, decode="bytes").manifest
    return cls(dataset_dir, manifest.keys, [int(v) for v in manifest.labels])


def _epochs(loader: Any, epochs: int) -> list[dict[str, Any]]:
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        seen: list[int] = []
        for x, y, ids, _ in loader:
            assert len(x) == len(y) == len(ids)
            seen += ids.tolist()
        assert sorted(seen) == list(range(len(loader.dataset)))  # each index once
    rows: list[dict[str, Any]] = loader.report()
    return rows


@pytest.mark.parametrize("workers", [0, 2])
def test_items_are_cached_and_delivered_exactly(dataset_dir: Path, workers: int) -> None:
    folder = _folder(dataset_dir)
    with hotset.loader(
        folder, system="lru", cache="50%", batch_size=16, num_workers=workers
    ) as loader:
        assert loader.dataset is folder
        for epoch in range(2):
            loader.set_epoch(epoch)
            for x, y, ids, _ in loader:
                want = torch.stack([folder[i][0] for i in ids.tolist()])
                assert torch.equal(x, want)
                assert y.tolist() == [folder.labels[i] for i in ids.tolist()]
        rows = loader.report()
    assert rows[1]["exact_hits"] > 0 and rows[1]["unique_ids_trained"] == len(folder)


def test_raw_bytes_make_the_same_decisions_as_the_manifest(dataset_dir: Path) -> None:
    """Same system and seed: the user's read() path and the manifest path agree exactly."""
    folder = _folder(dataset_dir)
    mine = hotset.from_dataset(folder, read=folder.read, decode="image")
    assert np.array_equal(mine.manifest.sizes, hotset.open_dataset(dataset_dir).manifest.sizes)
    rows = {}
    for name, data in (("user", mine), ("manifest", hotset.open_dataset(dataset_dir))):
        with hotset.loader(data, system="lru", cache="30%", batch_size=16, seed=4) as ld:
            rows[name] = _epochs(ld, 3)
    for key in ("exact_hits", "storage_reads", "storage_bytes"):
        assert [r[key] for r in rows["user"]] == [r[key] for r in rows["manifest"]], key
    assert sum(r["exact_hits"] for r in rows["user"]) > 0


def test_items_are_encoded_deterministically(dataset_dir: Path) -> None:
    folder = _folder(dataset_dir)
    assert encode_item(folder[3]) == encode_item(folder[3])


def test_random_augmentation_in_getitem_is_named(dataset_dir: Path) -> None:
    data = hotset.from_dataset(_folder(dataset_dir, Augmenting))
    with (
        hotset.loader(data, system="lru", cache="50%", batch_size=16, check_store="off") as ld,
        pytest.raises(hotset.IntegrityError, match="random augmentation"),
    ):
        ld.set_epoch(0)
        for _ in ld:
            pass


def test_sizes_skip_the_measuring_pass_and_the_checks(dataset_dir: Path) -> None:
    folder = _folder(dataset_dir)
    sizes = [len(folder.read(i)) for i in range(len(folder))]
    with pytest.warns(RuntimeWarning, match="integrity checks are off"):
        data = hotset.from_dataset(folder, read=folder.read, decode="image", sizes=sizes)
    with hotset.loader(data, system="lru", cache="30%", batch_size=16) as ld:
        assert _epochs(ld, 2)[1]["exact_hits"] > 0


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda f: Stream(), "IterableDataset has no index"),
        (lambda f: 42, "map-style Dataset"),
        (lambda f: [], "empty"),
    ],
)
def test_what_cannot_be_wrapped_is_a_clear_error(dataset_dir: Path, make: Any, match: str) -> None:
    with pytest.raises(hotset.HotsetError, match=match):
        hotset.from_dataset(make(_folder(dataset_dir)))


def test_read_and_decode_come_together(dataset_dir: Path) -> None:
    folder = _folder(dataset_dir)
    with pytest.raises(hotset.HotsetError, match="decode="):
        hotset.from_dataset(folder, read=folder.read)
    with pytest.raises(hotset.HotsetError, match="needs read="):
        hotset.from_dataset(folder, decode="image")
    bad = hotset.from_dataset(folder, read=lambda i: "text", decode="bytes", sizes=[4] * 200)
    with pytest.raises(hotset.HotsetError, match="must return bytes"):
        bad.store.read("0")
