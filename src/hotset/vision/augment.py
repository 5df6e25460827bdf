"""The standard ImageNet training transform, for a whole batch: crop, resize, flip, normalize.

:class:`RandomResizedCrop` is a spec (a small frozen dataclass, picklable to
DataLoader workers) of torchvision's ``RandomResizedCrop(size, scale, ratio)``
+ ``RandomHorizontalFlip(flip)`` + ``ToTensor()`` + ``Normalize(mean, std)``,
applied to a batch at once instead of image by image:

* :meth:`~RandomResizedCrop.params` draws every image's box and flip from one
  ``torch.Generator`` (:mod:`hotset.vision.params`);
* :meth:`~RandomResizedCrop.crop` cuts, resizes and flips them into one uint8
  ``(n, C, size, size)`` tensor (:mod:`hotset.vision.resample`): where the loader's
  worker path and device path meet, so a worker hands over uint8 (4x fewer bytes
  than float32) and the two paths are compared pixel for pixel;
* :meth:`~RandomResizedCrop.normalize` makes that float (``(x / 255 - mean) / std``),
  in the dtype and memory format the model wants;
* calling the spec on an :class:`~hotset.vision.encoded.EncodedBatch` does all of
  it, decoding first (:mod:`hotset.vision.decode`), with the generator seeded by
  the batch's ``seed``.

Why the seed is the batch's: the loader sets it to :func:`augment_seed` of (its
seed, the epoch, the batch's index in the epoch), a pure function. A batch's
crops then depend on nothing else -- not on which worker fetched it, not on the
device, not on whether the loader was resumed from a checkpoint mid-epoch -- so
exact resume holds with augmentation on, as it does for the samples themselves.

Where it differs from torchvision. The resize is Pillow's antialiased bilinear
filter, which is torchvision's on PIL images (its ``antialias=True`` on tensors
computes the same weights without rounding between the two passes: at most one
level apart). The random draws follow torchvision's rule but are not its
sequence of numbers (the module docstring of :mod:`hotset.vision.params`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hotset.errors import HotsetError
from hotset.vision.decode import check_decoder, decode_batch
from hotset.vision.encoded import EncodedBatch
from hotset.vision.params import CropParams, draw_params
from hotset.vision.resample import METHODS, crop
from hotset.vision.transfer import to_device

__all__ = ["DTYPES", "IMAGENET_MEAN", "IMAGENET_STD", "RandomResizedCrop", "augment_seed"]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
#: the float types :meth:`RandomResizedCrop.normalize` can give, by name
DTYPES = ("float32", "bfloat16", "float16")


def augment_seed(seed: int, epoch: int, index: int) -> int:
    """The augmentation seed of batch ``index`` of ``epoch`` under loader seed ``seed``:
    63 bits of ``numpy.random.SeedSequence([seed, epoch, index])``, a pure function."""
    for name, value in (("seed", seed), ("epoch", epoch), ("index", index)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
            raise HotsetError(f"augment_seed: {name} must be an integer >= 0, got {value!r:.80}")
    hi, lo = np.random.SeedSequence([int(seed), int(epoch), int(index)]).generate_state(2)
    return ((int(hi) << 32) | int(lo)) & (2**63 - 1)


def _pair(name: str, value: Any) -> tuple[float, float]:
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        raise HotsetError(f"{name} must be a pair (low, high), got {value!r:.80}") from None
    return low, high


@dataclass(frozen=True)
class RandomResizedCrop:
    """A batch transform: see the module docstring. ``size`` is the output's side;
    ``scale`` the crop's share of the image's area and ``ratio`` its aspect range, as
    torchvision's; ``flip`` the chance of mirroring; ``mean``/``std`` per channel;
    ``dtype`` the output's (``"float32"``, ``"bfloat16"``, ``"float16"``);
    ``channels_last`` its memory format; ``decoder`` which decoder reads the bytes
    (``"auto"``, ``"pil"``, ``"torchvision"``); ``method`` how the resize is
    computed (``"auto"``, ``"pil"``, ``"tensor"``: :mod:`hotset.vision.resample`)."""

    size: int = 224
    scale: tuple[float, float] = (0.08, 1.0)
    ratio: tuple[float, float] = (3 / 4, 4 / 3)
    flip: float = 0.5
    mean: tuple[float, ...] = IMAGENET_MEAN
    std: tuple[float, ...] = IMAGENET_STD
    dtype: str = "float32"
    channels_last: bool = False
    decoder: str = "auto"
    method: str = "auto"

    def __post_init__(self) -> None:
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
            raise HotsetError(f"size must be a positive integer, got {self.size!r:.80}")
        object.__setattr__(self, "scale", _pair("scale", self.scale))
        object.__setattr__(self, "ratio", _pair("ratio", self.ratio))
        draw_params([], None, scale=self.scale, ratio=self.ratio)  # checks both ranges
        if isinstance(self.flip, bool) or not isinstance(self.flip, int | float):
            raise HotsetError(f"flip must be a probability in [0, 1], got {self.flip!r:.80}")
        if not 0.0 <= float(self.flip) <= 1.0:
            raise HotsetError(f"flip must be a probability in [0, 1], got {self.flip!r:.80}")
        mean = tuple(float(v) for v in self.mean)
        std = tuple(float(v) for v in self.std)
        if len(mean) != len(std) or len(mean) not in (1, 3):
            raise HotsetError(f"mean and std need 1 or 3 values each, got {mean!r} and {std!r}")
        if not all(math.isfinite(v) for v in mean) or not all(
            v > 0 and math.isfinite(v) for v in std
        ):
            raise HotsetError(f"mean must be finite and std positive, got {mean!r} and {std!r}")
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "std", std)
        if self.dtype not in DTYPES:
            raise HotsetError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r:.80}")
        if not isinstance(self.channels_last, bool):
            raise HotsetError(f"channels_last must be True or False, got {self.channels_last!r}")
        check_decoder(self.decoder)
        if self.method not in METHODS:
            raise HotsetError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")

    def params(self, sizes: Sequence[tuple[int, int]], generator: Any) -> CropParams:
        """Each image's box and flip, for images of ``sizes`` (height, width)."""
        return draw_params(
            sizes, generator, scale=self.scale, ratio=self.ratio, flip=float(self.flip)
        )

    def crop(self, images: Sequence[Any], params: CropParams) -> Any:
        """The boxes cut, resized and flipped: uint8 ``(n, C, size, size)``."""
        return crop(images, params, self.size, method=self.method)

    def normalize(self, x: Any) -> Any:
        """uint8 ``(n, C, H, W)`` to ``(x / 255 - mean) / std`` in ``dtype`` (on x's device)."""
        import torch

        if x.dim() != 4 or x.shape[1] != len(self.mean):
            raise HotsetError(
                f"normalize: expected (n, {len(self.mean)}, H, W), got {tuple(x.shape)}"
            )
        shape = (1, len(self.mean), 1, 1)
        mul = torch.tensor([1 / (255 * s) for s in self.std]).view(shape)
        sub = torch.tensor([m / s for m, s in zip(self.mean, self.std, strict=True)]).view(shape)
        out = x.to(torch.float32).mul_(to_device(mul, x.device)).sub_(to_device(sub, x.device))
        fmt = torch.channels_last if self.channels_last else torch.contiguous_format
        return out.to(dtype=getattr(torch, self.dtype), memory_format=fmt)

    def crop_batch(
        self, batch: EncodedBatch, *, device: Any = "cpu", names: Sequence[str] | None = None
    ) -> Any:
        """Decode ``batch`` on ``device`` and crop it with boxes drawn from ``batch.seed``:
        the uint8 ``(n, C, size, size)`` images, before normalizing."""
        import torch

        images = decode_batch(batch, device=device, decoder=self.decoder, names=names)
        generator = torch.Generator().manual_seed(int(batch.seed))
        params = self.params([(int(im.shape[1]), int(im.shape[2])) for im in images], generator)
        return self.crop(images, params)

    def __call__(
        self, batch: EncodedBatch, *, device: Any = "cpu", names: Sequence[str] | None = None
    ) -> Any:
        """``batch`` decoded, cropped and normalized on ``device``."""
        return self.normalize(self.crop_batch(batch, device=device, names=names))
