"""The checkpoint codec: every array comes back bit for bit, and damaged data is named.

A resume must make exactly the saved run's decisions, so packing may lose nothing:
not a NaN, not the sign of a zero, not an integer at the edge of its dtype. And a
packed state is data read from a file, so any field of it may be wrong: that is a
:class:`HotsetError` naming where, never another exception or a huge allocation.
"""

from __future__ import annotations

import copy
import io
import zlib
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from hotset.errors import HotsetError
from hotset.torch.statecodec import DTYPES, MARK, MIN_LIST, pack, unpack

_SETTINGS = settings(max_examples=300, deadline=None, database=None)


def _through_torch(state: Any) -> Any:
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    return torch.load(buf)  # weights_only=True, the default


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _arrays() -> st.SearchStrategy[np.ndarray]:
    """Any array a state could hold: every dtype, 0 to 2 dimensions, any values (NaNs,
    infinities, -0.0, integer extremes), also runs and few distinct values."""
    dtype = st.sampled_from(sorted(DTYPES)).map(np.dtype)
    shape = hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=90)
    return dtype.flatmap(
        lambda d: st.one_of(
            hnp.arrays(d, shape),
            hnp.arrays(d, shape, elements=hnp.from_dtype(d), unique=False, fill=hnp.from_dtype(d)),
        )
    )


@_SETTINGS
@given(arr=_arrays())
def test_every_array_comes_back_bit_for_bit(arr: np.ndarray) -> None:
    state = {"a": arr, "again": arr.copy(), "list": arr.reshape(-1).tolist()}
    packed = _through_torch(pack(state))
    back = unpack(packed)
    assert _same(back["a"], arr) and _same(back["again"], arr)
    assert back["list"] == state["list"] or np.array_equal(
        np.asarray(back["list"]), np.asarray(state["list"]), equal_nan=True
    )
    assert [type(v) for v in back["list"]] == [type(v) for v in state["list"]]


@pytest.mark.parametrize(
    "arr",
    [
        np.sort(np.random.default_rng(0).choice(10**6, 5000, replace=False)),  # sorted ids
        np.random.default_rng(1).permutation(10**6)[:5000],  # ids in an order
        np.full(5000, -1, dtype=np.int64),  # a constant
        np.log(np.random.default_rng(2).integers(0, 256, 5000) + 10.0),  # log-rank scores
        np.random.default_rng(3).random(5000).astype(np.float32).astype(np.float64),
        np.where(np.arange(5000) % 3, np.nan, 1.5),
        np.random.default_rng(4).random(5000) < 0.1,
        np.array([-(2**63), 2**63 - 1] * 40, dtype=np.int64),  # the whole int64 range
        np.array([0, 2**64 - 1] * 40, dtype=np.uint64),
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, 1.7e308] * 10),
    ],
)
def test_what_states_hold_packs_small_and_comes_back(arr: np.ndarray) -> None:
    packed = _through_torch(pack({"a": arr}))
    assert _same(unpack(packed)["a"], arr)
    if arr.size == 5000 and arr.dtype != np.bool_:
        data = sum(t.numel() for t in _tensors(packed))
        assert data < arr.nbytes / 2  # every one of these has structure to exploit


@pytest.mark.parametrize(
    "arr",
    [
        # few values in the probe, too many in the whole for a dictionary
        np.concatenate([np.ones(70_000), np.random.default_rng(10).random(200_000)]),
        # a dictionary of 3,000 values (a two-byte index)
        np.random.default_rng(11).choice(np.random.default_rng(12).random(3_000), 300_000),
        # planes that compress (zeros) beside planes that do not (random bytes)
        np.random.default_rng(13).integers(0, 2**24, 300_000, dtype=np.int64) << 20,
    ],
)
def test_arrays_past_the_probes_come_back(arr: np.ndarray) -> None:
    assert _same(unpack(_through_torch(pack({"a": arr})))["a"], arr)


def _tensors(node: Any) -> list[torch.Tensor]:
    if isinstance(node, torch.Tensor):
        return [node]
    if isinstance(node, dict):
        return [t for v in node.values() for t in _tensors(v)]
    if isinstance(node, list | tuple):
        return [t for v in node for t in _tensors(v)]
    return []


