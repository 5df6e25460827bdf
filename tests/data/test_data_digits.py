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
