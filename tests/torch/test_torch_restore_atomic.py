"""A refused state changes nothing, for every system: the loader's next batches are those of
a loader that never saw it.

Before, a state was restored piece by piece and put back on failure: the running
iterator was stopped, the cache emptied, and with Quiver the batches after a refusal
differed from an untouched loader's; some malformed values were taken as they came
(Quiver's ``resident`` replaced by ``{}``, a coverage id of ``-1`` that numpy wrapped
to the last id, a float id). Now the whole state is restored into a scratch system and
planner first (:mod:`hotset.torch.restorecheck`), and only a state that restores there
is applied. Each loader here runs beside a twin that is never given the bad state; the
iterator that was running when the state was refused goes on, and must yield what the
twin's yields, byte for byte, then a whole next epoch alike.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torch_support import loss_of

import hotset
from hotset.errors import HotsetError
from hotset.systems.registry import capabilities_of, system_names
from hotset.torch.loader import HotsetLoader
from hotset.torch.statecodec import unpack
from packed_support import packed_synth

BATCH = 16


def _loader_systems() -> list[str]:
    """Every registered system the loader runs (as the checkpoint round-trip tests do)."""
    return [
        name
        for name in system_names()
        if not capabilities_of(name).needs_future and capabilities_of(name).realizable
    ]


SYSTEMS = _loader_systems()


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return packed_synth(
        tmp_path_factory.mktemp("atomicpk") / "ds", n=200, seed=3, chunk_size=8, shuffle_seed=1
    )


def _open(system: str, root: Path, tmp: Path, workers: int = 0) -> HotsetLoader:
    data = hotset.open_dataset(root, decode="bytes")
    extra = {"package_dir": tmp / "packages"} if capabilities_of(system).packs else {}
    return hotset.loader(
        data, system=system, cache=0.3, batch_size=BATCH, seed=5, num_workers=workers, **extra
    )


def _step(loader: HotsetLoader, batch: Any, epoch: int) -> tuple[list[int], list[bytes]]:
    x, _y, ids, _w = batch
    loader.update(ids, torch.from_numpy(loss_of(ids.numpy(), epoch)))
    return ids.tolist(), list(x)


def _rest(loader: HotsetLoader, it: Iterator[Any], epoch: int) -> list[Any]:
    return [_step(loader, b, epoch) for b in it]


def _epoch(loader: HotsetLoader, epoch: int) -> list[Any]:
    loader.set_epoch(epoch)
    return _rest(loader, iter(loader), epoch)


def _started(loader: HotsetLoader) -> Iterator[Any]:
    """Epoch 0 whole, then 3 batches of epoch 1: the iterator, still running."""
    _epoch(loader, 0)
    loader.set_epoch(1)
    it = iter(loader)
    for _ in range(3):
        _step(loader, next(it), 1)
    return it


def _coverage_minus_one(state: dict[str, Any]) -> None:
    state["coverage"]["ever"] = [0, 1, -1]


def _coverage_float(state: dict[str, Any]) -> None:
    state["coverage"]["ever"] = [0.5, 1.0]


def _history_broken(state: dict[str, Any]) -> None:
    state["history"] = [*state["history"], {"epoch": "x"}]  # read after the system's state


def _yielded_past_the_end(state: dict[str, Any]) -> None:
    state["yielded"] = 14  # epoch 1 has 13 batches: found once the epoch is begun again


def _policy_emptied(state: dict[str, Any]) -> None:
    policy = state["system_state"]["policy"]
    key = next((k for k in ("resident", "order", "members", "slots", "h") if k in policy), None)
    if key is None:
        pytest.skip("a policy without a list of what it holds")
    policy[key] = {}  # quiver took {} as "nothing resident"


def _feedback_out_of_range(state: dict[str, Any]) -> None:
    feedback = state["feedback"]
    if not len(feedback["ids_minus_order"]):
        pytest.skip("no feedback saved")
    feedback["ids_minus_order"] = feedback["ids_minus_order"].astype("int64")
    feedback["ids_minus_order"][0] += 10**6


BREAKAGES: dict[str, Callable[[dict[str, Any]], None]] = {
    "coverage-minus-one": _coverage_minus_one,
    "coverage-float": _coverage_float,
    "history": _history_broken,
    "yielded": _yielded_past_the_end,
    "policy-emptied": _policy_emptied,
    "feedback-id": _feedback_out_of_range,
}


def _refused_then_compared(system: str, root: Path, tmp: Path, breakage: str) -> None:
    with _open(system, root, tmp) as loader, _open(system, root, tmp / "twin") as twin:
        it, twin_it = _started(loader), _started(twin)
        bad = copy.deepcopy(unpack(loader.state_dict()))  # plain values to break
        BREAKAGES[breakage](bad)
        with pytest.raises(HotsetError, match=r"state"):
            loader.load_state_dict(bad)
        assert _rest(loader, it, 1) == _rest(twin, twin_it, 1), "the running epoch changed"
        assert _epoch(loader, 2) == _epoch(twin, 2), "the next epoch changed"
        assert loader.decisions().rows() == twin.decisions().rows()


@pytest.mark.parametrize("system", SYSTEMS)
def test_a_refused_state_leaves_every_system_as_it_was(
    dataset_dir: Path, packed: Path, tmp_path: Path, system: str
) -> None:
    """A coverage id of -1 (numpy wrapped it to the last id) is refused after nothing,
    and the running epoch goes on as the twin's does."""
    root = packed if capabilities_of(system).reads_units else dataset_dir
    _refused_then_compared(system, root, tmp_path, "coverage-minus-one")


@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
@pytest.mark.parametrize("system", ["quiver", "shade", "icache", "brand"])
def test_every_breakage_is_refused_before_anything_changes(
    dataset_dir: Path, packed: Path, tmp_path: Path, system: str, breakage: str
) -> None:
    root = packed if capabilities_of(system).reads_units else dataset_dir
    _refused_then_compared(system, root, tmp_path, breakage)


def test_a_refusal_with_workers_keeps_the_running_epoch(dataset_dir: Path, tmp_path: Path) -> None:
    """With DataLoader workers too: their batches in flight are the twin's."""
    with (
        _open("quiver", dataset_dir, tmp_path, workers=2) as loader,
        _open("quiver", dataset_dir, tmp_path / "twin", workers=2) as twin,
    ):
        it, twin_it = _started(loader), _started(twin)
        bad = copy.deepcopy(unpack(loader.state_dict()))  # plain values to break
        _history_broken(bad)
        with pytest.raises(HotsetError):
            loader.load_state_dict(bad)
        assert _rest(loader, it, 1) == _rest(twin, twin_it, 1)
        assert _epoch(loader, 2) == _epoch(twin, 2)


@pytest.mark.parametrize(
    ("system", "key", "value"),
    [
        ("quiver", "resident", [0, -1]),  # numpy would wrap -1 to the last id
        ("quiver", "resident", [0.5]),  # int() cut it to 0
        ("brand", "filled", [-1]),
        ("brand", "slots", [[-2]]),
        ("scout", "resident", [-1]),
    ],
)
def test_a_policys_ids_out_of_range_are_refused_and_change_nothing(
    dataset_dir: Path, packed: Path, tmp_path: Path, system: str, key: str, value: Any
) -> None:
    root = packed if capabilities_of(system).reads_units else dataset_dir

    def breakage(state: dict[str, Any]) -> None:
        state["system_state"]["policy"][key] = value

    BREAKAGES[f"{system}-{key}"] = breakage
    try:
        _refused_then_compared(system, root, tmp_path, f"{system}-{key}")
    finally:
        del BREAKAGES[f"{system}-{key}"]
