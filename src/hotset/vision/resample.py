"""Crop, resize and flip a batch of images of different sizes: Pillow's filter, batched.

What is computed. For each image, its box is cut out and resized to ``size x size``
with Pillow's antialiased bilinear filter, then mirrored where its flip says so:
what torchvision's ``RandomResizedCrop`` + ``RandomHorizontalFlip`` do to a PIL
image. The filter is a triangle whose support widens with the downscale factor
(shrinking averages every source pixel instead of sampling four), applied
separably: columns first, rounded to uint8, then rows, rounded again. (Pillow 13
runs the rows first when the height shrinks much more than the width, so one
``Image.resize`` call there rounds between the passes the other way: a level
apart on about a fifth of such crops' pixels, and never here, where the order is
fixed so that every method gives the same pixels.)

Two ways to compute it, chosen by where the images are (``method="auto"``):

* ``"pil"`` (CPU tensors): Pillow itself, image by image. Its fixed-point SIMD
  resampling is the reference and the fastest CPU code at hand: 3 ms or less for
  a 500x375 photo's crop to 224 on this machine's core, where the batched matrix
  products below took 8 to 70 ms per image (they do the whole image's arithmetic
  densely, which a GPU does in a blink and a CPU core does not).
* ``"tensor"`` (any device; the path on a GPU): the same filter as two batched
  matrix products per group of same-sized images. Each image's filter along an
  axis is a matrix (``size`` x the image's extent) holding Pillow's weights inside
  its box and zeros outside, the flip folded in by reversing the rows of the
  horizontal one; ``X @ Wx^T`` then ``Wy @ (...)`` for a whole group is two
  ``bmm`` calls, whatever the boxes. The weights are Pillow's, computed with its
  formulas and rounded to its 22-bit fixed point (:func:`filter_matrix`), the
  products run in float64 (exact for such weights and uint8 pixels) and each pass
  rounds as Pillow does: the result is Pillow's to the last bit, so a crop made
  on a GPU equals one made by a DataLoader worker's Pillow. (float64 is fast on
  datacenter GPUs -- an H100 runs it on tensor cores -- and slow on consumer ones:)
* ``"tensor32"``: the same in float32, within one level of Pillow.

Images are grouped by shape (one group per distinct ``C, H, W``: two for
ImageNet-like landscape and portrait photos), each group cut into chunks of at
most :data:`CHUNK` images to bound the device memory of the float copy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from hotset.errors import HotsetError
from hotset.vision.params import CropParams
from hotset.vision.transfer import to_device

__all__ = ["CHUNK", "METHODS", "crop", "filter_matrix"]

#: the ways :func:`crop` computes (``auto``: ``pil`` for CPU tensors, else ``tensor``)
METHODS = ("auto", "pil", "tensor", "tensor32")
#: at most this many images per batched product (a 375x500 RGB image is 4.5 MB in float64)
CHUNK = 64
#: Pillow's fixed point for 8-bit images: weights carry 22 fractional bits
_ONE = float(2**22)


def _check(images: Sequence[Any], params: CropParams, size: int, method: str) -> None:
    import torch

    if method not in METHODS:
        raise HotsetError(f"method must be one of {', '.join(METHODS)}, got {method!r:.80}")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise HotsetError(f"size must be a positive integer, got {size!r:.80}")
    if len(images) != len(params):
        raise HotsetError(f"crop: {len(images)} images but {len(params)} boxes")
    flat = [i for i, img in enumerate(images) if img.dim() != 3]
    if flat:
        raise HotsetError(f"crop: image {flat[0]} is not C, H, W: {tuple(images[flat[0]].shape)}")
    if not images:
        return
    hw = torch.tensor([tuple(img.shape[1:]) for img in images], dtype=torch.int64)
    top, left, h, w = params.boxes.unbind(1)
    bad = (top < 0) | (left < 0) | (h < 1) | (w < 1) | (top + h > hw[:, 0]) | (left + w > hw[:, 1])
    if bool(bad.any()):
        i = int(torch.argmax(bad.to(torch.int8)))
        raise HotsetError(
            f"crop: box {tuple(params.boxes[i].tolist())} (top, left, height, width) of image "
            f"{i} is not inside its {int(hw[i, 0])}x{int(hw[i, 1])} pixels"
        )


def crop(images: Sequence[Any], params: CropParams, size: int, *, method: str = "auto") -> Any:
    """The images' boxes resized to ``size x size`` and flipped: a uint8 ``(n, C, size,
    size)`` tensor on the images' device (see the module docstring)."""
    import torch

    _check(images, params, size, method)
    if not images:
        return torch.empty((0, 3, size, size), dtype=torch.uint8)
    device = images[0].device
    if method == "auto":
        method = "pil" if device.type == "cpu" else "tensor"
    if method == "pil":
        return _crop_pil(images, params, size)
    dtype = torch.float64 if method == "tensor" else torch.float32
    return _crop_tensor(images, params, size, dtype)


