"""One array as a small dict of plain values around a uint8 tensor, and back, bit for bit.

The codec of :mod:`hotset.torch.statecodec` (which walks a state tree and refers
to repeats); here one flat array at a time. Each gets the smallest of a few
lossless forms, chosen by trying them:

* a few values (under :data:`MIN_LIST`): a plain list of Python numbers;
* integers: minus their minimum, in the narrowest unsigned width that holds the
  range (1, 2, 4 or 8 bytes), or as differences from the previous value (sorted
  id lists), whichever is smaller;
* booleans: 8 to a byte;
* floats: float64 values that float32 holds exactly (a model's losses) stored as
  float32; few distinct values (rank-based scores, a constant) as a dictionary
  of them and a narrow index; the rest as they are.

The bytes are then split into planes (byte ``j`` of every value together): the
high bytes of small integers and the sign-and-exponent byte of floats make runs
that zlib shrinks, a float's low mantissa bytes do not and are stored as they
are, without paying for zlib (a probe of each plane decides).

Decoding reads data from a file: every field is checked (known codec and width,
exactly the bytes the count calls for, a zlib stream never inflated past that
size) and anything else is a :class:`HotsetError` saying what is wrong.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from hotset.errors import HotsetError

__all__ = ["MIN_LIST", "decode_flat", "encode_flat", "field_int", "field_str", "show"]

#: arrays and lists shorter than this stay plain lists (a tensor costs more)
MIN_LIST = 32
#: a float array is tried as a dictionary when its first PROBE values hold at most
#: DICT_PROBE_MAX distinct ones; it becomes one when the whole holds at most DICT_MAX
PROBE, DICT_PROBE_MAX, DICT_MAX = 65536, 4096, 65536
_WIDTHS = (1, 2, 4, 8)
#: zlib's fastest level: planes that compress are runs, which it finds at any level
_LEVEL = 1


def encode_flat(flat: np.ndarray) -> dict[str, Any]:
    """The smallest lossless form of a 1-D array: its codec's fields and ``data``."""
    if flat.size < MIN_LIST:  # a few values cost less as a list than as a tensor
        return {"codec": "plain", "values": flat.tolist()}
    if flat.dtype == np.bool_:
        return _smaller({"codec": "bits"}, np.packbits(flat).tobytes())
    if flat.dtype.kind in "iu":
        return _encode_ints(flat)
    return _encode_floats(flat)


def _tensor(data: bytes) -> torch.Tensor:
    return torch.from_numpy(np.frombuffer(data, dtype=np.uint8).copy())


def _smaller(fields: dict[str, Any], data: bytes, *, group: int = 1) -> dict[str, Any]:
    """``fields`` with ``data`` split into ``group`` byte planes (byte ``j`` of every
    value together), each zlib-compressed where that makes it smaller.

    The high bytes of small integers and the sign-and-exponent byte of floats make
    runs that compress; a float's low mantissa bytes do not, and are stored as
    they are without paying for zlib (a probe of each plane decides).
    """
    planes = np.frombuffer(data, dtype=np.uint8).reshape(-1, group).T
    parts, squeezed = [], []
    for plane in planes:
        raw = plane.tobytes()
        small = zlib.compress(raw, _LEVEL) if _compressible(raw) else raw
        squeezed.append(len(small) < len(raw))
        parts.append(small if squeezed[-1] else raw)
    return {
        **fields,
        "zlib": squeezed,
        "lengths": [len(p) for p in parts],
        "data": _tensor(b"".join(parts)),
    }


def _compressible(data: bytes) -> bool:
    """Whether zlib is worth trying: a probe of the first 256 KiB shrinks by 5 %."""
    probe = data[: 1 << 18]
    return len(probe) > 64 and len(zlib.compress(probe, 1)) < 0.95 * len(probe)


def _narrow(values: npt.NDArray[np.uint64], span: int) -> tuple[int, bytes]:
    """``values`` (all in ``[0, span]``) in the fewest bytes each: (width, bytes)."""
    width = next(w for w in _WIDTHS if span < 256**w)
    return width, values.astype(f"<u{width}").tobytes()


def _offset(values: npt.NDArray[np.uint64], low: int, high: int, **fields: Any) -> dict[str, Any]:
    """Values known to lie in ``[low, high]`` (as wrapped 64-bit words) minus ``low``,
    narrowed, in byte planes."""
    width, data = _narrow(values - np.uint64(low % 2**64), high - low)
    return _smaller({"codec": "int", "base": low, "width": width, **fields}, data, group=width)


