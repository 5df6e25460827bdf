"""run_live on a tiny synthetic dataset: the JSON contract, hit accounting, determinism."""

from __future__ import annotations

import math
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from hotset.data.manifest import Manifest
from hotset.data.synth import SynthConfig, make_synth
from hotset.engine.counters import COUNTER_KEYS, COVERAGE_KEYS
from hotset.errors import HotsetError
from hotset.importance.table import ImportanceTable
from hotset.policies.registry import make_policy
from hotset.samplers.base import EpochContext, Sampler
from hotset.sim.live import LiveOptions, run_live, stratified_split
from hotset.storage import throttled
from hotset.systems import registry
from hotset.systems.base import System, SystemSpec

N = 600
EPOCH_KEYS = {
    "epoch",
    *COUNTER_KEYS,
    *COVERAGE_KEYS,
    "exact_hit_ratio",
    "train_loss",
    "val_accuracy",
    "modeled_io_seconds",
    "wall_seconds",
}
COUNTERS = COUNTER_KEYS
LIVE_SYSTEMS = [s for s in ("pytorch", "lru", "minio", "shade") if s in registry.system_names()]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("live") / "syn"
    make_synth(out, SynthConfig(n=N, image_size=8, classes=4, channels=1, seed=0), workers=1)
    return out


class _RecordingStore(throttled.ThrottledStore):
    """The real throttled store, plus the keys every read asked for."""

    made: ClassVar[list[_RecordingStore]] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.keys_read: list[str] = []
        _RecordingStore.made.append(self)

    def read(self, key: str) -> bytes:
        self.keys_read.append(key)
        return super().read(key)

    def read_many(self, keys: Any) -> list[bytes]:
        self.keys_read.extend(keys)
        return super().read_many(keys)


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_RecordingStore]]:
    _RecordingStore.made = []
    monkeypatch.setattr(throttled, "ThrottledStore", _RecordingStore)
    yield _RecordingStore


def _run(dataset: Path, system: str, **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "system": system,
        "dataset": str(dataset),
        "cache_frac": 0.2,
        "epochs": 2,
        "seed": 0,
        "batch_size": 64,
    }
    args.update(kw)
    progress = args.pop("progress", False)
    return run_live(LiveOptions(**args), progress=progress)


def _without_wall(result: dict[str, Any]) -> dict[str, Any]:
    out = dict(result)
    out["epochs"] = [{k: v for k, v in row.items() if k != "wall_seconds"} for row in out["epochs"]]
    out["totals"] = {k: v for k, v in out["totals"].items() if k != "wall_seconds"}
    return out


@pytest.mark.parametrize("system", LIVE_SYSTEMS)
def test_contract_and_accounting_against_the_store(
    dataset: Path, recorder: type[_RecordingStore], system: str
) -> None:
    result = _run(dataset, system)
    manifest = Manifest.load(dataset)
    train_rows, val_rows = stratified_split(manifest.labels, val_frac=0.1, seed=0)
    train_keys = {manifest.keys[r] for r in train_rows.tolist()}
    size_of = dict(zip(manifest.keys, manifest.sizes.tolist(), strict=True))

    assert {"system", "dataset", "cache_frac", "seed", "model", "n_train", "n_val"} <= set(result)
    assert (result["system"], result["cache_frac"], result["seed"]) == (system, 0.2, 0)
    assert result["model"] == "mlp"  # auto, 8×8
    assert (result["n_train"], result["n_val"]) == (len(train_rows), len(val_rows))
    assert result["n_train"] + result["n_val"] == N
    assert result["capacity_bytes"] == math.floor(0.2 * sum(size_of[k] for k in train_keys))

    assert [row["epoch"] for row in result["epochs"]] == [1, 2]
    for row in result["epochs"]:
        assert set(row) >= EPOCH_KEYS
        assert row["requests"] == (
            row["exact_hits"] + row["substitutions"] + row["fetched_ahead"] + row["storage_reads"]
        )
        # a batch asks the store once for an id it misses twice
        assert row["storage_requests"] <= row["storage_reads"]
        assert 0 < row["unique_ids_trained"] <= row["requests"]
        assert 0 <= row["never_trained"] <= result["n_train"] - row["unique_ids_trained"]
        assert row["requests"] > 0
        assert row["exact_hit_ratio"] == row["exact_hits"] / row["requests"]
        assert 0.0 <= row["val_accuracy"] <= 1.0
        assert row["train_loss"] > 0 and math.isfinite(row["train_loss"])
        # the virtual clock can be no faster than the link or the lanes allow
        assert row["modeled_io_seconds"] >= row["storage_bytes"] / 100e6 - 1e-12
        assert row["modeled_io_seconds"] >= math.ceil(row["storage_requests"] / 4) * 0.002 - 1e-12
        assert row["wall_seconds"] >= 0

    totals = result["totals"]
    for key in (*COUNTERS, "modeled_io_seconds"):
        assert totals[key] == pytest.approx(sum(row[key] for row in result["epochs"]))
    later = result["epochs"][1]
    assert totals["exact_hit_ratio_after_first"] == later["exact_hits"] / later["requests"]
    assert totals["final_val_accuracy"] == later["val_accuracy"]

    # every storage read is a training key, and the counts are the store's own
    (store,) = recorder.made
    assert set(store.keys_read) <= train_keys
    assert len(store.keys_read) == totals["storage_requests"] == store.stats().reads
    assert sum(size_of[k] for k in store.keys_read) == totals["storage_bytes"]
    assert store.stats().bytes_read == totals["storage_bytes"]


