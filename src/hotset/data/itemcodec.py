"""A safe, deterministic byte encoding for the items of a user's own Dataset.

Why not pickle: the bytes of a cached item come back from a cache other clients
can write (a Redis namespace) or from a file, and unpickling runs whatever code
the bytes name. This encoding holds data only, so decoding hostile bytes can at
worst fail: every malformed input is an :class:`~hotset.errors.IntegrityError`,
and every length is checked against the bytes that remain before anything is
allocated, so a forged length cannot ask for more memory than the input holds.

Why deterministic: the loader budgets the cache in bytes and checks integrity
by the xxh3 of an item's bytes, both measured once up front; the same item must
therefore always encode to the same bytes (dict order is insertion order).

What it holds: ``None``, ``bool``, ``int`` (any size), ``float``, ``str``,
``bytes``, numpy arrays and scalars of plain numeric and bool dtypes, torch
tensors (strided, on the CPU, not requiring grad; they come back as tensors)
and ``tuple``/``list``/``dict`` (``str`` or ``int`` keys) of these, at most
:data:`MAX_DEPTH` deep. Exact types only: a subclass (a namedtuple, an
``IntEnum``, a torchvision ``tv_tensors.Image``) is refused rather than coming
back as something else. Anything else is a :class:`~hotset.errors.HotsetError`
naming the type and where in the item it sits.

Memory is bounded too. A decoded value costs more than its encoding: a 0-d tensor
is 4 bytes encoded and several hundred bytes of Python and torch objects decoded, so
a list of them took 151x its bytes (a forged entry of 100 MB would ask for 15 GB).
Each value is charged an estimate of what it takes decoded (:func:`_charge`: its
payload plus a fixed overhead per object, most for tensors and arrays), and an item
is refused -- by the encoder, naming it, and by the decoder, before allocating past
the bound -- when the total exceeds :data:`MAX_AMPLIFICATION` times its encoded bytes
plus :data:`AMPLIFICATION_ALLOWANCE`. Encoder and decoder charge the same, so every
item the encoder accepts decodes.

Decoding accepts exactly the bytes the encoder writes (one spelling per value:
no trailing bytes, no repeated dict keys, ints in the one length the encoder
gives them, bools as 0/1), so bytes that decode re-encode to themselves.

Layout: ``MAGIC`` then one value; a value is a one-byte tag and its payload.
Lengths, counts and dimensions are unsigned 64-bit little-endian, numbers and
array data little-endian, an ``int`` beyond 64 bits a length and
``bit_length() // 8 + 1`` bytes of two's complement.
"""

from __future__ import annotations

import math
import struct
import sys
from typing import Any

import numpy as np

from hotset.errors import HotsetError, IntegrityError

__all__ = [
    "AMPLIFICATION_ALLOWANCE",
    "MAGIC",
    "MAX_AMPLIFICATION",
    "MAX_DEPTH",
    "ItemDecodeError",
    "decode_item",
    "encode_item",
]

#: the first bytes of every encoding (version 1): a pickle or other bytes fail at once
MAGIC = b"HSI\x01"
#: containers nest at most this deep, encoding and decoding (bounds the recursion)
MAX_DEPTH = 32
#: at most this many dimensions per array (numpy allows 64)
MAX_NDIM = 32
#: no dimension of a decoded array is larger (bounds empty arrays of huge shape)
MAX_DIM = 1 << 40
#: a decoded item takes at most this many times its encoded bytes (estimated, see the
#: module docstring), plus the allowance below
MAX_AMPLIFICATION = 16
#: what any item may take decoded beyond MAX_AMPLIFICATION times its bytes (a few
#: tensors or objects of a small item)
AMPLIFICATION_ALLOWANCE = 1 << 20

_NONE, _FALSE, _TRUE, _INT64, _BIGINT, _FLOAT = 0, 1, 2, 3, 4, 5
_STR, _BYTES, _LIST, _TUPLE, _DICT, _ARRAY, _SCALAR, _TENSOR = 6, 7, 8, 9, 10, 11, 12, 13