def _encode_ints(flat: np.ndarray) -> dict[str, Any]:
    """Offset by the minimum and narrowed, or as differences (sorted ids): the smaller."""
    if flat.size == 0:
        fields = {"codec": "int", "base": 0, "width": 1, "delta": False}
        return {**fields, "zlib": [False], "lengths": [0], "data": _tensor(b"")}
    u = flat.astype(np.uint64)  # wrapped: exact whatever the dtype
    best = _offset(u, int(flat.min()), int(flat.max()), delta=False)
    if flat.size > 2:
        steps = (u[1:] - u[:-1]).view(np.int64)
        low, high = int(steps.min()), int(steps.max())
        other = _offset(steps.view(np.uint64), low, high, delta=True, first=int(flat[0]))
        if other["data"].numel() < best["data"].numel():
            best = other
    return best


def _encode_floats(flat: np.ndarray) -> dict[str, Any]:
    """float32 when exact; a dictionary when few values; else grouped bytes, zlib'd if it helps."""
    work = flat
    if flat.dtype == np.float64:
        with np.errstate(over="ignore", invalid="ignore"):
            single = flat.astype(np.float32)
        if np.array_equal(single.astype(np.float64).view(np.uint64), flat.view(np.uint64)):
            work = single
    width = work.dtype.itemsize
    bits = work.view(f"<u{width}")
    if flat.size >= MIN_LIST and len(np.unique(bits[:PROBE])) <= DICT_PROBE_MAX:
        values, index = np.unique(bits, return_inverse=True)
        if len(values) <= DICT_MAX:
            return {
                "codec": "dict",
                "width": width,
                "size": len(values),
                "values": _encode_ints(values),
                "index": _encode_ints(index.reshape(-1)),
            }
    return _smaller({"codec": "float", "width": width}, work.tobytes(), group=width)


# -- decoding ---------------------------------------------------------------------------
def show(value: object) -> str:
    return f"{value!r:.60}"


def field_str(node: dict[str, Any], key: str, allowed: tuple[str, ...]) -> str:
    value = node.get(key)
    if type(value) is not str or value not in allowed:
        raise HotsetError(f"{key} must be one of {', '.join(allowed)}, got {show(value)}")
    return value


def field_int(node: dict[str, Any], key: str) -> int:
    value = node.get(key)
    if type(value) is not int:
        raise HotsetError(f"{key} must be an integer, got {show(value)}")
    return value


def _flag(node: dict[str, Any], key: str) -> bool:
    value = node.get(key)
    if type(value) is not bool:
        raise HotsetError(f"{key} must be True or False, got {show(value)}")
    return value


def _bytes(node: dict[str, Any], expected: int, width: int = 1) -> bytes:
    """The node's data with its byte planes inflated and interleaved: ``expected`` bytes."""
    data = node.get("data")
    if not isinstance(data, torch.Tensor) or data.dtype != torch.uint8 or data.dim() != 1:
        raise HotsetError(f"data must be a 1-D uint8 tensor, got {show(data)}")
    squeezed, lengths = node.get("zlib"), node.get("lengths")
    if (
        not isinstance(squeezed, list)
        or not isinstance(lengths, list)
        or len(squeezed) != width
        or len(lengths) != width
        or not all(type(z) is bool for z in squeezed)
        or not all(type(n) is int and n >= 0 for n in lengths)
        or sum(lengths) != data.numel()
    ):
        raise HotsetError(
            f"zlib and lengths must list the {width} byte planes of the data, got "
            f"{show(squeezed)} and {show(lengths)}"
        )
    if expected % width:
        raise HotsetError(f"{expected} bytes do not split into planes of {width}")
    raw = data.detach().cpu().numpy().tobytes()
    size, at, planes = expected // width, 0, []
    for z, n in zip(squeezed, lengths, strict=True):
        part, at = raw[at : at + n], at + n
        planes.append(_inflate(part, size) if z else part)
        if len(planes[-1]) != size:
            raise HotsetError(
                f"a byte plane holds {len(planes[-1])} bytes, the shape calls for {size}"
            )
    if width == 1:
        return planes[0]
    return np.frombuffer(b"".join(planes), dtype=np.uint8).reshape(width, size).T.tobytes()


