"""Decode a whole :class:`~hotset.vision.encoded.EncodedBatch` into uint8 images.

Two decoders, chosen per batch:

* ``"torchvision"``: ``torchvision.io.decode_jpeg`` on the list of the batch's
  samples, one call for the whole batch. On a CUDA device that is nvJPEG
  (the hardware JPEG engines of an A100/H100 for baseline JPEGs), so decoding
  leaves the CPU and overlaps the model's kernels; on the CPU it is libjpeg-turbo.
  Only JPEGs (checked by their magic bytes), and only where torchvision imports.
* ``"pil"``: Pillow on the CPU, converted to RGB exactly as hotset's
  ``decode="pil"`` does (torchvision's ``pil_loader``), then moved to the device.
  Any format Pillow reads.

``decoder="auto"`` takes torchvision where it can and Pillow otherwise. Both give
``C, H, W`` uint8 RGB tensors, so what follows (:mod:`hotset.vision.resample`) is
the same; the two decoders' pixels differ by an IDCT's rounding (a level or two
here and there), which is why the loader's worker and device paths are compared
exactly only with the same decoder.

A sample that does not decode is a :class:`~hotset.errors.HotsetError` naming
its index in the batch (and its name, when the caller gives names).
"""

from __future__ import annotations

import functools
import io
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from hotset.errors import HotsetError
from hotset.vision.encoded import EncodedBatch
from hotset.vision.transfer import to_device

__all__ = ["DECODERS", "check_decoder", "decode_batch", "is_jpeg", "torchvision_decodes"]

#: the decoders :func:`decode_batch` knows
DECODERS = ("auto", "pil", "torchvision")
_JPEG_MAGIC = (0xFF, 0xD8, 0xFF)


def check_decoder(decoder: object) -> str:
    """``decoder`` if it is one of :data:`DECODERS`, else an error naming it."""
    if not isinstance(decoder, str) or decoder not in DECODERS:
        raise HotsetError(f"decoder must be one of {', '.join(DECODERS)}, got {decoder!r:.80}")
    return decoder


@functools.cache
def torchvision_decodes() -> bool:
    """Whether ``torchvision.io.decode_jpeg`` can be imported here (imported lazily:
    torchvision is optional, and on some machines its wheel fails beside torch).
    Asked once per process: a failed import is not cached by Python itself."""
    try:
        from torchvision.io import decode_jpeg  # noqa: F401
    except Exception:  # ImportError, or a binary that fails to load beside this torch
        return False
    return True


def is_jpeg(batch: EncodedBatch) -> bool:
    """Whether every sample starts with the JPEG magic bytes (``FF D8 FF``)."""
    off = batch.offsets
    if len(batch) == 0:
        return True
    if np.any(np.diff(off) < len(_JPEG_MAGIC)):
        return False
    data = batch.data.numpy() if not batch.data.is_cuda else batch.data.cpu().numpy()
    starts = off[:-1]
    return all(bool(np.all(data[starts + k] == byte)) for k, byte in enumerate(_JPEG_MAGIC))


def _name(i: int, names: Sequence[str] | None) -> str:
    return f"sample {i} of the batch" + (f" ({names[i]!r})" if names is not None else "")


def _pil_one(blob: Any, i: int, names: Sequence[str] | None) -> Any:
    """One sample as an ``H, W, C`` uint8 array, RGB as ``decode="pil"`` converts it."""
    from PIL import Image

    try:
        image = Image.open(io.BytesIO(blob))
        image.load()
        return np.array(image.convert("RGB"), dtype=np.uint8)
    except Exception as exc:
        raise HotsetError(f"cannot decode {_name(i, names)} as an image: {exc}") from None


def _decode_pil(batch: EncodedBatch, device: Any, names: Sequence[str] | None) -> list[Any]:
    import torch

    data = batch.data if not batch.data.is_cuda else batch.data.cpu()
    buf = memoryview(data.numpy())
    bounds = batch.offsets.tolist()
    out = []
    for i, (a, b) in enumerate(itertools.pairwise(bounds)):
        hwc = to_device(torch.from_numpy(_pil_one(buf[a:b], i, names)), device)
        out.append(hwc.permute(2, 0, 1))  # C, H, W: a view, the pixels stay H, W, C
    return out


def _decode_torchvision(batch: EncodedBatch, device: Any, names: Sequence[str] | None) -> list[Any]:
    from torchvision.io import ImageReadMode, decode_jpeg

    views = batch.views()
    if not views:
        return []
    try:
        got = decode_jpeg(views, mode=ImageReadMode.RGB, device=device)
    except RuntimeError:
        # the batch call names no sample: find the first that fails, one by one
        for i, view in enumerate(views):
            try:
                decode_jpeg(view, mode=ImageReadMode.RGB, device=device)
            except RuntimeError as exc:
                raise HotsetError(f"cannot decode {_name(i, names)} as a JPEG: {exc}") from None
        raise
    return list(got)


def decode_batch(
    batch: EncodedBatch,
    *,
    device: Any = "cpu",
    decoder: str = "auto",
    names: Sequence[str] | None = None,
) -> list[Any]:
    """Every sample of ``batch`` as a ``C, H, W`` uint8 RGB tensor on ``device``.

    ``decoder`` is ``"auto"`` (torchvision's ``decode_jpeg`` when it imports and
    every sample is a JPEG, else Pillow), ``"pil"`` or ``"torchvision"``.
    """
    import torch

    if not isinstance(batch, EncodedBatch):
        raise HotsetError(f"decode_batch takes an EncodedBatch, got {type(batch).__name__}")
    check_decoder(decoder)
    where = torch.device(device)
    if names is not None and len(names) != len(batch):
        raise HotsetError(f"decode_batch: {len(names)} names for {len(batch)} samples")
    use_tv = decoder == "torchvision" or (
        decoder == "auto" and torchvision_decodes() and is_jpeg(batch)
    )
    if use_tv:
        if decoder == "torchvision" and not torchvision_decodes():
            raise HotsetError("decoder='torchvision' needs torchvision, which does not import here")
        return _decode_torchvision(batch, where, names)
    return _decode_pil(batch, where, names)