#: dtype code -> little-endian numpy dtype; code ``_BF16`` (tensors only) is bfloat16 bits
_DTYPES: tuple[np.dtype[Any], ...] = tuple(
    np.dtype(name)
    for name in (
        "|b1", "|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8",
        "<f2", "<f4", "<f8", "<c8", "<c16",
    )
)  # fmt: skip
_BF16 = len(_DTYPES)
_CODE = {(dt.kind, dt.itemsize): code for code, dt in enumerate(_DTYPES)}
_U64 = struct.Struct("<Q")
_SHAPES = tuple(struct.Struct(f"<{ndim}Q") for ndim in range(MAX_NDIM + 1))
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_TYPES_HELD = (
    "None, bool, int, float, str, bytes, numpy arrays and scalars of numeric or bool "
    "dtype, CPU torch tensors, and tuples, lists and dicts (str or int keys) of them"
)


#: estimated bytes a decoded value takes beyond its payload, by tag (CPython and torch
#: objects, rounded up; a container's slots are charged per element, see _charge)
_OVERHEAD = {
    _NONE: 8,
    _FALSE: 8,
    _TRUE: 8,
    _INT64: 32,
    _BIGINT: 40,
    _FLOAT: 32,
    _STR: 64,
    _BYTES: 48,
    _LIST: 64,
    _TUPLE: 64,
    _DICT: 240,
    _ARRAY: 128,
    _SCALAR: 64,
    _TENSOR: 640,
}
#: a container's cost per element (a pointer), and a dict's per entry on top
_SLOT, _DICT_ENTRY = 8, 64


def _charge(tag: int, payload: int, elements: int = 0) -> int:
    """What a decoded value of ``tag`` is estimated to take: its overhead, its payload
    bytes (a str's, an array's data) and its container slots; the same for both sides."""
    extra = elements * (_SLOT + (_DICT_ENTRY if tag == _DICT else 0))
    return _OVERHEAD[tag] + payload + extra


def _bound(encoded: int) -> int:
    """The most an item of ``encoded`` bytes may take decoded."""
    return MAX_AMPLIFICATION * encoded + AMPLIFICATION_ALLOWANCE


class _Parts(list[Any]):
    """The encoder's output pieces, and the decoded cost charged so far."""

    def __init__(self) -> None:
        super().__init__()
        self.cost = 0


class ItemDecodeError(IntegrityError):
    """Bytes that are not a valid item encoding (a malformed or forged entry)."""


class _Malformed(Exception):
    """Raised inside the decoder; :func:`decode_item` turns it into :class:`ItemDecodeError`."""


def _unsupported(obj: object, where: str, why: str = "") -> HotsetError:
    kind = f"{type(obj).__module__}.{type(obj).__qualname__}"
    return HotsetError(
        f"cannot cache {where}, a {kind}{why}: items of your own Dataset are cached in a "
        f"safe encoding that holds {_TYPES_HELD}. Pass read= (the stored bytes) and "
        "decode= to hotset.from_dataset instead, or make __getitem__ return tensors "
        "(e.g. a transform ending in ToTensor/PILToTensor)"
    )


def encode_item(item: Any, *, where: str = "item") -> bytes:
    """``item``'s bytes: the same item always gives the same bytes (see the module).

    ``where`` names the item in the error an unsupported type raises.
    """
    parts = _Parts()
    parts.append(MAGIC)
    _encode(item, parts, where, 0)
    data = b"".join(parts)
    if parts.cost > _bound(len(data)):
        raise HotsetError(
            f"cannot cache {where}: decoded it would take about {parts.cost} bytes, "
            f"{parts.cost / len(data):.0f}x its {len(data)} encoded bytes (at most "
            f"{MAX_AMPLIFICATION}x plus {AMPLIFICATION_ALLOWANCE} bytes): many small tensors, "
            "arrays or objects (a list of 0-d tensors, say); return them as one tensor or "
            "array (torch.stack, torch.tensor(list)) instead"
        )
    return data