# -- Pillow, image by image ---------------------------------------------------------------
def _crop_pil(images: Sequence[Any], params: CropParams, size: int) -> Any:
    import torch
    from PIL import Image

    BILINEAR = Image.Resampling.BILINEAR
    channels = {int(img.shape[0]) for img in images}
    if len(channels) != 1 or not channels <= {1, 3}:
        raise HotsetError(f"crop: images must all have 1 or 3 channels, got {sorted(channels)}")
    c = channels.pop()
    out = np.empty((len(images), size, size, c), dtype=np.uint8)
    boxes = params.boxes.tolist()
    flips = params.flips.tolist()
    for i, img in enumerate(images):
        hwc = np.ascontiguousarray(img.permute(1, 2, 0).cpu().numpy())
        top, left, h, w = boxes[i]
        pil = Image.fromarray(hwc[:, :, 0] if c == 1 else hwc)
        # one axis per call: columns, then rows (Pillow 13 may run the rows first when
        # it resizes both at once, which rounds the pixel between the passes elsewhere)
        cut = pil.crop((left, top, left + w, top + h))
        got = cut.resize((size, h), BILINEAR).resize((size, size), BILINEAR)
        if flips[i]:
            got = got.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        out[i] = np.asarray(got).reshape(size, size, c)
    return torch.from_numpy(out).permute(0, 3, 1, 2)  # (n, C, S, S) viewing (n, S, S, C)


