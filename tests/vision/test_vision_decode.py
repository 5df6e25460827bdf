"""decode_batch: Pillow's RGB pixels (as decode="pil"), or torchvision's, and named errors."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from PIL import Image

from hotset.errors import HotsetError
from hotset.vision import EncodedBatch, decode_batch
from hotset.vision.decode import is_jpeg, torchvision_decodes

NO_TV = not torchvision_decodes()


def _pil_rgb(blob: bytes) -> np.ndarray:
    return np.array(Image.open(io.BytesIO(blob)).convert("RGB"))


def _encode(pixels: np.ndarray, fmt: str) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format=fmt)
    return buf.getvalue()


def test_pil_decodes_each_sample_to_rgb_chw(photo_blobs: list[bytes]) -> None:
    blobs = photo_blobs[:6]
    images = decode_batch(EncodedBatch.from_blobs(blobs), decoder="pil")
    assert len(images) == 6
    for img, blob in zip(images, blobs, strict=True):
        assert img.dtype == torch.uint8 and img.shape[0] == 3
        assert np.array_equal(img.permute(1, 2, 0).numpy(), _pil_rgb(blob))
    shapes = {tuple(img.shape) for img in images}
    assert shapes <= {(3, 120, 160), (3, 160, 120)}


def test_grey_and_png_samples_become_three_channels() -> None:
    rng = np.random.default_rng(0)
    grey = rng.integers(0, 256, (20, 30), dtype=np.uint8)
    rgb = rng.integers(0, 256, (10, 12, 3), dtype=np.uint8)
    blobs = [_encode(grey, "JPEG"), _encode(rgb, "PNG")]
    batch = EncodedBatch.from_blobs(blobs)
    assert not is_jpeg(batch)
    got = decode_batch(batch)  # auto: Pillow, since one sample is no JPEG
    assert tuple(got[0].shape) == (3, 20, 30) and bool((got[0][0] == got[0][2]).all())
    assert np.array_equal(got[1].permute(1, 2, 0).numpy(), rgb)  # PNG: lossless


def test_a_sample_that_does_not_decode_is_named(photo_blobs: list[bytes]) -> None:
    batch = EncodedBatch.from_blobs([photo_blobs[0], b"\xff\xd8\xff not really", photo_blobs[1]])
    assert is_jpeg(batch)
    with pytest.raises(HotsetError, match=r"sample 1 of the batch \('b.jpg'\)"):
        decode_batch(batch, decoder="pil", names=["a.jpg", "b.jpg", "c.jpg"])
    with pytest.raises(HotsetError, match="decoder must be one of"):
        decode_batch(batch, decoder="nvjpeg")
    with pytest.raises(HotsetError, match="2 names for 3 samples"):
        decode_batch(batch, names=["a", "b"])


@pytest.mark.skipif(not NO_TV, reason="torchvision imports here")
def test_asking_for_torchvision_where_it_does_not_import_is_an_error(
    photo_blobs: list[bytes],
) -> None:
    with pytest.raises(HotsetError, match="needs torchvision"):
        decode_batch(EncodedBatch.from_blobs(photo_blobs[:2]), decoder="torchvision")


@pytest.mark.skipif(NO_TV, reason="torchvision does not import here")
def test_torchvision_decodes_within_two_levels_of_pillow(photo_blobs: list[bytes]) -> None:
    """Two libjpeg builds may round the IDCT differently: a level or two, rarely."""
    batch = EncodedBatch.from_blobs(photo_blobs[:8])
    tv = decode_batch(batch, decoder="torchvision")
    pil = decode_batch(batch, decoder="pil")
    for a, b in zip(tv, pil, strict=True):
        assert a.shape == b.shape
        assert int((a.int() - b.int()).abs().max()) <= 2


@pytest.mark.skipif(NO_TV or not torch.cuda.is_available(), reason="needs torchvision and CUDA")
def test_nvjpeg_decodes_on_the_device_close_to_pillow(photo_blobs: list[bytes]) -> None:
    batch = EncodedBatch.from_blobs(photo_blobs[:8])
    gpu = decode_batch(batch, device="cuda")
    pil = decode_batch(batch, decoder="pil")
    for a, b in zip(gpu, pil, strict=True):
        assert a.is_cuda and a.shape == b.shape
        diff = (a.cpu().int() - b.int()).abs().float()
        assert float(diff.mean()) < 1.0 and int(diff.max()) <= 8
