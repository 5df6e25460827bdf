"""Loader checkpoints from outside: every bad state is a HotsetError, never a crash or hang.

A checkpoint is data from disk: another run's, another cache size's, or damaged.
Each case below failed before with another exception (AttributeError, KeyError,
a numpy broadcast error), silently dropped an epoch, or crashed mid-epoch later.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hotset
from hotset.data import SynthConfig, make_synth
from hotset.errors import HotsetError
from hotset.torch.loader import HotsetLoader
from hotset.torch.statecodec import unpack


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("state") / "ds"
    make_synth(path, SynthConfig(n=120, image_size=8, classes=2, seed=0), workers=1)
    return path


def _loader(path: Path, system: str, cache: float = 0.5) -> HotsetLoader:
    data = hotset.open_dataset(str(path), decode="bytes")
    return hotset.loader(data, system=system, cache=cache, batch_size=8, seed=0)


def _epoch(loader: HotsetLoader, *, stop_after: int | None = None) -> list[int]:
    """Run (part of) an epoch, feeding losses to systems that learn; the ids served."""
    ids_seen: list[int] = []
    for i, (_x, _y, ids, _w) in enumerate(loader):
        if loader.system.capabilities.learns:
            loader.update(ids, torch.linspace(0.1, 2.0, len(ids)))
        ids_seen += ids.tolist()
        if stop_after is not None and i + 1 == stop_after:
            break
    return ids_seen


def _mid_epoch_state(loader: HotsetLoader) -> dict[str, Any]:
    _epoch(loader)
    loader.set_epoch(1)
    _epoch(loader, stop_after=3)
    return loader.state_dict()


@pytest.mark.parametrize(
    ("state", "message"),
    [
        (None, "must be the dict loader.state_dict"),
        ([1, 2], "must be the dict loader.state_dict"),
        ({}, "lacks 'version'"),
    ],
)
def test_not_a_state_is_named(data_dir: Path, state: Any, message: str) -> None:
    with _loader(data_dir, "lru") as loader, pytest.raises(HotsetError, match=message):
        loader.load_state_dict(state)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("status", "bogus", "status must be one of idle, running, finished"),
        # an array answers `in` elementwise (an empty one not at all): found by the fuzz below
        ("status", np.arange(0), "status must be one of idle, running, finished"),
        ("yielded", 10**6, r"yielded"),
        ("yielded", 15, r"yielded=15 batches, but epoch 1 has 15|yielded=15"),
        ("outstanding", np.zeros(7, dtype=np.int32), "outstanding must hold 120"),
        ("epoch", 2**63, r"epoch must be an integer in \[-1, 2147483647\]"),
        ("epoch_set", "yes", "epoch_set must be True or False"),
        ("history", None, "history must be a list"),
        ("pending_val", float("nan"), "pending_val must be a finite number"),
    ],
)
def test_bad_fields_are_named_and_leave_the_loader_as_it_was(
    data_dir: Path, key: str, value: Any, message: str
) -> None:
    with _loader(data_dir, "lru") as loader:
        state = _mid_epoch_state(loader)
        bad = dict(state, **{key: value})
        if key == "yielded" and value == 15:
            bad["yielded"] = 16  # one past the epoch's 15 batches: dropped the rest before
            message = "yielded=16 batches, but epoch 1 has 15"
        with pytest.raises(HotsetError, match=message):
            loader.load_state_dict(bad)
        after = loader.state_dict()
        assert (after["status"], after["epoch"], after["yielded"]) == ("running", 1, 3)
        loader.load_state_dict(state)  # and the good state still resumes
        assert len(_epoch(loader)) == 120 - 3 * 8


def test_a_state_failing_deep_inside_is_rolled_back(data_dir: Path) -> None:
    """The policy refuses its part after the loader began restoring: nothing of it stays."""
    with _loader(data_dir, "lru") as loader:
        state = _mid_epoch_state(loader)
        bad = copy.deepcopy(state)
        bad["system_state"]["policy"]["order"] = [10**9]
        bad["yielded"] = 1
        with pytest.raises(HotsetError):
            loader.load_state_dict(bad)
        after = loader.state_dict()
        assert (after["status"], after["epoch"], after["yielded"]) == ("running", 1, 3)
        policy = after["system_state"]["policy"]
        assert unpack(policy) == unpack(state["system_state"]["policy"])  # packed: compare values


def test_missing_key_is_named(data_dir: Path) -> None:
    with _loader(data_dir, "lru") as loader:
        state = _mid_epoch_state(loader)
        del state["coverage"]
        with pytest.raises(HotsetError, match="lacks 'coverage'"):
            loader.load_state_dict(state)


@pytest.mark.parametrize("system", ["shade", "lru"])
def test_resuming_into_a_smaller_cache_is_refused_naming_both(data_dir: Path, system: str) -> None:
    """shade loaded a cache=0.6 state into cache=0.1 and failed mid-epoch on a refused put."""
    with _loader(data_dir, system, cache=0.6) as big:
        state = _mid_epoch_state(big)
    with _loader(data_dir, system, cache=0.1) as small:
        with pytest.raises(HotsetError, match=r"cache budget of \d+ bytes.*planning \d+"):
            small.load_state_dict(state)
        _epoch(small)  # untouched: it trains from scratch


def test_a_state_without_its_budget_is_still_held_to_the_budget(data_dir: Path) -> None:
    """A state saved before the budget was recorded: the policy's holding is checked."""
    with _loader(data_dir, "shade", cache=0.6) as big:
        state = _mid_epoch_state(big)
    del state["cache_bytes"]
    with (
        _loader(data_dir, "shade", cache=0.1) as small,
        pytest.raises(HotsetError, match="over this loader's cache budget"),
    ):
        small.load_state_dict(state)