def test_pytorch_reads_every_training_sample_every_epoch(
    dataset: Path, recorder: type[_RecordingStore]
) -> None:
    result = _run(dataset, "pytorch", cache_frac=0.0)
    n_train = result["n_train"]
    for row in result["epochs"]:
        assert row["exact_hits"] == row["substitutions"] == 0
        assert row["storage_reads"] == row["requests"] == n_train
        assert row["storage_bytes"] == result["train_bytes"]
    (store,) = recorder.made
    assert sorted(store.keys_read[:n_train]) == sorted(store.keys_read[n_train:])
    assert len(set(store.keys_read)) == n_train


def test_oracle_hits_everything_and_never_touches_the_store(
    dataset: Path, recorder: type[_RecordingStore]
) -> None:
    result = _run(dataset, "oracle", cache_frac=0.0)
    for row in result["epochs"]:
        assert row["exact_hits"] == row["requests"] == result["n_train"]
        assert row["storage_reads"] == row["storage_bytes"] == 0
        assert row["modeled_io_seconds"] == 0.0
    assert recorder.made[0].keys_read == []
    assert result["totals"]["exact_hit_ratio"] == 1.0


def test_lru_with_the_whole_dataset_cached_hits_everything_after_epoch_one(dataset: Path) -> None:
    first, second = _run(dataset, "lru", cache_frac=1.0)["epochs"]
    assert first["storage_reads"] == first["requests"]
    assert second["exact_hits"] == second["requests"]
    assert second["storage_bytes"] == 0


def test_minio_hits_no_more_bytes_than_it_can_hold(
    dataset: Path, recorder: type[_RecordingStore]
) -> None:
    result = _run(dataset, "minio", cache_frac=0.3)
    manifest = Manifest.load(dataset)
    train_rows, _ = stratified_split(manifest.labels, val_frac=0.1, seed=0)
    size_of = dict(zip(manifest.keys, manifest.sizes.tolist(), strict=True))
    n_train = result["n_train"]
    (store,) = recorder.made
    second_epoch_misses = set(store.keys_read[n_train:])
    hit_keys = {manifest.keys[r] for r in train_rows.tolist()} - second_epoch_misses
    assert len(hit_keys) == result["epochs"][1]["exact_hits"] > 0
    assert sum(size_of[k] for k in hit_keys) <= result["capacity_bytes"]


def test_same_order_and_init_give_the_same_training_whatever_the_cache(dataset: Path) -> None:
    """pytorch, lru and oracle read the same random order from the same init: only I/O differs."""
    runs = [_run(dataset, s) for s in ("pytorch", "lru", "oracle")]
    curves = [[(r["train_loss"], r["val_accuracy"]) for r in run["epochs"]] for run in runs]
    assert curves[0] == curves[1] == curves[2]
    assert [run["totals"]["storage_reads"] for run in runs] != [
        runs[0]["totals"]["storage_reads"]
    ] * 3


def test_same_seed_same_json_other_seed_differs(dataset: Path) -> None:
    a, b = _run(dataset, "lru"), _run(dataset, "lru")
    assert _without_wall(a) == _without_wall(b)
    c = _run(dataset, "lru", seed=1)
    assert _without_wall(c)["epochs"] != _without_wall(a)["epochs"]


def test_no_validation_split(dataset: Path) -> None:
    result = _run(dataset, "pytorch", val_frac=0.0, epochs=1)
    assert (result["n_train"], result["n_val"]) == (N, 0)
    assert result["epochs"][0]["val_accuracy"] is None
    assert result["totals"]["final_val_accuracy"] is None
    assert result["totals"]["exact_hit_ratio_after_first"] is None