def _encode(obj: Any, parts: _Parts, where: str, depth: int) -> None:
    kind = type(obj)
    if obj is None:
        parts.append(bytes((_NONE,)))
        parts.cost += _charge(_NONE, 0)
    elif kind is bool:
        parts.append(bytes((_TRUE if obj else _FALSE,)))
        parts.cost += _charge(_TRUE, 0)
    elif kind is int:
        _encode_int(obj, parts)
    elif kind is float:
        parts += (bytes((_FLOAT,)), _F64.pack(obj))
        parts.cost += _charge(_FLOAT, 0)
    elif kind is str:
        data = obj.encode("utf-8", "surrogatepass")
        parts += (bytes((_STR,)), _U64.pack(len(data)), data)
        parts.cost += _charge(_STR, len(data))
    elif kind is bytes:
        parts += (bytes((_BYTES,)), _U64.pack(len(obj)), obj)
        parts.cost += _charge(_BYTES, len(obj))
    elif kind in (list, tuple, dict):
        _encode_container(obj, parts, where, depth)
    elif kind is np.ndarray:
        _encode_array(_ARRAY, obj, parts, where)
    elif isinstance(obj, np.generic) and kind.__module__ == "numpy":
        _encode_array(_SCALAR, np.asarray(obj), parts, where, shown=obj)
    elif _is_tensor(obj):
        _encode_tensor(obj, parts, where)
    else:
        raise _unsupported(obj, where)


