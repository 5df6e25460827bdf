"""RandomResizedCrop as a batch transform: its checks, its seed, its normalization."""

from __future__ import annotations

import pytest
import torch

from hotset.errors import HotsetError
from hotset.vision import IMAGENET_MEAN, IMAGENET_STD, EncodedBatch, RandomResizedCrop
from hotset.vision.augment import augment_seed


def test_augment_seed_is_a_pure_function_of_its_three_numbers() -> None:
    a = augment_seed(0, 1, 2)
    assert a == augment_seed(0, 1, 2) and 0 <= a < 2**63
    assert len({a, augment_seed(1, 1, 2), augment_seed(0, 2, 2), augment_seed(0, 1, 3)}) == 4
    with pytest.raises(HotsetError, match="epoch must be an integer >= 0"):
        augment_seed(0, -1, 0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"size": 0}, "size must be a positive integer"),
        ({"scale": (0.9, 0.1)}, "scale must be"),
        ({"flip": 1.5}, r"flip must be a probability in \[0, 1\], got 1.5"),
        ({"std": (0.2, 0.0, 0.2)}, "std positive"),
        ({"mean": (0.5, 0.5)}, "1 or 3 values each"),
        ({"dtype": "float64"}, "dtype must be one of"),
        ({"decoder": "nvjpeg"}, "decoder must be one of"),
        ({"method": "cuda"}, "method must be one of"),
    ],
)
def test_bad_options_are_named(kwargs: dict, match: str) -> None:
    with pytest.raises(HotsetError, match=match):
        RandomResizedCrop(**kwargs)


def test_the_batch_seed_decides_the_crops(photo_blobs: list[bytes]) -> None:
    spec = RandomResizedCrop(32)
    a = spec.crop_batch(EncodedBatch.from_blobs(photo_blobs[:8], seed=5))
    b = spec.crop_batch(EncodedBatch.from_blobs(photo_blobs[:8], seed=5))
    c = spec.crop_batch(EncodedBatch.from_blobs(photo_blobs[:8], seed=6))
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert a.shape == (8, 3, 32, 32) and a.dtype == torch.uint8


def test_normalize_is_the_standard_formula_in_the_asked_type_and_format(
    photo_blobs: list[bytes],
) -> None:
    batch = EncodedBatch.from_blobs(photo_blobs[:4], seed=1)
    spec = RandomResizedCrop(24)
    x8 = spec.crop_batch(batch)
    want = (
        x8.double() / 255 - torch.tensor(IMAGENET_MEAN).double().view(1, 3, 1, 1)
    ) / torch.tensor(IMAGENET_STD).double().view(1, 3, 1, 1)
    got = spec(batch)
    assert got.dtype == torch.float32 and got.is_contiguous()
    assert torch.allclose(got.double(), want, atol=1e-5)
    fast = RandomResizedCrop(24, dtype="bfloat16", channels_last=True)(batch)
    assert fast.dtype == torch.bfloat16
    assert fast.is_contiguous(memory_format=torch.channels_last)
    assert torch.allclose(fast.double(), want, atol=0.05)
    with pytest.raises(HotsetError, match=r"expected \(n, 3, H, W\)"):
        spec.normalize(torch.zeros((2, 1, 4, 4), dtype=torch.uint8))
