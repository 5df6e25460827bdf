"""A checkpoint as plain types and uint8 tensors: lossless, compact, no numpy inside.

Why. ``torch.load`` unpickles only plain Python types and tensors by default
(``weights_only=True``); a state holding numpy arrays failed to load there
(``Unsupported global: GLOBAL numpy._core.multiarray._reconstruct``), inside
Lightning's resume among others. And a state holding every per-sample array at
its working width (int64 counts, float64 losses) weighed about 150 bytes per
sample, 190 MB per rank at ImageNet-1k's 1.28M samples.

What. :func:`pack` walks a state tree and turns every numpy array in it (and
every long list of ints or floats) into a small dict of plain values around one
uint8 tensor, in the smallest of a few lossless forms (:mod:`hotset.torch.arraycodec`);
:func:`unpack` turns them back, bit for bit: a resumed loader must make exactly
the decisions the saved one would have made, so nothing here is lossy. Across
the tree:

* an array equal to one packed earlier in the same state, or a 1-D one equal to
  the start of one (but where it holds NaN: then with a mask of its NaNs), is a
  reference to it (a cache's copy of the table's counts, or of its scores of the
  ids it was told of);
* a list of ints or floats is packed as an array, a list of lists of ints as
  their concatenation and lengths; both unpack to the same lists of Python numbers.

What is read back is data from a file: every field is checked, and anything
wrong is a :class:`HotsetError` naming where in the state it sits. Nothing is
unpickled or evaluated.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import xxhash

from hotset.errors import HotsetError
from hotset.torch.arraycodec import (
    MIN_LIST,
    decode_flat,
    encode_flat,
    field_int,
    field_str,
    show,
)

__all__ = ["DTYPES", "MARK", "MIN_LIST", "pack", "unpack"]

#: the key that marks a packed node (a dict no state of hotset's holds otherwise)
MARK = "__hotset_packed__"
#: the dtypes a packed array may have (anything else in a state is a bug, not data)
DTYPES = frozenset(
    {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
    | {"float16", "float32", "float64"}
)


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
            kind = field_str(node, MARK, ("array", "list", "rows"))
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
            mark = part.get(MARK) if isinstance(part, dict) else None
            if not isinstance(part, dict) or type(mark) is not str or mark != "array":
                # a damaged mark may be anything, an array among them
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
        dtype = np.dtype(field_str(node, "dtype", tuple(sorted(DTYPES))))
        shape = node.get("shape")
        if (
            not isinstance(shape, list)
            or len(shape) > 8
            or not all(type(s) is int and 0 <= s < 2**40 for s in shape)
        ):
            raise HotsetError(f"shape must be a list of sizes, got {show(shape)}")
        mark = node.get(MARK)
        if type(mark) is str and mark == "list" and len(shape) != 1:
            raise HotsetError("a packed list must be 1-D")
        count = math.prod(shape)
        if type(node.get("codec")) is str and node["codec"] == "same":
            ref = field_int(node, "as")
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
