"""The item encoding of a user's own Dataset (issue #25 item 2): data only, never code.

Round trips keep types and bytes; the same item always encodes to the same
bytes; unsupported types are refused naming the type and the read=/decode=
way out; and the decoder, fed arbitrary or mutated bytes (1,000 generated cases
each), returns a correct value or raises ItemDecodeError -- never another
exception, never runs code, never allocates what the input does not hold.
"""

from __future__ import annotations

import collections
import math
import pickle
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from PIL import Image

from hotset.data.itemcodec import MAGIC, MAX_DEPTH, ItemDecodeError, decode_item, encode_item
from hotset.errors import HotsetError, IntegrityError

CASES = 1000
FUZZ = settings(
    max_examples=CASES,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
DTYPES = ["bool", "int8", "uint8", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8"]
DTYPES += ["<f2", "<f4", "<f8", "<c8", "<c16"]


def _same(a: Any, b: Any) -> bool:
    """Equal in type and bytes, all the way down (NaN equals itself here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and _same(_bits(a), _bits(b))
    if isinstance(a, np.ndarray | np.generic):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _bits(t: torch.Tensor) -> np.ndarray:
    t = t.contiguous()
    return t.view(torch.int16).numpy() if t.dtype == torch.bfloat16 else t.numpy()


def _arrays() -> st.SearchStrategy[Any]:
    shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
    return st.sampled_from(DTYPES).flatmap(lambda dt: hnp.arrays(np.dtype(dt), shapes))


def _leaves() -> st.SearchStrategy[Any]:
    arrays = _arrays()
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.integers(min_value=-(2**200), max_value=2**200),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=20),
        st.binary(max_size=20),
        arrays,
        arrays.map(lambda a: a[()] if a.ndim == 0 else a),  # numpy scalars too
        arrays.map(lambda a: torch.from_numpy(a.copy())),
        st.integers(0, 3).map(lambda n: torch.arange(n, dtype=torch.bfloat16)),
    )


def _items() -> st.SearchStrategy[Any]:
    keys = st.one_of(st.text(max_size=8), st.integers(-(2**70), 2**70))
    return st.recursive(
        _leaves(),
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.lists(inner, max_size=4).map(tuple),
            st.dictionaries(keys, inner, max_size=4),
        ),
        max_leaves=12,
    )


@FUZZ
@given(_items())
def test_round_trip_keeps_types_values_and_bytes(item: Any) -> None:
    data = encode_item(item)
    back = decode_item(data)
    assert _same(back, item)
    assert encode_item(back) == data  # one item, one spelling


def _decodes_correctly_or_refuses(data: bytes) -> None:
    """The decoder's whole contract: a correct value, or ItemDecodeError."""
    try:
        value = decode_item(data, where="'k'")
    except ItemDecodeError as exc:
        assert str(exc).startswith("'k': not a valid hotset item encoding")
        return
    assert encode_item(value) == data  # accepted bytes are exactly a value's encoding


@FUZZ
@given(st.binary(max_size=200))
def test_fuzz_arbitrary_bytes(data: bytes) -> None:
    _decodes_correctly_or_refuses(data)
    _decodes_correctly_or_refuses(MAGIC + data)  # past the magic too


@FUZZ
@given(_items(), st.data())
def test_fuzz_mutated_encodings(item: Any, draw: st.DataObject) -> None:
    data = bytearray(encode_item(item))
    for _ in range(draw.draw(st.integers(1, 4), label="mutations")):
        op = draw.draw(st.sampled_from(["flip", "set", "cut", "insert", "delete"]), label="op")
        at = draw.draw(st.integers(0, len(data)), label="at")
        if op == "cut":
            del data[at:]
        elif op == "insert":
            data[at:at] = draw.draw(st.binary(min_size=1, max_size=9), label="bytes")
        elif at < len(data) and op == "delete":
            del data[at]
        elif at < len(data) and op == "flip":
            data[at] ^= 1 << draw.draw(st.integers(0, 7), label="bit")
        elif at < len(data):
            data[at] = draw.draw(st.sampled_from([0, 1, 0x7F, 0x80, 0xFF]), label="value")
    _decodes_correctly_or_refuses(bytes(data))


def _u64(n: int) -> bytes:
    return struct.pack("<Q", n)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (bytes([6]) + _u64(2**62), "a str of 4611686018427387904 .* exceeds the input"),
        (bytes([7]) + _u64(2**40), "bytes of 1099511627776 .* exceeds the input"),
        (bytes([4]) + _u64(2**63), "an int of .* exceeds the input"),
        (bytes([8]) + _u64(2**64 - 1), "a sequence of .* exceeds the input"),
        (bytes([10]) + _u64(2**40), "a dict of .* exceeds the input"),
        (bytes([11, 10, 2]) + _u64(2**20) + _u64(2**20), "needs 4398046511104 bytes"),
        (bytes([11, 10, 2]) + _u64(0) + _u64(2**60), "larger than any array"),
        (bytes([11, 10, 40]), "bad number of dimensions 40"),
        (bytes([11, 14, 0]), "unknown dtype code 14"),  # bfloat16 outside a tensor
        ((bytes([8]) + _u64(1)) * (MAX_DEPTH + 1) + bytes([0]), "nest more than 32 deep"),
        (bytes([12, 0, 0, 2]), "bool .* bytes other than 0/1"),
        (bytes([4]) + _u64(9) + (5).to_bytes(9, "little"), "not in its canonical form"),
        (
            bytes([10]) + _u64(2) + bytes([3]) + _u64(1) + bytes([0, 3]) + _u64(1) + bytes([0]),
            "repeated dict key 1",
        ),
        (bytes([10]) + _u64(1) + bytes([5]) + _u64(0) + bytes([0]), "bad or repeated dict key"),
        (bytes([6]) + _u64(1) + b"\xff", "malformed at offset .*utf-8"),
        (bytes([0, 0]), "1 bytes follow the item"),
        (bytes([99]), "unknown tag 99"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_forged_lengths_and_shapes_are_refused_before_allocating(body: bytes, match: str) -> None:
    with pytest.raises(ItemDecodeError, match=match) as caught:
        decode_item(MAGIC + body, where="item '7'")
    assert isinstance(caught.value, IntegrityError)
    assert str(caught.value).startswith("item '7': not a valid hotset item encoding")


class _Touch:
    """Unpickling this creates ``path``: the canary of code execution."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return open, (str(self.path), "w")


def test_a_pickle_payload_is_refused_and_runs_nothing(tmp_path: Path) -> None:
    payload = pickle.dumps((_Touch(tmp_path / "canary"), 1))
    pickle.loads(pickle.dumps(_Touch(tmp_path / "control")))  # the payload is live
    assert (tmp_path / "control").exists()
    for data in (payload, MAGIC + payload):
        with pytest.raises(ItemDecodeError):
            decode_item(data)
    assert not (tmp_path / "canary").exists()


def test_the_same_item_always_encodes_to_the_same_bytes() -> None:
    base = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    item = {"x": base, "y": 3, "name": "a", "extra": [np.float32(1.5), (None, b"z")]}
    again = {"x": base.clone(), "y": 3, "name": "a", "extra": [np.float32(1.5), (None, b"z")]}
    assert encode_item(item) == encode_item(again)
    # layout and byte order are normalised: strides and endianness do not change the bytes
    assert encode_item(base.transpose(0, 2).contiguous().transpose(0, 2)) == encode_item(base)
    wide = np.arange(6, dtype="<i4")
    assert encode_item(wide.astype(">i4")) == encode_item(wide)
    assert encode_item(wide[::2]) == encode_item(wide[::2].copy())
    # a bool written through a uint8 view is still one bool: it must decode again
    odd = np.array([2, 0, 1], dtype=np.uint8).view(bool)
    assert encode_item(odd) == encode_item(np.array([True, False, True]))
    assert decode_item(encode_item(torch.from_numpy(odd))).tolist() == [True, False, True]


def test_decoded_arrays_are_writable_and_tensors_are_tensors() -> None:
    back = decode_item(encode_item((torch.ones(3, 32, 32), np.zeros(4, np.uint8), 7)))
    tensor, array, label = back
    assert type(tensor) is torch.Tensor and tensor.dtype == torch.float32
    assert tensor.shape == (3, 32, 32) and float(tensor.sum()) == 3 * 32 * 32
    array[0] = 9  # owned, writable memory: no view into the cached bytes
    tensor += 1
    assert label == 7 and type(label) is int


Point = collections.namedtuple("Point", "x y")


class Custom:
    pass


@pytest.mark.parametrize(
    ("item", "where", "kind"),
    [
        (Image.new("RGB", (4, 4)), "item", "PIL.Image.Image"),
        ((Custom(), 1), r"item\[0\]", "Custom"),
        ({"a": [np.array([object()])]}, r"item\['a'\]\[0\]", "numpy.ndarray of dtype object"),
        (np.array(["s"]), "item", "numpy.ndarray of dtype <U1"),
        (np.datetime64("2024-01-01"), "item", "numpy.datetime64"),
        (Point(1, 2), "item", "Point"),
        (torch.zeros(2, requires_grad=True), "item", "torch.Tensor that requires grad"),
        (torch.nn.Parameter(torch.zeros(2)), "item", "Parameter"),
        (torch.zeros(2, device="meta"), "item", "torch.Tensor on meta"),
        (torch.zeros(2, 2).to_sparse(), "item", "torch.Tensor with layout torch.sparse_coo"),
        ({1.5: 2}, "a key of item", "builtins.float .*dict keys must be str or int"),
        (bytearray(b"x"), "item", "builtins.bytearray"),
    ],
)
def test_unsupported_types_are_named_with_the_way_out(item: Any, where: str, kind: str) -> None:
    with pytest.raises(HotsetError, match=rf"^cannot cache {where}, a [\w.]*{kind}") as caught:
        encode_item(item)
    assert "Pass read= (the stored bytes) and decode= to hotset.from_dataset" in str(caught.value)


def test_deep_or_self_containing_items_are_refused() -> None:
    loop: list[Any] = []
    loop.append(loop)
    deep: Any = 0
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    for item in (loop, deep):
        with pytest.raises(HotsetError, match=f"nest more than {MAX_DEPTH} deep"):
            encode_item(item)
    ok: Any = 0
    for _ in range(MAX_DEPTH):
        ok = [ok]
    assert decode_item(encode_item(ok)) == ok


def test_big_and_special_numbers() -> None:
    for value in (2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 10**400, -(10**400)):
        assert decode_item(encode_item(value)) == value
    for value in (math.inf, -math.inf, -0.0, 5e-324):
        assert struct.pack("<d", decode_item(encode_item(value))) == struct.pack("<d", value)
    assert math.isnan(decode_item(encode_item(math.nan)))


# -- memory amplification ----------------------------------------------------------------


def _rss_growth(fn: Any) -> int:
    """Bytes the process's resident set grew by while ``fn`` ran (and its result lived)."""
    import gc

    def rss() -> int:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * 4096

    gc.collect()
    before = rss()
    kept = fn()
    grown = rss() - before
    del kept
    return grown


def _zero_d_tensors(count: int) -> bytes:
    """A list of ``count`` 0-d int8 tensors, spelled as the encoder would (forged: the
    encoder refuses it now); 4 bytes each."""
    one = bytes((13, 2, 0, 1))  # _TENSOR, int8, 0 dimensions, the value
    return MAGIC + bytes((8,)) + struct.pack("<Q", count) + one * count


def test_a_list_of_0d_tensors_is_refused_before_it_takes_memory() -> None:
    """It decoded to about 151x its bytes before (a forged 100 MB entry: 15 GB)."""
    from hotset.data.itemcodec import AMPLIFICATION_ALLOWANCE, MAX_AMPLIFICATION

    data = _zero_d_tensors(300_000)  # 1.2 MB
    with pytest.raises(ItemDecodeError, match="too many small objects"):
        decode_item(data)

    def refused() -> None:
        with pytest.raises(ItemDecodeError):
            decode_item(data)

    assert _rss_growth(refused) < 8 << 20  # refused before it allocated (it took 180 MB)
    # the encoder refuses to write one, naming the item and the way out
    with pytest.raises(HotsetError, match=r"many small tensors.*torch.stack"):
        encode_item([torch.tensor(1, dtype=torch.int8) for _ in range(300_000)])
    # a few are fine (the allowance), as is one tensor of the same values
    small = [torch.tensor(i, dtype=torch.int8) for i in range(100)]
    assert [int(t) for t in decode_item(encode_item(small))] == list(range(100))
    big = torch.zeros(300_000, dtype=torch.int8)
    assert torch.equal(decode_item(encode_item(big)), big)
    assert MAX_AMPLIFICATION * len(data) + AMPLIFICATION_ALLOWANCE < 151 * len(data)


@pytest.mark.parametrize(
    "item",
    [
        [None] * 200_000,
        list(range(200_000)),
        [float(i) for i in range(100_000)],
        {str(i): i for i in range(50_000)},
        [np.float32(i) for i in range(50_000)],
        (torch.rand(3, 64, 64), 7, {"name": "x" * 100, "mask": np.ones((64, 64), bool)}),
    ],
    ids=["nones", "ints", "floats", "dict", "numpy-scalars", "image-item"],
)
def test_what_the_encoder_accepts_decodes_within_the_bound(item: Any) -> None:
    """Encoder and decoder charge alike: every accepted item decodes, and its measured
    growth stays within the bound the codec promises."""
    from hotset.data.itemcodec import AMPLIFICATION_ALLOWANCE, MAX_AMPLIFICATION

    data = encode_item(item)
    grown = _rss_growth(lambda: decode_item(data))
    assert grown <= MAX_AMPLIFICATION * len(data) + AMPLIFICATION_ALLOWANCE, grown / len(data)