def test_set_epoch_beyond_the_range_is_named(data_dir: Path) -> None:
    """shade (and every system) overflowed at 2**63 inside numpy before."""
    with _loader(data_dir, "shade") as loader:
        for bad in (2**63, -1, 1.5, True):
            with pytest.raises(HotsetError, match=r"epoch must be an integer in \[0, 2\*\*31"):
                loader.set_epoch(bad)
        loader.set_epoch(2**31 - 1)  # the largest epoch runs (PADS draws with repetitions)
        ids = _epoch(loader)
        assert len(ids) == 120 and set(ids) <= set(range(120))


# -- the fuzz ------------------------------------------------------------------------

_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.binary(max_size=4),
    st.lists(st.integers(min_value=-5, max_value=200), max_size=6),
    st.dictionaries(st.text(max_size=3), st.integers(min_value=-5, max_value=5), max_size=3),
    st.builds(np.arange, st.integers(min_value=0, max_value=130)),
)


def _paths(node: Any, prefix: tuple[Any, ...] = (), depth: int = 0) -> Iterator[tuple[Any, ...]]:
    """Every place in a state a value can be replaced: dict keys and list items, 5 deep."""
    if depth > 5:
        return
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*prefix, key)
            yield from _paths(value, (*prefix, key), depth + 1)
    elif isinstance(node, list) and node:
        yield (*prefix, 0)
        yield from _paths(node[0], (*prefix, 0), depth + 1)


def _mutate(state: dict[str, Any], path: tuple[Any, ...], value: Any, delete: bool) -> None:
    node: Any = state
    for step in path[:-1]:
        node = node[step]
    if delete and isinstance(node, dict):
        del node[path[-1]]
    else:
        node[path[-1]] = value


@pytest.mark.parametrize(("system", "once"), [("lru", True), ("shade", False)])
def test_fuzzed_states_are_a_hotset_error_or_a_correct_run(
    data_dir: Path, system: str, once: bool
) -> None:
    """``once``: the system trains each id exactly once per epoch (PADS draws with
    repetitions: then each epoch has its length, every id in range)."""
    loader = _loader(data_dir, system)
    good = _mid_epoch_state(loader)
    paths = sorted(set(_paths(good)), key=repr)
    done = {"runs": 0, "refused": 0}

    @settings(
        max_examples=1000,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(path=st.sampled_from(paths), value=_VALUES, delete=st.booleans())
    def case(path: tuple[Any, ...], value: Any, delete: bool) -> None:
        state = copy.deepcopy(good)
        _mutate(state, path, value, delete)
        try:
            loader.load_state_dict(state)
        except HotsetError:
            done["refused"] += 1
            loader.load_state_dict(good)  # the loader is still usable after a refusal
        # A run from whatever was accepted: the rest of the epoch, then a whole one.
        rest = _epoch(loader)
        assert set(rest) <= set(range(120)) and (not once or len(rest) == len(set(rest)))
        loader.set_epoch(loader.state_dict()["epoch"] + 1)
        whole = _epoch(loader)
        assert sorted(whole) == list(range(120)) if once else len(whole) == 120
        done["runs"] += 1

    try:
        case()
    finally:
        loader.close()
    assert done["runs"] >= 1000 and done["refused"] > 100, done


@pytest.mark.parametrize("loss", [-126.0, float("nan")])
def test_a_state_with_a_loss_update_refuses_is_refused_at_load(data_dir: Path, loss: float) -> None:
    """Found by the fuzz above: a negative loss in the feedback was accepted, replayed, and
    SHADE failed only at the epoch's end ("pads: train_loss[1] ... is not a finite loss")."""
    with _loader(data_dir, "shade") as loader:
        state = _mid_epoch_state(loader)
        bad = copy.deepcopy(state)
        _mutate(bad, ("feedback", "losses", "values", 0), loss, False)
        with pytest.raises(
            HotsetError, match="feedback holds a loss that is negative or not finite"
        ):
            loader.load_state_dict(bad)
        assert loader.state_dict()["yielded"] == 3  # left as it was


def test_update_refuses_a_negative_loss_naming_the_sample(data_dir: Path) -> None:
    with _loader(data_dir, "shade") as loader:
        _x, _y, ids, _w = next(iter(loader))
        losses = torch.linspace(0.1, 2.0, len(ids))
        losses[2] = -0.5
        with pytest.raises(
            HotsetError, match=rf"value -0.5 for sample id {int(ids[2])} is negative"
        ):
            loader.update(ids, losses)
        loader.update(ids, torch.linspace(0.1, 2.0, len(ids)))  # nothing was taken from it
