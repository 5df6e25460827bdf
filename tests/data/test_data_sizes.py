"""ImageNet-like sample sizes: the stated log-normal, seeded, and padding every decoder skips."""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from hotset.cli import main
from hotset.data import decode
from hotset.data.manifest import Manifest, content_hash
from hotset.data.sizes import IMAGENET, pad_to
from hotset.data.synth import SynthConfig, make_synth
from hotset.data.writer import encode_image
from hotset.errors import HotsetError


def test_imagenet_model_has_the_stated_parameters_and_spread() -> None:
    assert IMAGENET.mu == pytest.approx(math.log(110_000) - 0.18)
    sizes = IMAGENET.draw(20_000, seed=0)
    assert sizes.dtype == np.int64 and sizes.min() >= 8_000 and sizes.max() <= 2_000_000
    # mean 110 kB; median exp(mu) ~ 91.9 kB; p5 / p95 at exp(mu -/+ 1.645 sigma)
    assert sizes.mean() == pytest.approx(110_000, rel=0.03)
    assert np.median(sizes) == pytest.approx(math.exp(IMAGENET.mu), rel=0.03)
    assert np.percentile(sizes, 5) == pytest.approx(math.exp(IMAGENET.mu - 0.987), rel=0.05)
    assert np.percentile(sizes, 95) == pytest.approx(math.exp(IMAGENET.mu + 0.987), rel=0.05)
    np.testing.assert_array_equal(sizes, IMAGENET.draw(20_000, seed=0))
    assert (sizes != IMAGENET.draw(20_000, seed=1)).mean() > 0.99


def _files(path: Path, manifest: Manifest) -> list[bytes]:
    return [(path / key).read_bytes() for key in manifest.keys]


def test_a_generated_set_has_the_drawn_sizes_and_decodes_to_the_small_sets_pixels(
    tmp_path: Path,
) -> None:
    cfg = SynthConfig(n=200, image_size=16, seed=3, sizes="imagenet")
    big = make_synth(tmp_path / "big", cfg)
    small = make_synth(tmp_path / "small", SynthConfig(n=200, image_size=16, seed=3))
    sizes = np.asarray(big.sizes)
    np.testing.assert_array_equal(sizes, IMAGENET.draw(200, seed=3))
    assert sizes.mean() == pytest.approx(110_000, rel=0.15)
    assert np.median(sizes) == pytest.approx(math.exp(IMAGENET.mu), rel=0.15)
    np.testing.assert_array_equal(big.labels, small.labels)
    assert big.meta["sizes"]["model"] == "imagenet" and "sizes" not in small.meta
    for key, data, small_data, size, digest in zip(
        big.keys,
        _files(tmp_path / "big", big),
        _files(tmp_path / "small", small),
        big.sizes,
        big.hashes,
        strict=True,
    ):
        assert len(data) == size and content_hash(data) == digest  # the padding is hashed too
        np.testing.assert_array_equal(decode(data, key), decode(small_data, key))
        with Image.open(io.BytesIO(data)) as img:
            img.verify()  # a valid PNG: every chunk's CRC checks
    again = make_synth(tmp_path / "again", cfg, workers=3)
    assert again.hashes == big.hashes


@pytest.mark.parametrize("fmt", ["png", "jpeg", "npy"])
def test_padding_is_ignored_by_every_decoder(fmt: str) -> None:
    pixels = np.random.default_rng(0).integers(0, 256, (12, 12, 3), dtype=np.uint8)
    data = encode_image(pixels, fmt)
    padded = pad_to(data, 50_000, fmt, seed=0, sample_id=7)
    assert len(padded) == 50_000
    key = f"x.{'jpg' if fmt == 'jpeg' else fmt}"
    np.testing.assert_array_equal(decode(padded, key), decode(data, key))
    assert pad_to(data, 10, fmt, seed=0, sample_id=7) == data  # never shrinks


def test_unknown_sizes_name_is_named() -> None:
    with pytest.raises(HotsetError, match="--sizes must be one of small, imagenet, got 'huge'"):
        SynthConfig(n=10, sizes="huge")


def test_cli_writes_imagenet_sizes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "set"
    main(["data", "synth", "--out", str(out), "--n", "30", "--sizes", "imagenet", "-q"])
    manifest = Manifest.load(out)
    assert manifest.total_bytes == sum(IMAGENET.draw(30, seed=0))
    assert f"{manifest.total_bytes} bytes" in capsys.readouterr().out
