"""sklearn digits as files: all 1,797 samples, 10 classes, pixels as sklearn has them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits

from hotset.data import decode_many, make_digits, open_dataset
from hotset.data.manifest import Manifest


def test_digits_dataset(tmp_path: Path) -> None:
    m = make_digits(tmp_path / "digits")
    assert len(m) == 1797
    assert m.num_classes == 10
    ref = load_digits()
    np.testing.assert_array_equal(m.labels, ref.target)
    loaded, store = open_dataset(tmp_path / "digits")
    assert loaded == m == Manifest.load(tmp_path / "digits" / "manifest.csv")
    x = decode_many(store.read_many(m.keys[:50]), m.keys[:50])
    assert x.shape == (50, 1, 8, 8)
    # 0..16 scaled to 0..255 and back: within one grey level of sklearn's values
    np.testing.assert_allclose(x[:, 0] * 16.0, ref.images[:50], atol=16.0 / 255.0 + 1e-6)
    assert m.meta["channels"] == 1 and m.meta["image_size"] == 8
    assert m.total_bytes == sum(
        p.stat().st_size for p in (tmp_path / "digits" / "train").rglob("*.png")
    )


def test_digits_as_npy_are_exact(tmp_path: Path) -> None:
    m = make_digits(tmp_path / "d", fmt="npy")
    _, store = open_dataset(tmp_path / "d")
    x = decode_many(store.read_many(m.keys[-3:]), m.keys[-3:])
    expected = np.rint(load_digits().images[-3:] * 255.0 / 16.0) / 255.0
    np.testing.assert_allclose(x[:, 0], expected, atol=1e-6)


def test_digits_with_a_hold_out_keep_the_whole_set_and_link_the_split(tmp_path: Path) -> None:
    from collections import Counter

    out = tmp_path / "d"
    whole = make_digits(out, val=0.1, seed=2)
    assert whole == Manifest.load(out) and len(whole) == 1797  # existing callers unchanged
    train, val = Manifest.load(out / "split" / "train"), Manifest.load(out / "split" / "val")
    assert len(train) + len(val) == 1797 and not set(train.keys) & set(val.keys)
    per_class, held = Counter(whole.labels.tolist()), Counter(val.labels.tolist())
    assert all(abs(held[c] - 0.1 * per_class[c]) <= 1 for c in per_class)
    key = val.keys[0]
    assert (out / "split" / "val" / key).stat().st_ino == (out / key).stat().st_ino
    again = tmp_path / "e"
    make_digits(again, val=0.1, seed=2)
    assert Manifest.load(again / "split" / "val").keys == val.keys  # same seed, same hold-out


def test_digits_bad_share_writes_nothing(tmp_path: Path) -> None:
    import pytest

    from hotset.errors import HotsetError

    with pytest.raises(HotsetError, match=r"--val must be a share in \(0, 0.5\), got 0.6"):
        make_digits(tmp_path / "d", val=0.6)
    assert not (tmp_path / "d").exists()
