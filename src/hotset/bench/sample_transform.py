"""The pipeline benchmark's PyTorch baselines: the standard ImageNet transform, per sample.

What a PyTorch user runs in DataLoader workers: each JPEG decoded with Pillow, then
``RandomResizedCrop(size)``, ``RandomHorizontalFlip()``, ``ToTensor()`` and
``Normalize(mean, std)`` -- torchvision's own transforms when torchvision imports.
Where it does not, :class:`SampleTransform` does the same to the PIL image here:
the crop drawn by torchvision's rule from torch's global generator (which DataLoader
seeds per worker), Pillow's bilinear resize, the mirror, ``/ 255`` and the
normalization in float32. Either way each sample becomes a float32 ``(3, size,
size)`` tensor in its worker, collated there and handed over as one float32 batch:
the per-sample path the device path is measured against.

:class:`TransformedDataset` is :class:`~hotset.bench.torch_baseline.PlainDataset`
(one store read per sample, a batch's reads on a thread pool when tuned) with this
transform, yielding ``(x, label, id)`` so that the benchmark checks every sample
arrives once per epoch.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from hotset.bench.torch_baseline import PlainDataset
from hotset.vision.augment import RandomResizedCrop

__all__ = ["SampleTransform", "TransformedDataset", "sample_transform"]


class SampleTransform:
    """Bytes -> the standard float32 crop, without torchvision (see the module docstring)."""

    def __init__(self, spec: RandomResizedCrop) -> None:
        self.spec = spec

    def __call__(self, data: bytes) -> Any:
        import torch
        from PIL import Image

        bilinear = Image.Resampling.BILINEAR
        image = Image.open(io.BytesIO(data)).convert("RGB")
        params = self.spec.params([(image.height, image.width)], None)  # torch's global RNG
        top, left, h, w = params.boxes[0].tolist()
        size = self.spec.size
        cut = image.crop((left, top, left + w, top + h)).resize((size, size), bilinear)
        if bool(params.flips[0]):
            cut = cut.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        x = torch.from_numpy(np.array(cut)).permute(2, 0, 1).to(torch.float32).div_(255)
        mean = torch.tensor(self.spec.mean).view(3, 1, 1)
        std = torch.tensor(self.spec.std).view(3, 1, 1)
        return x.sub_(mean).div_(std)


class _Torchvision:
    """Bytes -> Pillow -> torchvision's RandomResizedCrop, flip, ToTensor, Normalize."""

    def __init__(self, spec: RandomResizedCrop) -> None:
        from torchvision import transforms

        self.transform = transforms.Compose(
            [
                transforms.RandomResizedCrop(spec.size, scale=spec.scale, ratio=spec.ratio),
                transforms.RandomHorizontalFlip(spec.flip),
                transforms.ToTensor(),
                transforms.Normalize(spec.mean, spec.std),
            ]
        )

    def __call__(self, data: bytes) -> Any:
        from PIL import Image

        return self.transform(Image.open(io.BytesIO(data)).convert("RGB"))


def sample_transform(spec: RandomResizedCrop) -> tuple[Any, str]:
    """torchvision's transform when it imports, else :class:`SampleTransform`; and which."""
    try:
        return _Torchvision(spec), "torchvision"
    except Exception:  # not installed, or a binary that fails beside this torch
        return SampleTransform(spec), "hotset.bench.sample_transform (Pillow; no torchvision)"


class TransformedDataset(PlainDataset):
    """One read and one transform per sample; items are ``(x, label, id)``."""

    def __init__(
        self, store: Any, keys: list[str], labels: np.ndarray, *, transform: Any, threads: int = 1
    ) -> None:
        super().__init__(store, keys, labels, threads=threads)
        self.transform = transform

    def __getitem__(self, i: int) -> tuple[Any, int, int]:  # type: ignore[override]
        return self.transform(self.store.read(self.keys[i])), int(self.labels[i]), int(i)
