"""A checkpoint's arrays as plain types and uint8 tensors: lossless, compact, no numpy inside.

Why. ``torch.load`` unpickles only plain Python types and tensors by default
(``weights_only=True``); a state holding numpy arrays failed to load there
(``Unsupported global: GLOBAL numpy._core.multiarray._reconstruct``), inside
Lightning's resume among others. And a state holding every per-sample array at
its working width (int64 counts, float64 losses) weighed about 150 bytes per
sample, 190 MB per rank at ImageNet-1k's 1.28M samples.

What. :func:`pack` turns every numpy array of a state tree (and every long list
of ints or floats) into a small dict of plain values around one uint8 tensor;
:func:`unpack` turns them back, bit for bit: a resumed loader must make exactly
the decisions the saved one would have made, so nothing here is lossy. Each
array gets the smallest of a few lossless forms:

* integers: minus their minimum, in the narrowest unsigned width that holds the
  range (1, 2, 4 or 8 bytes), optionally as differences from the previous value
  (sorted id lists), the bytes grouped by significance and zlib-compressed;
* booleans: 8 to a byte;
* floats: float64 values that float32 holds exactly (a model's losses) stored as
  float32; few distinct values (rank-based scores, a constant) as a dictionary
  of them and a narrow index; the rest byte-grouped and zlib-compressed when that
  helps;
* an array equal to one packed earlier in the same state, or a 1-D one equal to
  the start of one (but where it holds NaN: then with a mask of its NaNs): a
  reference to it (a cache's copy of the table's counts, or of its scores of the
  ids it was told of).

A list of ints or floats is packed the same way, and a list of lists of ints as
their concatenation and lengths; both unpack to the same lists of Python numbers.

What is read back is data from a file: every field is checked (known codec,
dtype and width; the bytes the shape calls for, exactly; a zlib stream never
inflated past that size), and anything else is a :class:`HotsetError` naming
where in the state it sits. Nothing is unpickled or evaluated.
"""

from __future__ import annotations

import math
import zlib
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
import xxhash

from hotset.errors import HotsetError

__all__ = ["MARK", "pack", "unpack"]

#: the key that marks a packed node (a dict no state of hotset's holds otherwise)
MARK = "__hotset_packed__"
#: the dtypes a packed array may have (anything else in a state is a bug, not data)
DTYPES = frozenset(
    ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
) | frozenset(("float16", "float32", "float64"))
#: lists at least this long are packed (shorter ones cost less as they are)
MIN_LIST = 32
#: a float array is tried as a dictionary when its first PROBE values hold at most
#: DICT_PROBE_MAX distinct ones; it becomes one when the whole holds at most DICT_MAX
PROBE, DICT_PROBE_MAX, DICT_MAX = 65536, 4096, 65536
_WIDTHS = (1, 2, 4, 8)
_LEVEL = 1  # fast: a checkpoint of 1.28M ids packs in about a second


