"""Trace files in, the contract object out."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hotset.errors import HotsetError
from hotset.sim.trace import (
    RESULT_KEYS,
    load_sizes,
    load_trace,
    make_budget,
    sampler_epochs,
    save_trace,
    simulate_epochs,
    simulate_trace,
)


# -- loading ---------------------------------------------------------------------------
def test_text_trace_skips_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("3\n 1 \n\n7\n")
    trace = load_trace(path)
    assert trace.dtype == np.int64 and trace.tolist() == [3, 1, 7]


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint16])
def test_npy_trace_of_any_integer_type(tmp_path: Path, dtype: type) -> None:
    path = tmp_path / "t.npy"
    np.save(path, np.array([4, 0, 2], dtype=dtype))
    trace = load_trace(path)
    assert trace.dtype == np.int64 and trace.tolist() == [4, 0, 2]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "is empty"),
        ("\n\n", "is empty"),
        ("1\n2\nabc\n", "line 3: 'abc' is not an integer id"),
        ("1\n\n2.5\n", "line 3: '2.5' is not an integer id"),
        ("1\n-4\n", r"\(line 2\) is negative: -4"),
        ("99999999999999999999\n", "line 1: .* does not fit in 64 bits"),
    ],
)
def test_bad_text_traces_name_the_culprit(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "t.txt"
    path.write_text(content)
    with pytest.raises(HotsetError, match=message):
        load_trace(path)


@pytest.mark.parametrize(
    ("array", "message"),
    [
        (np.array([1.0, 2.0]), "dtype float64"),
        (np.array([[1, 2]]), "1-D"),
        (np.array([], dtype=np.int64), "is empty"),
        (np.array([3, -1]), "entry 1 is negative"),
        (np.array([True, False]), "dtype bool"),
    ],
)
def test_bad_npy_traces_name_the_culprit(tmp_path: Path, array: np.ndarray, message: str) -> None:
    path = tmp_path / "t.npy"
    np.save(path, array)
    with pytest.raises(HotsetError, match=message):
        load_trace(path)


def test_missing_trace_file(tmp_path: Path) -> None:
    with pytest.raises(HotsetError, match="not found"):
        load_trace(tmp_path / "nope.txt")


def test_sizes_of_the_wrong_length_name_both_lengths(tmp_path: Path) -> None:
    path = tmp_path / "s.txt"
    path.write_text("10\n20\n30\n")
    assert load_sizes(path, 3).tolist() == [10, 20, 30]
    with pytest.raises(HotsetError, match="has 3 sizes but the dataset has 4 ids"):
        load_sizes(path, 4)


@pytest.mark.parametrize("name", ["t.txt", "t.npy", "t.trace"])
def test_save_trace_round_trips(tmp_path: Path, name: str) -> None:
    trace = np.array([5, 0, 5, 12])
    path = save_trace(tmp_path / name, trace)
    assert path == tmp_path / name and path.exists()
    assert load_trace(path).tolist() == trace.tolist()


# -- simulating ------------------------------------------------------------------------
def test_contract_keys_and_counts_worked_by_hand() -> None:
    # LRU with 2 items on 1 2 1 3 1 2: hits at the 2nd "1" and the 3rd "1" only.
    result = simulate_trace(np.array([1, 2, 1, 3, 1, 2]), "lru", cache_items=2)
    assert tuple(result) == RESULT_KEYS
    assert result == {
        "policy": "lru",
        "requests": 6,
        "hits": 2,
        "misses": 4,
        "hit_ratio": 2 / 6,
        "bytes_read": 4,
    }


def test_bytes_read_sums_the_sizes_of_misses() -> None:
    sizes = np.array([0, 100, 20, 7])
    # 120 bytes of cache (frac 1.0 of 127 -> 127 bytes: everything fits once read)
    result = simulate_trace(np.array([1, 2, 1, 3, 2]), "fifo", cache_frac=1.0, sizes=sizes)
    assert result["hits"] == 2
    assert result["bytes_read"] == 100 + 20 + 7


def test_cache_frac_is_of_bytes_with_sizes_and_of_distinct_ids_without() -> None:
    trace = np.array([0, 1, 2, 3, 0, 9, 9, 9])  # 5 distinct ids
    by_items = simulate_trace(trace, "lru", cache_frac=0.4, verbose=True)
    assert by_items["capacity_items"] == 2 and by_items["capacity_bytes"] is None
    sizes = np.full(10, 50)  # the dataset is ids 0..9: 500 bytes
    by_bytes = simulate_trace(trace, "lru", cache_frac=0.4, sizes=sizes, verbose=True)
    assert by_bytes["capacity_bytes"] == 200 and by_bytes["capacity_items"] is None
    assert set(by_bytes) >= {"substitutions", "epochs"}
    assert (
        make_budget(cache_items=None, cache_frac=0.29, sizes=None, n_items=100).capacity_items == 29
    )


def test_sampler_epochs_get_the_epoch_hooks_and_per_epoch_counts() -> None:
    orders = sampler_epochs("random", n=500, epochs=4, seed=2)
    assert len(orders) == 4 and all(sorted(o.tolist()) == list(range(500)) for o in orders)
    result = simulate_epochs(orders, "minio", cache_frac=0.2, n=500, planned=True, verbose=True)
    assert [e["hits"] for e in result["epochs"]] == [0, 100, 100, 100]
    assert result["hits"] == 300 and result["requests"] == 2000


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cache_items": 0}, "positive integer"),
        ({"cache_items": -3}, "positive integer"),
        ({"cache_frac": 0.0}, r"in \(0, 1\]"),
        ({"cache_frac": 1.5}, r"in \(0, 1\]"),
        ({"cache_frac": 0.001}, "empty cache"),
        ({"cache_frac": 0.5, "cache_items": 2}, "exactly one"),
        ({}, "exactly one"),
    ],
)
def test_bad_cache_sizes(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(HotsetError, match=message):
        simulate_trace(np.arange(10), "lru", **kwargs)  # type: ignore[arg-type]


def test_bad_traces_and_names() -> None:
    with pytest.raises(HotsetError, match="empty"):
        simulate_trace(np.array([], dtype=np.int64), "lru", cache_items=1)
    with pytest.raises(HotsetError, match="non-negative"):
        simulate_trace(np.array([1, -2]), "lru", cache_items=1)
    with pytest.raises(HotsetError, match="unknown policy 'nope'"):
        simulate_trace(np.array([1]), "nope", cache_items=1)
    with pytest.raises(HotsetError, match="sizes cover 2 ids but the trace uses id 5"):
        simulate_trace(np.array([1, 5]), "lru", cache_items=1, sizes=np.array([1, 1]))
    with pytest.raises(HotsetError, match="unknown sampler"):
        sampler_epochs("pads", n=10, epochs=1)
