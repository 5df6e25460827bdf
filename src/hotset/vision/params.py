"""The random part of a RandomResizedCrop: one box and one flip per image, drawn at once.

The draw follows the rule torchvision's ``RandomResizedCrop.get_params`` states
(re-implemented here, not copied): up to 10 tries of an area share drawn
uniformly in ``scale`` and an aspect ratio drawn log-uniformly in ``ratio``,
rounded to whole pixels; the first try that fits inside the image wins, placed
uniformly; when none fits, the central crop of the image clamped to ``ratio``.

It differs in how the numbers are drawn, not in their law: every try of every
image is drawn in one call, ``torch.rand((n, 10, 4), generator=g)`` (area,
log-ratio, top, left as uniforms in [0, 1), a position being
``floor(u * (room + 1))``), then the flips, ``torch.rand(n, generator=g) < flip``.
So a batch's boxes are a pure function of the generator's seed and the images'
sizes: the same seed gives the same crops on any device, in any process, after a
resume. Drawn on the CPU in float64: a few thousand numbers, never worth a device.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hotset.errors import HotsetError

__all__ = ["TRIES", "CropParams", "draw_params"]

#: tries per image before the central-crop fallback (torchvision's figure)
TRIES = 10


@dataclass(frozen=True)
class CropParams:
    """Per image: ``boxes[i] = (top, left, height, width)`` in its pixels (int64, CPU)
    and ``flips[i]`` (bool): mirror the crop left to right."""

    boxes: Any  # torch.Tensor (n, 4) int64
    flips: Any  # torch.Tensor (n,) bool

    def __len__(self) -> int:
        return int(self.boxes.shape[0])


def _check_range(name: str, pair: Sequence[float], *, low: float, high: float) -> None:
    if (
        len(pair) != 2
        or not all(isinstance(v, int | float) and math.isfinite(v) for v in pair)
        or not low < pair[0] <= pair[1] <= high
    ):
        raise HotsetError(
            f"{name} must be (low, high) with {low} < low <= high <= {high}, got {pair!r:.80}"
        )


def draw_params(
    sizes: Sequence[tuple[int, int]],
    generator: Any,
    *,
    scale: tuple[float, float] = (0.08, 1.0),
    ratio: tuple[float, float] = (3 / 4, 4 / 3),
    flip: float = 0.5,
) -> CropParams:
    """Boxes and flips for images of ``sizes`` (``(height, width)`` each), drawn from
    ``generator`` (a CPU ``torch.Generator``) as the module docstring says."""
    import torch

    _check_range("scale", scale, low=0.0, high=1.0)
    _check_range("ratio", ratio, low=0.0, high=math.inf)
    n = len(sizes)
    hw = torch.tensor([tuple(s) for s in sizes], dtype=torch.float64).reshape(n, 2)
    if n and bool((hw < 1).any()):
        raise HotsetError(f"images must be at least 1x1 pixels, got sizes {list(sizes)!r:.80}")
    u = torch.rand((n, TRIES, 4), generator=generator, dtype=torch.float64)
    flips = torch.rand(n, generator=generator, dtype=torch.float64) < flip
    h, w = hw[:, 0:1], hw[:, 1:2]
    area = h * w * (scale[0] + (scale[1] - scale[0]) * u[..., 0])
    log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
    aspect = torch.exp(log_lo + (log_hi - log_lo) * u[..., 1])
    cw = torch.round(torch.sqrt(area * aspect))  # round half to even, as Python's round()
    ch = torch.round(torch.sqrt(area / aspect))
    fits = (cw > 0) & (cw <= w) & (ch > 0) & (ch <= h)
    first = torch.argmax(fits.to(torch.int8), dim=1, keepdim=True)  # the first try that fits
    ch_t, cw_t = ch.gather(1, first)[:, 0], cw.gather(1, first)[:, 0]
    top = torch.floor(u[..., 2].gather(1, first)[:, 0] * (h[:, 0] - ch_t + 1))
    left = torch.floor(u[..., 3].gather(1, first)[:, 0] * (w[:, 0] - cw_t + 1))
    fb_top, fb_left, fb_h, fb_w = _central(h[:, 0], w[:, 0], ratio)
    ok = fits.any(dim=1)
    boxes = torch.stack(
        [
            torch.where(ok, top, fb_top),
            torch.where(ok, left, fb_left),
            torch.where(ok, ch_t, fb_h),
            torch.where(ok, cw_t, fb_w),
        ],
        dim=1,
    ).to(torch.int64)
    return CropParams(boxes=boxes, flips=flips)


def _central(h: Any, w: Any, ratio: tuple[float, float]) -> tuple[Any, Any, Any, Any]:
    """The fallback: the whole image, cut to the nearest aspect ratio ``ratio`` allows,
    centred (top and left rounded down)."""
    import torch

    in_ratio = w / h
    narrow, wide = in_ratio < min(ratio), in_ratio > max(ratio)
    cw = torch.where(wide, torch.round(h * max(ratio)), w)
    ch = torch.where(narrow, torch.round(w / min(ratio)), h)
    return torch.floor((h - ch) / 2), torch.floor((w - cw) / 2), ch, cw