# -- packing -----------------------------------------------------------------------------
class _Packer:
    """One state's packing: remembers the arrays packed so far, to refer to repeats."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, tuple[int, ...], str], tuple[int, np.ndarray]] = {}
        #: earlier 1-D arrays by dtype: what a later one may be the start of
        self.lines: dict[str, list[tuple[int, np.ndarray]]] = {}
        self.count = 0

    def node(self, value: Any, path: str) -> Any:
        if isinstance(value, dict):
            return {k: self.node(v, f"{path}.{k}") for k, v in value.items()}
        if isinstance(value, np.ndarray):
            return self.array(value, "array", path)
        if isinstance(value, list | tuple):
            packed = self._list(value, path)
            if packed is not None:
                return packed
            items = [self.node(v, f"{path}[{i}]") for i, v in enumerate(value)]
            return items if isinstance(value, list) else tuple(items)
        if isinstance(value, np.generic):
            return value.item()
        if value is None or isinstance(value, bool | int | float | str | torch.Tensor):
            return value
        raise TypeError(f"{path}: a checkpoint cannot hold {type(value).__name__}")

    def _list(self, value: list[Any] | tuple[Any, ...], path: str) -> dict[str, Any] | None:
        """A long list of plain ints or of floats packed as an array, or of lists of
        ints as two (every value, and each list's length); None: not one of those."""
        if not isinstance(value, list) or not value:
            return None
        first = type(value[0])
        if first is list:
            return self._rows(value, path)
        if (
            first not in (int, float)
            or len(value) < MIN_LIST
            or any(type(v) is not first for v in value)
        ):
            return None
        try:
            arr = np.asarray(value, dtype=np.float64 if first is float else np.int64)
        except OverflowError:
            return None  # an int past 64 bits stays a Python int
        return self.array(arr, "list", path)

    def _rows(self, rows: list[Any], path: str) -> dict[str, Any] | None:
        if not all(type(r) is list for r in rows) or sum(map(len, rows)) < MIN_LIST:
            return None
        if any(type(v) is not int for r in rows for v in r):
            return None
        try:
            values = np.asarray([v for r in rows for v in r], dtype=np.int64)
        except OverflowError:
            return None
        lengths = np.asarray([len(r) for r in rows], dtype=np.int64)
        return {
            MARK: "rows",
            "values": self.array(values, "array", f"{path}.values"),
            "lengths": self.array(lengths, "array", f"{path}.lengths"),
        }

    def array(self, arr: np.ndarray, kind: str, path: str) -> dict[str, Any]:
        if not arr.flags.c_contiguous:
            arr = arr.copy(order="C")  # (np.ascontiguousarray makes a 0-d array 1-d)
        if arr.dtype.name not in DTYPES:
            raise TypeError(f"{path}: a checkpoint cannot hold an array of {arr.dtype}")
        index, self.count = self.count, self.count + 1
        head = {MARK: kind, "dtype": arr.dtype.name, "shape": list(arr.shape)}
        flat = arr.reshape(-1).astype(arr.dtype.newbyteorder("<"), copy=False)
        key = (arr.dtype.name, arr.shape, xxhash.xxh3_128_hexdigest(flat.tobytes()))
        earlier = self.seen.get(key)
        if earlier is not None and np.array_equal(earlier[1].view(np.uint8), flat.view(np.uint8)):
            return {**head, "codec": "same", "as": earlier[0]}
        self.seen[key] = (index, flat)
        if arr.ndim == 1 and flat.size >= MIN_LIST:
            lines = self.lines.setdefault(flat.dtype.name, [])
            same = self._start_of(flat, lines)
            lines.append((index, flat))
            if same is not None:
                return {**head, **same}
        return {**head, **encode_flat(flat)}

    @staticmethod
    def _start_of(flat: np.ndarray, earlier: list[tuple[int, np.ndarray]]) -> Any:
        """A reference to an earlier 1-D array that starts with ``flat``, but where
        ``flat`` holds NaN: a cache's copy of the table's counts, or of its scores of
        the ids it was told of (NaN for the others), trimmed to the ids it has seen."""
        bits = flat.view(f"u{flat.dtype.itemsize}")
        nan = np.zeros(len(flat), dtype=bool)
        if flat.dtype.kind == "f":
            nan = np.isnan(flat)
            if (bits[nan] != np.array(np.nan, dtype=flat.dtype).view(bits.dtype)).any():
                return None  # a NaN with a payload of its own: a mask would not restore it
        for index, other in reversed(earlier[-4:]):
            start = other[: len(flat)].view(bits.dtype)
            if len(start) == len(flat) and np.array_equal(bits[~nan], start[~nan]):
                masked = {"nan": encode_flat(nan)} if nan.any() else {}
                return {"codec": "same", "as": index, **masked}
        return None


def pack(state: Any) -> Any:
    """``state`` with every numpy array and long number list packed (see the module)."""
    return _Packer().node(state, "state")


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


# -- unpacking ---------------------------------------------------------------------------
class _Unpacker:
    """One state's unpacking, in the order it was packed (a reference points back)."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.arrays: list[np.ndarray] = []

    def node(self, value: Any, path: str) -> Any:
        if isinstance(value, dict):
            if MARK in value:
                return self.packed(value, path)
            return {k: self.node(v, f"{path}.{k}") for k, v in value.items()}
        if isinstance(value, list):
            return [self.node(v, f"{path}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, tuple):
            return tuple(self.node(v, f"{path}[{i}]") for i, v in enumerate(value))
        return value

    def packed(self, node: dict[str, Any], path: str) -> Any:
        if type(node[MARK]) is str and node[MARK] == "rows":
            return self._rows(node, path)
        try:
            kind = _str(node, MARK, ("array", "list", "rows"))
            arr = self._array(node)
        except HotsetError as exc:
            raise HotsetError(f"{self.where}: {path[6:] or 'state'}: {exc}") from None
        self.arrays.append(arr)
        if kind == "list":
            return arr.tolist()
        return arr

    def _rows(self, node: dict[str, Any], path: str) -> list[list[int]]:
        """Lists of ints from their concatenation and lengths."""
        parts = []
        for key in ("values", "lengths"):
            part = node.get(key)
            if not isinstance(part, dict) or part.get(MARK) != "array":
                raise HotsetError(f"{self.where}: {path[6:]}: rows need packed {key}")
            parts.append(self.packed(part, f"{path}.{key}"))
        values, lengths = parts
        if values.ndim != 1 or lengths.ndim != 1 or values.dtype.kind not in "iu":
            raise HotsetError(f"{self.where}: {path[6:]}: rows need 1-D integer arrays")
        if lengths.dtype.kind not in "iu" or (lengths < 0).any() or lengths.sum() != len(values):
            raise HotsetError(f"{self.where}: {path[6:]}: row lengths do not add up")
        cuts = np.cumsum(lengths)[:-1]
        return [r.tolist() for r in np.split(values, cuts)] if len(lengths) else []

    def _array(self, node: dict[str, Any]) -> np.ndarray:
        dtype = np.dtype(_str(node, "dtype", tuple(sorted(DTYPES))))
        shape = node.get("shape")
        if (
            not isinstance(shape, list)
            or len(shape) > 8
            or not all(type(s) is int and 0 <= s < 2**40 for s in shape)
        ):
            raise HotsetError(f"shape must be a list of sizes, got {_show(shape)}")
        if node.get(MARK) == "list" and len(shape) != 1:
            raise HotsetError("a packed list must be 1-D")
        count = math.prod(shape)
        if type(node.get("codec")) is str and node["codec"] == "same":
            ref = _int(node, "as")
            if not 0 <= ref < len(self.arrays):
                raise HotsetError(f"refers to array {ref}, which is not before it")
            arr = self.arrays[ref]
            line = arr.ndim == len(shape) == 1 and arr.size >= count
            if arr.dtype != dtype or not (list(arr.shape) == shape or line):
                raise HotsetError("refers to an array of another dtype or shape")
            arr = arr[:count].copy() if line else arr.copy()
            if node.get("nan") is not None:  # the earlier one, but where it holds NaN
                if dtype.kind != "f" or not isinstance(node["nan"], dict):
                    raise HotsetError("only a float array's reference holds a NaN mask")
                arr[decode_flat(node["nan"], np.dtype(np.bool_), count)] = np.nan
            return arr
        return decode_flat(node, dtype, count).reshape(shape)


def unpack(state: Any, *, where: str = "loader state") -> Any:
    """The tree :func:`pack` was given, bit for bit; a :class:`HotsetError` on bad data."""
    return _Unpacker(where).node(state, "state")


def _show(value: object) -> str:
    return f"{value!r:.60}"


def _str(node: dict[str, Any], key: str, allowed: tuple[str, ...]) -> str:
    value = node.get(key)
    if type(value) is not str or value not in allowed:
        raise HotsetError(f"{key} must be one of {', '.join(allowed)}, got {_show(value)}")
    return value


def _int(node: dict[str, Any], key: str) -> int:
    value = node.get(key)
    if type(value) is not int:
        raise HotsetError(f"{key} must be an integer, got {_show(value)}")
    return value


def _flag(node: dict[str, Any], key: str) -> bool:
    value = node.get(key)
    if type(value) is not bool:
        raise HotsetError(f"{key} must be True or False, got {_show(value)}")
    return value


def _bytes(node: dict[str, Any], expected: int, width: int = 1) -> bytes:
    """The node's data with its byte planes inflated and interleaved: ``expected`` bytes."""
    data = node.get("data")
    if not isinstance(data, torch.Tensor) or data.dtype != torch.uint8 or data.dim() != 1:
        raise HotsetError(f"data must be a 1-D uint8 tensor, got {_show(data)}")
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
            f"{_show(squeezed)} and {_show(lengths)}"
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
    codec = _str(node, "codec", ("plain", "bits", "int", "float", "dict"))
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
    _str(node, "codec", ("int",))
    width = _int(node, "width")
    if width not in _WIDTHS:
        raise HotsetError(f"width must be one of {_WIDTHS}, got {width}")
    base, delta = _int(node, "base"), _flag(node, "delta")
    stored = count - 1 if delta else count
    if stored < 0:
        raise HotsetError("a difference-coded array cannot be empty")
    raw = _bytes(node, stored * width, width)
    u = np.frombuffer(raw, dtype=f"<u{width}").astype(np.uint64) + np.uint64(base % 2**64)
    if delta:
        start = np.array([_int(node, "first") % 2**64], dtype=np.uint64)
        u = np.cumsum(np.concatenate([start, u]), dtype=np.uint64)  # wraps, as packed
    info = np.iinfo(dtype)
    values = u.view(np.int64) if info.min < 0 else u
    if len(values) and (int(values.min()) < info.min or int(values.max()) > info.max):
        raise HotsetError(f"a value lies outside {dtype}")
    return values.astype(dtype)


def _decode_floats(node: dict[str, Any], count: int, dtype: np.dtype[Any]) -> np.ndarray:
    width = _int(node, "width")
    if width != dtype.itemsize and not (width == 4 and dtype == np.float64):
        raise HotsetError(f"width {width} cannot hold {dtype}")
    stored = np.dtype(f"<f{width}")
    if node["codec"] == "dict":
        size = _int(node, "size")
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
        raise HotsetError(f"values must list {count} numbers, got {_show(values)}")
    if not all(type(v) is kind for v in values):
        raise HotsetError(f"values must all be {kind.__name__}s, got {_show(values)}")
    try:
        return np.array(values, dtype=dtype)
    except OverflowError:
        raise HotsetError(f"a value lies outside {dtype}") from None
