"""Bytes to a float32 CHW array in [0, 1], chosen by the key's extension.

One decoder for every sample source (files, caches, packs) so that a cached
sample and a freshly read one always become the same tensor.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import PurePosixPath

import numpy as np

from hotset.errors import HotsetError

# extension -> format name used in dataset.json
EXTENSIONS: dict[str, str] = {".png": "png", ".jpg": "jpeg", ".jpeg": "jpeg", ".npy": "npy"}


def format_of(key: str) -> str:
    """``png``, ``jpeg`` or ``npy`` from the key's extension (case-insensitive)."""
    ext = PurePosixPath(key).suffix.lower()
    try:
        return EXTENSIONS[ext]
    except KeyError:
        known = ", ".join(sorted(EXTENSIONS))
        raise HotsetError(
            f"cannot decode {key!r}: unknown extension {ext or '(none)'!r} (known: {known})"
        ) from None


#: leading bytes of each format, for keys without an extension (a user's read(i))
_MAGIC = ((b"\x89PNG\r\n\x1a\n", "png"), (b"\xff\xd8\xff", "jpeg"), (b"\x93NUMPY", "npy"))


def _sniff(data: bytes) -> str:
    for magic, fmt in _MAGIC:
        if data.startswith(magic):
            return fmt
    raise HotsetError(
        f"cannot decode {data[:8]!r}...: no file extension to go by, and the bytes are "
        "not PNG, JPEG or NPY"
    )


def decode(data: bytes, key: str) -> np.ndarray:
    """Decode one sample to float32 ``(C, H, W)`` in [0, 1].

    The format comes from the key's extension, or, for a key without one, from
    the bytes' signature.

    Images keep one channel when grayscale and become RGB otherwise (alpha and
    palettes are dropped), so a dataset decodes to one channel count.
    """
    fmt = _sniff(data) if not PurePosixPath(key).suffix else format_of(key)
    try:
        if fmt == "npy":
            return _decode_npy(data, key)
        return _decode_image(data)
    except HotsetError:
        raise
    except Exception as exc:
        raise HotsetError(f"cannot decode {key!r} as {fmt}: {exc}") from None


def decode_many(blobs: Sequence[bytes], keys: Sequence[str]) -> np.ndarray:
    """Decode and stack to ``(N, C, H, W)``; every sample must have the same shape."""
    if len(blobs) != len(keys):
        raise HotsetError(f"decode_many: {len(blobs)} blobs but {len(keys)} keys")
    if not blobs:
        raise HotsetError("decode_many: nothing to decode")
    arrays = [decode(b, k) for b, k in zip(blobs, keys, strict=True)]
    first = arrays[0].shape
    for arr, key in zip(arrays, keys, strict=True):
        if arr.shape != first:
            raise HotsetError(
                f"decode_many: {key!r} has shape {arr.shape}, {keys[0]!r} has {first}"
            )
    return np.stack(arrays)


def _decode_image(data: bytes) -> np.ndarray:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as img:
        img.load()
        mode = img.mode
        if mode in ("I;16", "I;16B", "I;16L", "I"):
            arr = np.asarray(img, dtype=np.float32) / 65535.0
            return np.clip(arr, 0.0, 1.0)[None]
        if mode in ("1", "L", "LA") or (mode == "P" and _palette_is_gray(img)):
            gray = np.asarray(img.convert("L"), dtype=np.uint8)
            return (gray.astype(np.float32) / 255.0)[None]
        rgb = np.asarray(img.convert("RGB"), dtype=np.uint8)
    return np.ascontiguousarray(rgb.transpose(2, 0, 1), dtype=np.float32) / 255.0


def _palette_is_gray(img: object) -> bool:
    from PIL import Image

    assert isinstance(img, Image.Image)
    palette = img.getpalette()
    if not palette:
        return False
    rgb = np.asarray(palette, dtype=np.int64).reshape(-1, 3)
    return bool((rgb[:, 0] == rgb[:, 1]).all() and (rgb[:, 1] == rgb[:, 2]).all())


def _decode_npy(data: bytes, key: str) -> np.ndarray:
    arr = np.load(io.BytesIO(data), allow_pickle=False)
    if arr.ndim == 2:
        arr = arr[None]
    elif arr.ndim == 3:
        if arr.shape[0] not in (1, 3, 4) and arr.shape[-1] in (1, 3, 4):
            arr = arr.transpose(2, 0, 1)  # HWC -> CHW
        elif arr.shape[0] not in (1, 3, 4):
            raise HotsetError(
                f"cannot decode {key!r}: shape {arr.shape} has no 1, 3 or 4 channel axis"
            )
    else:
        raise HotsetError(f"cannot decode {key!r}: expected a 2-D or 3-D array, got {arr.shape}")
    if arr.dtype == np.uint8:
        out = arr.astype(np.float32) / 255.0
    elif arr.dtype == np.uint16:
        out = arr.astype(np.float32) / 65535.0
    elif arr.dtype == np.bool_:
        out = arr.astype(np.float32)
    elif np.issubdtype(arr.dtype, np.floating):
        out = arr.astype(np.float32)
        if out.size and not (np.isfinite(out).all() and out.min() >= 0.0 and out.max() <= 1.0):
            raise HotsetError(f"cannot decode {key!r}: float values must lie in [0, 1]")
    else:
        raise HotsetError(
            f"cannot decode {key!r}: dtype {arr.dtype} (want uint8, uint16, bool or float)"
        )
    return np.ascontiguousarray(out)