# -- the same filter as matrix products ---------------------------------------------------
def filter_matrix(
    starts: Any, lengths: Any, out: int, extent: int, *, flips: Any = None, device: Any = "cpu"
) -> Any:
    """Pillow's bilinear filter as float64 matrices ``(n, out, extent)``: row ``j`` of
    image ``i`` weighs the pixels of ``[starts[i], starts[i] + lengths[i])`` exactly as
    Pillow weighs them for output pixel ``j`` when it resizes that span to ``out``.

    Pillow's ``precompute_coeffs`` and ``normalize_coeffs_8bpc`` in words: the span's
    scale is ``length / out``, the triangle's stretch ``max(scale, 1)`` (its support);
    output pixel ``j`` is centred at ``(j + 0.5) * scale`` and weighs the pixels from
    ``trunc(centre - stretch + 0.5)`` (at least 0) up to ``trunc(centre + stretch +
    0.5)`` (at most the span), pixel ``x`` by ``max(0, 1 - |(x - centre + 0.5) *
    (1 / stretch)|)``; the weights are divided by their sum (taken in order), then
    rounded to 22 fractional bits, Pillow's fixed point for 8-bit images. The
    products of such weights and uint8 pixels, and their sums, are exact in float64.

    ``flips[i]`` reverses image ``i``'s rows (a mirrored output). The taps are worked
    out on the CPU (a few per output pixel); the dense matrices are filled on
    ``device``, so only the taps cross to it.
    """
    import torch

    starts = torch.as_tensor(starts, dtype=torch.int64)
    length = torch.as_tensor(lengths, dtype=torch.float64)
    n = len(length)
    scale = length / out
    stretch = torch.clamp(scale, min=1.0)  # Pillow's filterscale; the support is 1 * it
    taps = 2 * math.ceil(float(stretch.max())) + 1 if n else 1
    centre = (torch.arange(out, dtype=torch.float64) + 0.5)[None, :] * scale[:, None]
    lo = torch.clamp(torch.trunc(centre - stretch[:, None] + 0.5), min=0)
    hi = torch.minimum(torch.trunc(centre + stretch[:, None] + 0.5), length[:, None])
    pos = lo[..., None] + torch.arange(taps, dtype=torch.float64)  # (n, out, taps)
    inside = pos < hi[..., None]
    ss = (1.0 / stretch)[:, None, None]
    weight = torch.clamp(1 - torch.abs((pos - centre[..., None] + 0.5) * ss), min=0)
    weight = torch.where(inside, weight, torch.zeros_like(weight))
    total = torch.cumsum(weight, dim=-1)[..., -1:]  # summed in order, as Pillow does
    weight = torch.where(total > 0, weight / torch.where(total > 0, total, 1), weight)
    weight = torch.floor(weight * _ONE + 0.5) / _ONE  # Pillow's (int)(0.5 + w * 2**22)
    col = torch.where(inside, pos, torch.zeros_like(pos)).to(torch.int64) + starts[:, None, None]
    if flips is not None:  # a mirrored crop: its output columns in reverse order
        flip = torch.as_tensor(flips, dtype=torch.bool)[:, None, None]
        col = torch.where(flip, col.flip(1), col)
        weight = torch.where(flip, weight.flip(1), weight)
    matrix = torch.zeros((n, out, extent), dtype=torch.float64, device=device)
    return matrix.scatter_add_(2, to_device(col, device), to_device(weight, device))


def _round(x: Any) -> Any:
    """Pillow's rounding of a pass: to the nearest level, halves up, clipped to 0..255."""
    import torch

    return torch.clamp(torch.floor(x + 0.5), 0, 255)


def _crop_tensor(images: Sequence[Any], params: CropParams, size: int, dtype: Any) -> Any:
    import torch

    device = images[0].device
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, img in enumerate(images):
        groups.setdefault(tuple(img.shape), []).append(i)
    c = {shape[0] for shape in groups}
    if len(c) != 1:
        raise HotsetError(f"crop: images must all have the same channels, got {sorted(c)}")
    out = torch.empty((len(images), c.pop(), size, size), dtype=torch.uint8, device=device)
    for members in groups.values():
        for at in range(0, len(members), CHUNK):
            idx = members[at : at + CHUNK]
            got = _group(
                [images[i] for i in idx], params.boxes[idx], params.flips[idx], size, dtype
            )
            out.index_copy_(0, to_device(torch.tensor(idx, dtype=torch.int64), device), got)
    return out


def _group(images: list[Any], boxes: Any, flips: Any, size: int, dtype: Any) -> Any:
    """One chunk of same-shaped images: columns then rows, each pass rounded."""
    import torch

    c, _height, width = images[0].shape
    g = len(images)
    device = images[0].device
    top, left, h, w = boxes.unbind(1)
    r0, r1 = int(top.min()), int((top + h).max())  # only the rows some box covers
    rows = r1 - r0
    wx = filter_matrix(left, w, size, width, flips=flips, device=device).to(dtype)
    wy = filter_matrix(top - r0, h, size, rows, device=device).to(dtype)
    x = torch.stack(images)[:, :, r0:r1, :].to(dtype)
    cols = _round(torch.matmul(x.reshape(g, c * rows, width), wx.transpose(1, 2)))
    cols = cols.view(g, c, rows, size).permute(0, 2, 1, 3).reshape(g, rows, c * size)
    both = _round(torch.matmul(wy, cols))  # (g, size, c * size)
    return both.to(torch.uint8).view(g, size, c, size).permute(0, 2, 1, 3)