def _inflate(data: bytes, size: int) -> bytes:
    """A zlib stream that must inflate to exactly ``size`` bytes (never more is made)."""
    inflate = zlib.decompressobj()
    try:
        out = inflate.decompress(data, size + 1)
    except zlib.error as exc:
        raise HotsetError(f"data is not a zlib stream ({exc})") from None
    if len(out) != size or not inflate.eof or inflate.unused_data:
        raise HotsetError(f"a byte plane does not inflate to the {size} bytes its shape calls for")
    return out


def decode_flat(node: dict[str, Any], dtype: np.dtype[Any], count: int) -> np.ndarray:
    """The ``count`` values of ``dtype`` that a node :func:`encode_flat` made holds."""
    codec = field_str(node, "codec", ("plain", "bits", "int", "float", "dict"))
    if codec == "plain":
        return _plain(node, dtype, count)
    if codec == "bits":
        if dtype != np.bool_:
            raise HotsetError(f"codec 'bits' holds booleans, not {dtype}")
        raw = _bytes(node, (count + 7) // 8)
        return np.unpackbits(np.frombuffer(raw, dtype=np.uint8), count=count).astype(np.bool_)
    if codec == "int":
        if dtype.kind not in "iu":
            raise HotsetError(f"codec 'int' holds integers, not {dtype}")
        return _decode_ints(node, count, dtype)
    if dtype.kind != "f":
        raise HotsetError(f"codec {codec!r} holds floats, not {dtype}")
    return _decode_floats(node, count, dtype)


def _decode_ints(node: dict[str, Any], count: int, dtype: np.dtype[Any]) -> np.ndarray:
    field_str(node, "codec", ("int",))
    width = field_int(node, "width")
    if width not in _WIDTHS:
        raise HotsetError(f"width must be one of {_WIDTHS}, got {width}")
    base, delta = field_int(node, "base"), _flag(node, "delta")
    stored = count - 1 if delta else count
    if stored < 0:
        raise HotsetError("a difference-coded array cannot be empty")
    raw = _bytes(node, stored * width, width)
    u = np.frombuffer(raw, dtype=f"<u{width}").astype(np.uint64) + np.uint64(base % 2**64)
    if delta:
        start = np.array([field_int(node, "first") % 2**64], dtype=np.uint64)
        u = np.cumsum(np.concatenate([start, u]), dtype=np.uint64)  # wraps, as packed
    info = np.iinfo(dtype)
    values = u.view(np.int64) if info.min < 0 else u
    if len(values) and (int(values.min()) < info.min or int(values.max()) > info.max):
        raise HotsetError(f"a value lies outside {dtype}")
    return values.astype(dtype)


def _decode_floats(node: dict[str, Any], count: int, dtype: np.dtype[Any]) -> np.ndarray:
    width = field_int(node, "width")
    if width != dtype.itemsize and not (width == 4 and dtype == np.float64):
        raise HotsetError(f"width {width} cannot hold {dtype}")
    stored = np.dtype(f"<f{width}")
    if node["codec"] == "dict":
        size = field_int(node, "size")
        values, index = node.get("values"), node.get("index")
        if not 0 < size <= DICT_MAX or not isinstance(values, dict) or not isinstance(index, dict):
            raise HotsetError("a dictionary needs its size (1 to 65536), values and index")
        table = _decode_ints(values, size, np.dtype(f"uint{8 * width}"))
        at = _decode_ints(index, count, np.dtype(np.int64))
        if count and (int(at.min()) < 0 or int(at.max()) >= size):
            raise HotsetError("a dictionary index points past its values")
        return table.view(stored)[at].astype(dtype)
    raw = _bytes(node, count * width, width)
    return np.frombuffer(raw, dtype=stored).astype(dtype)


def _plain(node: dict[str, Any], dtype: np.dtype[Any], count: int) -> np.ndarray:
    """A short array kept as a list of Python numbers of its kind."""
    values = node.get("values")
    kind = bool if dtype == np.bool_ else int if dtype.kind in "iu" else float
    if not isinstance(values, list) or len(values) != count:
        raise HotsetError(f"values must list {count} numbers, got {show(values)}")
    if not all(type(v) is kind for v in values):
        raise HotsetError(f"values must all be {kind.__name__}s, got {show(values)}")
    try:
        return np.array(values, dtype=dtype)
    except OverflowError:
        raise HotsetError(f"a value lies outside {dtype}") from None
