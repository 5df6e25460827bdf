"""Loader checkpoints as frameworks save them: ``torch.save``, then ``torch.load`` with its
default ``weights_only=True`` (Lightning's resume does exactly that), for every system.

Before, a state held numpy arrays and ``torch.load`` refused it (``Unsupported global:
GLOBAL numpy._core.multiarray._reconstruct``); and it weighed about 150 bytes per
sample. Each test below failed then: the round trips and the walk on the numpy objects,
the size on the bytes.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch_support import loss_of, run_epoch

import hotset
from hotset.systems.registry import capabilities_of, system_names
from hotset.torch.loader import HotsetLoader
from packed_support import packed_synth

#: what must come out the same after a resume (timings, read-ahead and the rebuild of the
#: emptied cache differ by design: the resumed loader re-reads what its policy holds)
SAME_COUNTS = (
    "epoch",
    "batches",
    "requests",
    "exact_hits",
    "substitutions",
    "fetched_ahead",
    "storage_reads",
    "unique_ids_trained",
    "never_trained",
    "order",
)
BATCH = 16


def _loader_systems() -> list[str]:
    """Every registered system the loader runs (the offline bounds it refuses, by test)."""
    out = []
    for name in system_names():
        caps = capabilities_of(name)
        if not caps.needs_future and caps.realizable:
            out.append(name)
    return out


SYSTEMS = _loader_systems()


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return packed_synth(
        tmp_path_factory.mktemp("ckptpk") / "ds", n=200, seed=3, chunk_size=8, shuffle_seed=1
    )


def _data(system: str, dataset_dir: Path, packed: Path) -> Any:
    root = packed if capabilities_of(system).reads_units else dataset_dir
    return hotset.open_dataset(root, decode="bytes")


def _open(data: Any, system: str, workers: int, tmp: Path) -> HotsetLoader:
    extra = {"package_dir": tmp / "packages"} if capabilities_of(system).packs else {}
    return hotset.loader(
        data, system=system, cache=0.3, batch_size=BATCH, seed=5, num_workers=workers, **extra
    )


def _saved(state: dict[str, Any], path: Path) -> dict[str, Any]:
    """Through a file as a training script keeps it, read back as torch.load does by default."""
    torch.save(state, path)
    loaded: dict[str, Any] = torch.load(path)
    return loaded


def _ids_and_bytes(batches: list[tuple[Any, ...]]) -> list[tuple[int, bytes]]:
    return [(int(i), x) for b in batches for x, i in zip(b[0], b[2].tolist(), strict=True)]


def _counts(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in SAME_COUNTS}


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("system", SYSTEMS)
def test_every_system_resumes_mid_epoch_from_a_weights_only_load(
    dataset_dir: Path, packed: Path, tmp_path: Path, system: str, workers: int
) -> None:
    """Saved 6 batches into epoch 1 (of 13; with workers, feedback lags 4 batches: some is
    applied, some queued): the resumed loader yields the rest of the epoch (ids and bytes)
    and counts what the uninterrupted one does, then trains epoch 2 alike."""
    data = _data(system, dataset_dir, packed)
    with _open(data, system, workers, tmp_path) as first:
        run_epoch(first, 0)
        first.set_epoch(1)
        it = iter(first)
        for _ in range(6):
            _, _, ids, _ = next(it)
            first.update(ids, torch.from_numpy(loss_of(ids.numpy(), 1)))
        state = _saved(first.state_dict(), tmp_path / "state.pt")
        rest = []
        for x, y, ids, w in it:  # the uninterrupted run goes on
            first.update(ids, torch.from_numpy(loss_of(ids.numpy(), 1)))
            rest.append((x, y, ids.clone(), w.clone()))
        want_rows = first.decisions().rows()
        want_next = _ids_and_bytes(run_epoch(first, 2))
        want_report = [_counts(r) for r in first.report()]
    with _open(data, system, workers, tmp_path) as second:
        second.load_state_dict(state)
        got = run_epoch(second, 1)
        assert _ids_and_bytes(got) == _ids_and_bytes(rest)
        assert second.decisions().rows() == want_rows
        assert _ids_and_bytes(run_epoch(second, 2)) == want_next
        assert [_counts(r) for r in second.report()] == want_report


_PLAIN = (dict, list, tuple, str, int, float, bool, type(None), torch.Tensor)


def _walk(node: Any, path: str = "state") -> list[tuple[str, str]]:
    """Every (place, type) in a state that is not a plain value, container or tensor."""
    if not isinstance(node, _PLAIN) or isinstance(node, np.generic):
        return [(path, type(node).__name__)]
    out: list[tuple[str, str]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if not isinstance(key, str | int):
                out.append((f"{path} key {key!r}", type(key).__name__))
            out += _walk(value, f"{path}.{key}")
    elif isinstance(node, list | tuple):
        for i, value in enumerate(node):
            out += _walk(value, f"{path}[{i}]")
    return out


@pytest.mark.parametrize("system", SYSTEMS)
def test_a_state_holds_no_numpy_object_anywhere(
    dataset_dir: Path, packed: Path, tmp_path: Path, system: str
) -> None:
    """From scratch, mid-epoch and at an epoch's end: plain values and tensors only."""
    with _open(_data(system, dataset_dir, packed), system, 0, tmp_path) as loader:
        states = [loader.state_dict()]
        run_epoch(loader, 0)
        states.append(loader.state_dict())
        loader.set_epoch(1)
        for i, (_, _, ids, _) in enumerate(loader):
            loader.update(ids, torch.from_numpy(loss_of(ids.numpy(), 1)))
            if i == 2:
                break
        states.append(loader.state_dict())
    for state in states:
        assert _walk(state) == []
        buf = io.BytesIO()
        torch.save(state, buf)
        buf.seek(0)
        torch.load(buf, weights_only=True)