def test_progress_goes_to_stderr(dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(dataset, "oracle", epochs=1, progress=True)
    captured = capsys.readouterr()
    assert "oracle" in captured.err
    assert captured.out == ""


class _LossOrderSampler(Sampler):
    """Hardest first: an order that depends on feedback (so no future can be planned)."""

    def order(self, ctx: EpochContext) -> np.ndarray:
        if ctx.scores is None:
            return np.arange(self.n, dtype=np.int64)
        return np.argsort(-ctx.scores, kind="stable").astype(np.int64)


class _LossScorer:
    def score(self, ids: np.ndarray, losses: np.ndarray, table: ImportanceTable) -> np.ndarray:
        return np.asarray(losses, dtype=np.float64)


@pytest.fixture
def feedback_belady() -> Iterator[str]:
    def build(*, n: int, budget: Any, seed: int, batch_size: int = 128) -> System:
        return System(
            name="fb_belady",
            sampler=_LossOrderSampler(n, seed=seed),
            policy=make_policy("belady", budget, seed=seed),
            table=ImportanceTable(n),
            scorer=_LossScorer(),  # type: ignore[arg-type]
        )

    module = types.ModuleType("hotset_test_live_systems")
    module.SPECS = [SystemSpec("fb_belady", "test", "test", build)]  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    before = registry.MODULES.snapshot()
    registry.register_module(module.__name__)
    try:
        yield "fb_belady"
    finally:
        registry.MODULES.restore(before)
        del sys.modules[module.__name__]


def test_belady_runs_with_the_future_planned_up_front(dataset: Path) -> None:
    result = _run(dataset, "belady", cache_frac=0.5)
    second = result["epochs"][1]
    assert second["exact_hits"] > 0
    assert second["requests"] == second["exact_hits"] + second["storage_reads"]


def test_a_future_needing_policy_with_a_feedback_order_fails_loudly(
    dataset: Path, feedback_belady: str
) -> None:
    with pytest.raises(HotsetError, match="order differs from the one planned up front"):
        _run(dataset, feedback_belady)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"system": "nope"}, r"unknown system 'nope' \(did you mean 'nopfs'\?\); choose from"),
        ({"dataset": "/nonexistent/hotset-data"}, "/nonexistent/hotset-data"),
        ({"epochs": 0}, "epochs must be an integer >= 1, got 0"),
        ({"cache_frac": 0.0}, r"cache_frac must satisfy 0 < F <= 1 for system 'lru', got 0\.0"),
        ({"cache_frac": 1.5}, "got 1.5"),
        ({"cache_frac": float("nan")}, "got nan"),
        ({"system": "pytorch", "cache_frac": -0.1}, r"0 <= F <= 1 for system 'pytorch'"),
        ({"batch_size": 0}, "batch_size must be an integer >= 1, got 0"),
        ({"val_frac": 0.5}, r"val_frac must satisfy 0 <= val_frac < 0\.5, got 0\.5"),
        ({"val_frac": -0.1}, "got -0.1"),
        ({"model": "vgg"}, "unknown model 'vgg'"),
        ({"concurrency": 0}, "concurrency must be an integer >= 1, got 0"),
        ({"bandwidth_mb_s": 0.0}, "bandwidth_mb_s must be > 0"),
    ],
)
def test_bad_arguments_name_the_culprit(dataset: Path, change: dict[str, Any], match: str) -> None:
    args = {"system": "lru", "dataset": str(dataset), "cache_frac": 0.2, "epochs": 1, "seed": 0}
    args.update(change)
    with pytest.raises(HotsetError, match=match):
        run_live(LiveOptions(**args))


def test_options_refuse_a_bad_field_where_they_are_built() -> None:
    # no data set needed: what does not depend on the system is checked by LiveOptions
    with pytest.raises(HotsetError, match="epochs must be an integer >= 1, got 0"):
        LiveOptions(system="lru", dataset="/nonexistent", cache_frac=0.2, epochs=0, seed=0)


@pytest.mark.parametrize("system", ["lru", "minio", "pytorch"])
def test_untrained_run_makes_exactly_the_trained_runs_decisions(dataset: Path, system: str) -> None:
    trained = _run(dataset, system, record_accesses=True)
    untrained = _run(dataset, system, record_accesses=True, train=False)
    keys = ("requests", "exact_hits", "substitutions", "storage_reads", "storage_bytes")
    for a, b in zip(trained["epochs"], untrained["epochs"], strict=True):
        assert {k: a[k] for k in keys} == {k: b[k] for k in keys}
        assert b["val_accuracy"] is None
    assert trained["accesses"] == untrained["accesses"]
    assert untrained["config"]["trained"] is False


