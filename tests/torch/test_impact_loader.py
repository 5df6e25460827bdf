"""ImPACT through the real loader: the user's forward pass re-evaluates S from the cache
before each draw, and the loader decides what the engine's twin decides."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from torch_support import bytes_and_twin

import hotset
from hotset.engine.planner import Planner

EPOCHS, BATCH, SEED = 7, 16, 1
OPTIONS = {"window": 32, "max_warm_up": 3}  # 200 ids: a short window, a short warm-up


def _loss(ids: np.ndarray, epoch: int) -> np.ndarray:
    return ((ids * 7919) % 101) / 100.0 + 0.05 + (ids % 10 == 0) * ((ids + epoch) % 5)


def _loader(
    data: Any, system: str, capacity: int, *, workers: int = 0, options: Any = None
) -> hotset.torch.HotsetLoader:
    return hotset.loader(
        data,
        system=system,
        system_options=OPTIONS if options is None else options,
        cache=capacity,
        batch_size=BATCH,
        num_workers=workers,
        seed=SEED,
    )


@pytest.mark.parametrize(
    ("system", "workers"),
    [("impact", 0), ("impact", 2), ("impact", 4), ("impact_realtime", 2)],
)
def test_impact_evaluates_s_from_the_cache_as_its_twin_does(
    dataset_dir: Path, system: str, workers: int
) -> None:
    """impact re-evaluates S from its static buffer; impact_realtime re-evaluates
    everyone, reading from storage what the cache lacks (the same bytes either way)."""
    data, truth, capacity, twin = bytes_and_twin(
        dataset_dir, system, frac=0.3, seed=SEED, **OPTIONS
    )
    n = len(data.manifest)
    sizes = np.asarray(data.manifest.sizes, dtype=np.int64)
    asked: list[list[int]] = []

    def forward(x: list[bytes], y: object, ids: object) -> np.ndarray:
        got = ids.tolist()  # type: ignore[attr-defined]
        assert x == [truth[s] for s in got]  # the bytes of exactly those samples
        asked[-1] += got
        return _loss(np.asarray(got), 99)

    with _loader(data, system, capacity, workers=workers) as loader:
        loader.evaluate_with(forward)
        planner = Planner(twin, n=n, batch_size=BATCH, lag=loader.lag, sizes=sizes)
        for epoch in range(EPOCHS):
            asked.append([])
            loader.set_epoch(epoch)
            for x, _y, ids, _w in loader:
                for blob, sid in zip(x, ids.tolist(), strict=True):
                    assert blob == truth[sid], f"epoch {epoch}: id {sid} bytes differ"
                loader.update(ids, _loss(ids.numpy(), epoch))
            planner.begin(epoch, evaluate=lambda ids: _loss(ids, 99))
            assert planner.evaluated == len(asked[-1])
            for plan in planner.plans():
                planner.give(plan.index, plan.served, _loss(plan.served, epoch))
            planner.finish(val_accuracy=None)
            assert loader.decisions().rows() == planner.log.rows(), f"epoch {epoch}"
        if system == "impact":
            assert loader.evaluate_reads == 0  # S came from the static buffer
        else:  # everyone, every epoch after the warm-up: most of them uncached
            assert loader.evaluate_reads >= 0.7 * n
        # the policy's own report (packages loaded, unused, S) is the twin's
        assert loader.policy_summary() == twin.policy.summary()
    assert sum(len(a) for a in asked) > 0, "S was never re-evaluated: the test shows nothing"


def test_impact_without_an_evaluator_warns_once(dataset_dir: Path) -> None:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    capacity = int(0.3 * np.sum(data.manifest.sizes))
    with _loader(data, "impact", capacity) as loader:
        with pytest.warns(UserWarning, match="evaluate_with") as record:
            for epoch in range(EPOCHS):
                loader.set_epoch(epoch)
                for _x, _y, ids, _w in loader:
                    loader.update(ids, _loss(ids.numpy(), epoch))
        assert len([w for w in record if "evaluate_with" in str(w.message)]) == 1
        with pytest.raises(hotset.HotsetError, match="callable"):
            loader.evaluate_with(42)  # type: ignore[arg-type]


def _run_epoch(loader: hotset.torch.HotsetLoader, epoch: int, stop: int | None = None) -> list[int]:
    loader.set_epoch(epoch)
    served: list[int] = []
    for i, (_x, _y, ids, _w) in enumerate(loader):
        loader.update(ids, _loss(ids.numpy(), epoch))
        served += ids.tolist()
        if stop is not None and i + 1 == stop:
            break
    return served


@pytest.mark.parametrize("system", ["impact", "icache"])
def test_a_selective_epoch_resumes_exactly_from_a_checkpoint(
    dataset_dir: Path, system: str
) -> None:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    capacity = int(0.3 * np.sum(data.manifest.sizes))
    options = OPTIONS if system == "impact" else {"warm_up": 1, "window": 32}

    def make() -> hotset.torch.HotsetLoader:
        ld = _loader(data, system, capacity, options=options)
        ld.evaluate_with(lambda _x, _y, ids: _loss(ids.numpy(), 99))
        return ld

    last = 5  # a selective epoch for both (impact's warm-up is 3 epochs here)
    with make() as whole:
        want = [_run_epoch(whole, e) for e in range(last + 1)]
        want_log = whole.decisions().rows()
    assert len(want[last]) < len(data.manifest)  # it is a selection
    with make() as first:
        for e in range(last):
            _run_epoch(first, e)
        head = _run_epoch(first, last, stop=3)
        state = first.state_dict()
    with make() as second:
        second.load_state_dict(state)
        tail = []
        for _x, _y, ids, _w in second:
            second.update(ids, _loss(ids.numpy(), last))
            tail += ids.tolist()
        assert head + tail == want[last]
        assert second.decisions().rows() == want_log