# -- states saved by the previous format -------------------------------------------------
V1_DIR = Path(__file__).parent / "data"
V1_N = 48


class _Items(torch.utils.data.Dataset[Any]):
    """The in-memory set the version 1 states were saved on (see the test below)."""

    def __len__(self) -> int:
        return V1_N

    def __getitem__(self, i: int) -> tuple[bytes, int]:
        return b"", 0


def _v1_read(i: int) -> bytes:
    return bytes([i % 251]) * (20 + (i * 7) % 41)


def _v1_loader(system: str, tmp: Path) -> HotsetLoader:
    data = hotset.from_dataset(
        _Items(), read=_v1_read, decode="bytes", labels=[i % 3 for i in range(V1_N)]
    )
    extra = {"package_dir": tmp / "packages"} if system == "icache" else {}
    # saved before shade's coverage floor became the default: the paper's orders then
    spec = "shade[coverage_floor=0]" if system == "shade" else system
    return hotset.loader(data, system=spec, cache=0.3, batch_size=8, seed=4, **extra)


@pytest.mark.parametrize("system", ["lru", "shade", "icache"])
def test_a_version_1_state_still_resumes_exactly(tmp_path: Path, system: str) -> None:
    """``data/state_v1_<system>.pt`` were saved by hotset at commit df7945f (numpy arrays
    inside, so read here with weights_only=False, as such a file must be): 3 batches
    into epoch 1 of this loader, fed ``loss_of``. Resumed now, it yields the rest of
    the epoch the uninterrupted run does, and saves a version 2 state."""
    state = torch.load(V1_DIR / f"state_v1_{system}.pt", weights_only=False)
    assert state["version"] == 1
    with _v1_loader(system, tmp_path) as straight:
        run_epoch(straight, 0)
        want = run_epoch(straight, 1)
        want_rows = straight.decisions().rows()
    with _v1_loader(system, tmp_path) as resumed:
        resumed.load_state_dict(state)
        got = run_epoch(resumed, 1)
        assert _ids_and_bytes(got) == _ids_and_bytes(want[3:])
        assert resumed.decisions().rows() == want_rows
        again = _saved(resumed.state_dict(), tmp_path / "v2.pt")
        assert again["version"] == 2 and _walk(again) == []


def test_an_unknown_version_is_refused_naming_the_versions_read(dataset_dir: Path) -> None:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    with hotset.loader(data, system="lru", batch_size=BATCH) as loader:
        state = loader.state_dict()
        with pytest.raises(hotset.HotsetError, match=r"version 3 is not supported.*1 and 2"):
            loader.load_state_dict({**state, "version": 3})


# -- the size of a state -------------------------------------------------------------------
BIG = 200_000


@pytest.mark.parametrize(
    ("system", "feedback", "bound"), [("lru", True, 6.0), ("shade", True, 7.0), ("lru", False, 1.0)]
)
def test_a_state_takes_at_most_a_few_bytes_per_sample(
    system: str, feedback: bool, bound: float
) -> None:
    """200,000 ids, an epoch of float32 losses and half the next, saved with torch.save:
    at most 6 bytes a sample, 7 with SHADE's cache (it was about 150, then 8.9 while
    the table kept a ring of 8 past losses per sample that nothing read). Without
    losses, at most 1 byte: the
    rest is what the losses themselves take, about 3.4 bytes each kept (the latest per
    sample, and this epoch's so far)."""
    from hotset.bench.statesize import state_bytes

    size = state_bytes(system, BIG, full_epochs=1, feedback=feedback)
    assert size / BIG <= bound
