"""``HotsetDataset.subset``: part of a data set as one of its own, same files, ids renumbered."""

from __future__ import annotations

from pathlib import Path

import pytest

import hotset


def test_subset_keeps_files_labels_and_order(dataset_dir: Path) -> None:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    part = data.subset([150, 3, 77])
    assert len(part) == 3
    assert part.manifest.keys == [data.manifest.keys[i] for i in (150, 3, 77)]
    for new, old in enumerate((150, 3, 77)):
        assert part[new] == data[old]
    with hotset.loader(part, system="lru", cache="100%", batch_size=2) as loader:
        loader.set_epoch(0)
        assert sorted(i for _, _, ids, _ in loader for i in ids.tolist()) == [0, 1, 2]


@pytest.mark.parametrize("bad", [[], [0, 0], [200], [-1]])
def test_bad_subsets_are_refused(dataset_dir: Path, bad: list[int]) -> None:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    with pytest.raises(hotset.HotsetError, match="subset"):
        data.subset(bad)
