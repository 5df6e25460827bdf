"""``hotset data split`` / ``subset``: parts of a data set as data sets, files linked not copied."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hotset
from cli_support import run_cli
from hotset.data import SynthConfig, make_synth
from hotset.data.manifest import Manifest
from hotset.data.split import split_dataset, subset_dataset
from hotset.data.stratify import stratified_split
from hotset.errors import HotsetError


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("split") / "ds"
    make_synth(path, SynthConfig(n=300, image_size=8, classes=3, seed=4), workers=1)
    return path


def test_split_is_stratified_disjoint_complete_and_linked(source: Path, tmp_path: Path) -> None:
    train, val = split_dataset(source, tmp_path / "out", val=0.2, seed=1)
    whole = Manifest.load(source)
    assert sorted(train.keys + val.keys) == sorted(whole.keys)
    assert not set(train.keys) & set(val.keys)
    per_class = Counter(whole.labels.tolist())
    held = Counter(val.labels.tolist())
    assert all(abs(held[c] - 0.2 * per_class[c]) <= 1 for c in per_class)
    key = val.keys[0]
    assert (tmp_path / "out" / "val" / key).stat().st_ino == (source / key).stat().st_ino
    data = hotset.open_dataset(tmp_path / "out" / "train", decode="bytes")
    assert data[0][0] == (source / train.keys[0]).read_bytes()  # checked against its hash
    assert data.manifest.identity() != hotset.open_dataset(source).manifest.identity()


def test_the_same_seed_holds_out_the_same_samples(source: Path, tmp_path: Path) -> None:
    a = split_dataset(source, tmp_path / "a", val=0.1, seed=3)[1]
    b = split_dataset(source, tmp_path / "b", val=0.1, seed=3)[1]
    c = split_dataset(source, tmp_path / "c", val=0.1, seed=4)[1]
    assert a.keys == b.keys != c.keys


def test_subset_by_ids_renumbers_in_the_given_order(source: Path, tmp_path: Path) -> None:
    sub = subset_dataset(source, tmp_path / "s", [9, 2, 40])
    whole = Manifest.load(source)
    assert sub.keys == [whole.keys[i] for i in (9, 2, 40)]
    assert sub.hashes == [whole.hashes[i] for i in (9, 2, 40)]


@pytest.mark.parametrize(
    ("ids", "match"),
    [
        ([], "no indices"),
        ([1, 1], "distinct"),
        ([300], "distinct"),
        ([1.5], r"integer ids in 0\.\.\d+, got 1\.5 \(float\)"),  # was truncated to 1
        ([True, 4], r"got True \(bool\)"),
    ],
)
def test_bad_subsets(source: Path, tmp_path: Path, ids: list[int], match: str) -> None:
    with pytest.raises(HotsetError, match=match):
        subset_dataset(source, tmp_path / "bad", ids)


def test_cli_split_and_subset(source: Path, tmp_path: Path) -> None:
    code, out = run_cli(
        "data", "split", str(source), "--val", "0.1", "--out", str(tmp_path / "sp"), "-q"
    )
    assert code == 0, out
    assert "train: 270 samples" in out and "val: 30 samples" in out
    code, out = run_cli("data", "subset", str(source), str(tmp_path / "k"), "--n", "50", "-q")
    assert code == 0 and len(Manifest.load(tmp_path / "k")) == 50
    ids = tmp_path / "ids.txt"
    ids.write_text("5\n6\n7\n")
    code, out = run_cli("data", "subset", str(source), str(tmp_path / "i"), "--ids", str(ids), "-q")
    assert code == 0 and len(Manifest.load(tmp_path / "i")) == 3
    code, out = run_cli("data", "split", str(source), "--val", "0.7", "--out", str(tmp_path / "x"))
    assert code == 2 and "--val must be a share in (0, 0.5)" in out
    code, out = run_cli("data", "subset", str(source), str(tmp_path / "y"))
    assert code == 2 and "exactly one of --n or --ids" in out
    code, out = run_cli(
        "data", "subset", str(source), str(tmp_path / "z"), "--n", "5", "--seed", "-1"
    )
    assert code == 2 and "--seed must be an integer >= 0, got -1" in out
    assert not (tmp_path / "z").exists()


@settings(max_examples=40, deadline=None)
@given(
    labels=st.lists(st.integers(min_value=0, max_value=4), min_size=1, max_size=200),
    val_frac=st.floats(min_value=0.0, max_value=0.49),
    seed=st.integers(min_value=0, max_value=2**31),
)
def test_stratified_split_partitions_per_class(
    labels: list[int], val_frac: float, seed: int
) -> None:
    arr = np.asarray(labels, dtype=np.int64)
    train, val = stratified_split(arr, val_frac=val_frac, seed=seed)
    assert np.array_equal(np.sort(np.concatenate([train, val])), np.arange(len(arr)))
    assert np.array_equal(train, np.sort(train)) and np.array_equal(val, np.sort(val))
    for label in set(labels):
        count = labels.count(label)
        in_val = int((arr[val] == label).sum())
        assert in_val == math.floor(val_frac * count + 0.5)
        assert count - in_val >= 1
    again = stratified_split(arr, val_frac=val_frac, seed=seed)
    assert np.array_equal(again[1], val)


def test_the_simulator_holds_out_with_the_data_layers_rule() -> None:
    """One rule, one place: the simulator's name is the data layer's function."""
    from hotset.sim import live

    assert live.stratified_split is stratified_split