def test_a_policys_copy_of_the_tables_arrays_is_a_reference() -> None:
    """APP's ghost scores are the table's where known (NaN else), its access counts the
    table's; both only as long as the ids it has seen."""
    rng = np.random.default_rng(5)
    scores, counts = rng.random(20_000), rng.integers(0, 9, 20_000)
    ghost = scores[:19_990].copy()
    ghost[::7] = np.nan
    state = {"scores": scores, "counts": counts, "ghost": ghost, "freq": counts[:19_990]}
    packed = pack(state)
    assert packed["ghost"]["codec"] == packed["freq"]["codec"] == "same"
    back = unpack(_through_torch(packed))
    assert _same(back["ghost"], ghost) and _same(back["freq"], counts[:19_990])


def test_lists_of_ints_floats_and_rows_come_back_as_python_lists() -> None:
    state = {
        "ids": list(range(-5, 300)),
        "keys": [0.5 * i for i in range(100)],
        "rows": [[1, 2, 3], [], [2**62, -(2**63)]] * 20,
        "short": [1, 2, 3],
        "mixed": [1, 2.0] * 40,
        "huge": [2**70] * 40,
        "nested": {"more": [[-1] * 8] * 8},
    }
    packed = pack(state)
    assert all(isinstance(packed[k], dict) for k in ("ids", "keys", "rows"))
    assert unpack(_through_torch(packed)) == state


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            out.append((*prefix, key))
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out.append((*prefix, i))
            out += _paths(value, (*prefix, i))
    return out


_GOOD = pack(
    {
        "ids": np.random.default_rng(6).permutation(1000),
        "losses": np.random.default_rng(7).random(1000).astype(np.float32).astype(np.float64),
        "scores": np.log(np.random.default_rng(8).integers(0, 64, 1000) + 10.0),
        "seen": np.random.default_rng(9).random(1000) < 0.5,
        "copy": np.random.default_rng(6).permutation(1000),
        "rows": [[1, 2, 3], [4]] * 20,
        "short": np.arange(5),
    }
)
_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.text(max_size=6),
    st.sampled_from(["int", "float", "dict", "bits", "plain", "same", "float64", "rows"]),
    st.lists(st.integers(min_value=-3, max_value=2000), max_size=4),
    st.lists(st.booleans(), max_size=4),
    st.builds(lambda n: torch.zeros(n, dtype=torch.uint8), st.integers(0, 64)),
    st.builds(lambda n: torch.zeros(n, dtype=torch.float32), st.integers(0, 8)),
    st.builds(np.arange, st.integers(min_value=0, max_value=8)),
)


@settings(
    max_examples=1500,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(path=st.sampled_from(_paths(_GOOD)), value=_VALUES, delete=st.booleans())
def test_a_damaged_state_is_a_hotset_error_naming_where(
    path: tuple[Any, ...], value: Any, delete: bool
) -> None:
    state = copy.deepcopy(_GOOD)
    node: Any = state
    for step in path[:-1]:
        node = node[step]
    if delete and isinstance(node, dict):
        del node[path[-1]]
    else:
        node[path[-1]] = value
    try:
        unpack(state)
    except HotsetError as exc:
        assert str(exc).startswith("loader state: ")


def test_a_zlib_stream_is_never_inflated_past_its_shape() -> None:
    """A 100 kB stream claiming 32 values that inflates to 100 MB: refused, not allocated."""
    bomb = zlib.compress(b"\0" * 100_000_000, 9)
    node = {
        MARK: "array",
        "dtype": "uint8",
        "shape": [MIN_LIST],
        "codec": "int",
        "base": 0,
        "width": 1,
        "delta": False,
        "zlib": [True],
        "lengths": [len(bomb)],
        "data": torch.frombuffer(bytearray(bomb), dtype=torch.uint8),
    }
    with pytest.raises(HotsetError, match=r"loader state: x: a byte plane does not inflate"):
        unpack({"x": node})


def test_what_no_state_holds_is_refused_when_packing() -> None:
    with pytest.raises(TypeError, match="cannot hold set"):
        pack({"a": {1, 2}})
    with pytest.raises(TypeError, match="cannot hold an array of object"):
        pack({"a": np.array([object()])})