def test_recorded_accesses_are_the_requests(dataset: Path) -> None:
    result = _run(dataset, "shade", record_accesses=True)
    assert [len(a) for a in result["accesses"]] == [e["requests"] for e in result["epochs"]]
    assert "accesses" not in _run(dataset, "lru")


def test_a_system_that_learns_from_losses_cannot_skip_training(dataset: Path) -> None:
    with pytest.raises(HotsetError, match="learns from training losses"):
        _run(dataset, "shade", train=False)


def test_coverage_counts_what_base_trains_not_what_it_reads(dataset: Path) -> None:
    """``base`` reads every sample and trains the selected ones (the others weigh 0):
    its coverage is the trained ones, fewer than it reads once the selection starts."""
    result = _run(dataset, "base[warm_up=1,window=16]", epochs=3)
    n_train = result["n_train"]
    warm, *selecting = result["epochs"]
    assert warm["unique_ids_trained"] == n_train
    assert all(row["requests"] == n_train for row in result["epochs"])  # each asked for
    assert any(row["unique_ids_trained"] < n_train for row in selecting), selecting


def _reads(result: dict[str, Any]) -> list[Any]:
    """What a run read and trained, epoch by epoch (not what it measured)."""
    keys = ("requests", "storage_reads", "storage_bytes", "exact_hits", "train_loss")
    return [[row[k] for k in keys] for row in result["epochs"]]


def test_a_test_set_of_the_held_out_samples_measures_what_the_split_does(
    dataset: Path, tmp_path: Path
) -> None:
    """The held-out split copied out as a test set: the very accuracy of the run without
    one, every read and loss unchanged, and the result says what accuracy was measured on."""
    from hotset.data.split import subset_dataset

    labels = np.asarray(Manifest.load(dataset).labels)
    _, val_rows = stratified_split(labels, val_frac=0.1, seed=0)
    subset_dataset(dataset, tmp_path / "test", val_rows)
    plain = _run(dataset, "lru")
    tested = _run(dataset, "lru", test_dataset=str(tmp_path / "test"))
    assert [r["val_accuracy"] for r in tested["epochs"]] == [
        r["val_accuracy"] for r in plain["epochs"]
    ]
    assert _reads(tested) == _reads(plain)
    assert tested["n_accuracy"] == tested["n_val"] == len(val_rows) == plain["n_accuracy"]
    assert tested["config"]["test_dataset"] == str(tmp_path / "test")
    assert plain["config"]["test_dataset"] is None


def test_another_draw_as_test_set_changes_only_the_accuracy(dataset: Path, tmp_path: Path) -> None:
    """A clean independent draw of the same classes: the run reads and trains exactly as
    without it; only the accuracy, now on its 300 samples, differs."""
    cfg = SynthConfig(n=300, image_size=8, classes=4, channels=1, seed=0, noise=0.0, draw=1)
    make_synth(tmp_path / "test", cfg, workers=1)
    plain = _run(dataset, "lru")
    tested = _run(dataset, "lru", test_dataset=str(tmp_path / "test"))
    assert _reads(tested) == _reads(plain)
    assert tested["n_accuracy"] == 300
    accuracy = [r["val_accuracy"] for r in tested["epochs"]]
    assert all(0.0 <= a <= 1.0 for a in accuracy)
    assert accuracy != [r["val_accuracy"] for r in plain["epochs"]]


def test_a_test_set_that_does_not_fit_is_refused_by_name(dataset: Path, tmp_path: Path) -> None:
    """Other classes, other image sizes, a missing directory, or no training at all: each
    named, before any training."""
    other = SynthConfig(n=100, image_size=8, classes=5, channels=1, seed=0)
    make_synth(tmp_path / "classes", other, workers=1)
    make_synth(
        tmp_path / "size", SynthConfig(n=100, image_size=6, classes=4, channels=1), workers=1
    )
    with pytest.raises(HotsetError, match=r"test_dataset .*classes.* has 5 classes .* has 4"):
        _run(dataset, "lru", test_dataset=str(tmp_path / "classes"))
    with pytest.raises(HotsetError, match=r"its images are 1x6x6, the training set's 1x8x8"):
        _run(dataset, "lru", test_dataset=str(tmp_path / "size"))
    with pytest.raises(HotsetError, match=r"test_dataset '/nonexistent/t' does not exist"):
        _run(dataset, "lru", test_dataset="/nonexistent/t")
    with pytest.raises(HotsetError, match="a run with train=False has none"):
        LiveOptions(
            system="lru", dataset=str(dataset), cache_frac=0.2, epochs=1, seed=0,
            train=False, test_dataset=str(tmp_path / "size"),
        )  # fmt: skip