def _encode_int(value: int, parts: _Parts) -> None:
    if _INT64_MIN <= value <= _INT64_MAX:
        parts += (bytes((_INT64,)), _I64.pack(value))
        parts.cost += _charge(_INT64, 0)
        return
    data = value.to_bytes(value.bit_length() // 8 + 1, "little", signed=True)
    parts += (bytes((_BIGINT,)), _U64.pack(len(data)), data)
    parts.cost += _charge(_BIGINT, len(data))


def _encode_container(obj: Any, parts: _Parts, where: str, depth: int) -> None:
    if depth >= MAX_DEPTH:
        raise HotsetError(
            f"cannot cache {where}: containers nest more than {MAX_DEPTH} deep "
            "(or the item contains itself)"
        )
    if type(obj) is dict:
        parts += (bytes((_DICT,)), _U64.pack(len(obj)))
        parts.cost += _charge(_DICT, 0, len(obj))
        for key, value in obj.items():
            if type(key) not in (str, int):
                raise _unsupported(key, f"a key of {where}", " (dict keys must be str or int)")
            _encode(key, parts, f"a key of {where}", depth + 1)
            _encode(value, parts, f"{where}[{key!r}]", depth + 1)
        return
    tag = _LIST if type(obj) is list else _TUPLE
    parts += (bytes((tag,)), _U64.pack(len(obj)))
    parts.cost += _charge(tag, 0, len(obj))
    for i, value in enumerate(obj):
        _encode(value, parts, f"{where}[{i}]", depth + 1)


def _encode_array(
    tag: int, array: np.ndarray, parts: _Parts, where: str, *, shown: object = None
) -> None:
    """An array (or a numpy scalar's 0-d array, ``shown`` in errors) of an allowed dtype."""
    code = _CODE.get((array.dtype.kind, array.dtype.itemsize))
    if code is None or array.dtype.fields is not None:
        culprit = array if shown is None else shown
        raise _unsupported(culprit, where, f" of dtype {array.dtype}")
    if array.ndim > MAX_NDIM:
        raise HotsetError(f"cannot cache {where}: {array.ndim} dimensions, at most {MAX_NDIM}")
    # C order and little-endian; asarray keeps a 0-d array 0-d (ascontiguousarray would not)
    array = np.asarray(array, dtype=_DTYPES[code], order="C")
    if code == 0:  # a bool is one byte 0 or 1, whatever a view wrote into it
        array = np.asarray(array.view(np.uint8) != 0, order="C")
    _array_parts(tag, code, array, parts)


def _array_parts(tag: int, code: int, array: np.ndarray, parts: _Parts) -> None:
    parts += (bytes((tag, code, array.ndim)), *map(_U64.pack, array.shape))
    parts.cost += _charge(tag, array.nbytes)
    if array.size:
        parts.append(array)  # C-contiguous: join copies its buffer as it is


def _is_tensor(obj: object) -> bool:
    torch = sys.modules.get("torch")  # no tensor can exist before torch is imported
    return torch is not None and isinstance(obj, torch.Tensor)


def _encode_tensor(tensor: Any, parts: _Parts, where: str) -> None:
    import torch

    if type(tensor) is not torch.Tensor:
        raise _unsupported(tensor, where, " (a tensor subclass: .as_subclass(torch.Tensor))")
    if tensor.layout != torch.strided or tensor.is_quantized or tensor.is_nested:
        raise _unsupported(tensor, where, f" with layout {tensor.layout}")
    if tensor.device.type != "cpu":
        raise _unsupported(tensor, where, f" on {tensor.device} (return CPU tensors)")
    if tensor.requires_grad:
        raise _unsupported(tensor, where, " that requires grad (return it .detach()ed)")
    if tensor.dim() > MAX_NDIM:
        raise HotsetError(f"cannot cache {where}: {tensor.dim()} dimensions, at most {MAX_NDIM}")
    tensor = tensor.resolve_conj().resolve_neg().contiguous()
    if tensor.dtype == torch.bfloat16:
        _array_parts(_TENSOR, _BF16, tensor.view(torch.int16).numpy(), parts)
        return
    try:
        array = tensor.numpy()
    except (TypeError, RuntimeError):
        raise _unsupported(tensor, where, f" of dtype {tensor.dtype}") from None
    _encode_array(_TENSOR, array, parts, where)


class _Reader:
    """A cursor over the input that never reads (or allocates) past its end."""

    def __init__(self, data: bytes | bytearray | memoryview) -> None:
        self.view = memoryview(data).cast("B")
        self.size = len(self.view)
        self.pos = 0
        #: what the values decoded so far take (estimated), and the most they may
        self.cost = 0
        self.bound = _bound(self.size)

    def charge(self, tag: int, payload: int, elements: int = 0) -> None:
        """Count a value about to be made; past the bound, the input is refused."""
        self.cost += _charge(tag, payload, elements)
        if self.cost > self.bound:
            raise _Malformed(
                f"decoded it would take over {self.bound} bytes ({MAX_AMPLIFICATION}x its "
                f"{self.size} bytes plus {AMPLIFICATION_ALLOWANCE}): too many small objects"
            )

    def _advance(self, n: int) -> int:
        """Where ``n`` bytes start; the cursor moves past them (if the input holds them)."""
        start = self.pos
        if n > self.size - start:
            raise _Malformed(f"needs {n} bytes at offset {start}, {self.size - start} remain")
        self.pos = start + n
        return start

    def take(self, n: int) -> memoryview:
        start = self._advance(n)
        return self.view[start : self.pos]

    def byte(self) -> int:
        return int(self.view[self._advance(1)])

    def u64(self) -> int:
        return int(_U64.unpack_from(self.view, self._advance(8))[0])

    def unpack(self, layout: struct.Struct) -> tuple[Any, ...]:
        return layout.unpack_from(self.view, self._advance(layout.size))

    def length(self, what: str, unit: int = 1) -> int:
        """A count of things of at least ``unit`` bytes each, checked against what remains."""
        n = self.u64()
        if n * unit > self.size - self.pos:
            raise _Malformed(f"{what} of {n} at offset {self.pos} exceeds the input")
        return n


def decode_item(data: bytes | bytearray | memoryview, *, where: str = "item") -> Any:
    """The item :func:`encode_item` encoded; :class:`ItemDecodeError` for anything else.

    ``where`` names the bytes in the error (a cache key, a sample id).
    """
    reader = _Reader(data)
    try:
        if bytes(reader.view[: len(MAGIC)]) != MAGIC:
            start = bytes(reader.view[:8])
            raise _Malformed(f"it does not start with {MAGIC!r} (starts with {start!r})")
        reader.pos = len(MAGIC)
        value = _decode(reader, 0)
        if reader.pos != len(reader.view):
            raise _Malformed(f"{len(reader.view) - reader.pos} bytes follow the item")
    except _Malformed as exc:
        raise ItemDecodeError(f"{where}: not a valid hotset item encoding: {exc}") from None
    except (ValueError, TypeError, OverflowError, struct.error) as exc:
        raise ItemDecodeError(
            f"{where}: not a valid hotset item encoding: malformed at offset {reader.pos}: {exc}"
        ) from None
    return value


def _decode(reader: _Reader, depth: int) -> Any:
    tag = reader.byte()
    if tag in (_NONE, _FALSE, _TRUE, _INT64, _FLOAT):
        reader.charge(tag, 0)
    if tag == _NONE:
        return None
    if tag in (_FALSE, _TRUE):
        return tag == _TRUE
    if tag == _INT64:
        return _I64.unpack(reader.take(8))[0]
    if tag == _BIGINT:
        return _decode_bigint(reader)
    if tag == _FLOAT:
        return _F64.unpack(reader.take(8))[0]
    if tag in (_STR, _BYTES):
        raw = reader.take(reader.length("a str" if tag == _STR else "bytes"))
        reader.charge(tag, len(raw))
        return str(raw, "utf-8", "surrogatepass") if tag == _STR else bytes(raw)
    if tag in (_LIST, _TUPLE, _DICT):
        return _decode_container(tag, reader, depth)
    if tag in (_ARRAY, _SCALAR, _TENSOR):
        return _decode_array(tag, reader)
    raise _Malformed(f"unknown tag {tag} at offset {reader.pos - 1}")


def _decode_bigint(reader: _Reader) -> int:
    """An int beyond 64 bits, in the one spelling the encoder writes (minimal length)."""
    at = reader.pos
    raw = reader.take(reader.length("an int"))
    reader.charge(_BIGINT, len(raw))
    value = int.from_bytes(raw, "little", signed=True)
    if _INT64_MIN <= value <= _INT64_MAX or len(raw) != value.bit_length() // 8 + 1:
        raise _Malformed(f"an int at offset {at} is not in its canonical form")
    return value


def _decode_container(tag: int, reader: _Reader, depth: int) -> Any:
    if depth >= MAX_DEPTH:
        raise _Malformed(f"containers nest more than {MAX_DEPTH} deep")
    if tag != _DICT:
        n = reader.length("a sequence")
        reader.charge(tag, 0, n)
        values = [_decode(reader, depth + 1) for _ in range(n)]
        return values if tag == _LIST else tuple(values)
    out: dict[Any, Any] = {}
    n = reader.length("a dict", 2)
    reader.charge(_DICT, 0, n)
    for _ in range(n):
        at = reader.pos
        key = _decode(reader, depth + 1)
        if type(key) not in (str, int) or key in out:
            raise _Malformed(f"bad or repeated dict key {key!r:.40} at offset {at}")
        out[key] = _decode(reader, depth + 1)
    return out


def _decode_array(tag: int, reader: _Reader) -> Any:
    code, ndim = reader.byte(), reader.byte()
    if code > _BF16 or (code == _BF16 and tag != _TENSOR):
        raise _Malformed(f"unknown dtype code {code} at offset {reader.pos - 2}")
    if ndim > MAX_NDIM or (tag == _SCALAR and ndim != 0):
        raise _Malformed(f"bad number of dimensions {ndim} at offset {reader.pos - 1}")
    shape: tuple[int, ...] = reader.unpack(_SHAPES[ndim])
    if any(d > MAX_DIM for d in shape) or math.prod(max(d, 1) for d in shape) > MAX_DIM:
        raise _Malformed(f"shape {shape} is larger than any array this encodes")
    dtype = _DTYPES[code] if code < _BF16 else _DTYPES[3]  # bfloat16 travels as int16 bits
    nbytes = math.prod(shape) * dtype.itemsize
    raw = reader.take(nbytes)  # a view: nothing allocated before the charge
    reader.charge(tag, nbytes)
    # a copy: aligned, writable memory of its own, not a view into the cached bytes
    array = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    if code == 0 and array.size and array.view(np.uint8).max() > 1:
        raise _Malformed(f"a bool array before offset {reader.pos} holds bytes other than 0/1")
    if not array.dtype.isnative:  # stored little-endian, read on a big-endian machine
        array = array.astype(array.dtype.newbyteorder("="))
    if tag == _ARRAY:
        return array
    if tag == _SCALAR:
        return array[()]
    import torch

    tensor = torch.from_numpy(array)
    return tensor.view(torch.bfloat16) if code == _BF16 else tensor
