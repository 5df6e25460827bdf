"""Identification precision (ImPACT Fig. 15): the measure, that measuring changes nothing,
and what re-evaluating costs: bytes from the cache, the rest read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hotset.data.synth import SynthConfig, make_synth
from hotset.sim.identification import TOP_SHARE, top_precision
from hotset.sim.live import LiveOptions, run_live


def test_the_paper_looks_at_the_top_one_percent() -> None:
    assert TOP_SHARE == 0.01


def test_precision_is_the_share_of_the_true_top_that_the_estimate_finds() -> None:
    truth = np.arange(200, dtype=np.float64)  # top 1%: ids 199 and 198
    assert top_precision(truth, truth) == 1.0
    est = truth.copy()
    est[198] = -1.0  # one of the two falls out of the estimate's top
    assert top_precision(est, truth) == 0.5
    assert top_precision(-truth, truth) == 0.0
    est = truth.copy()
    est[[198, 199]] = np.nan  # unknown estimates rank lowest
    assert top_precision(est, truth) == 0.0
    assert top_precision(truth, truth, share=0.5) == 1.0


@pytest.mark.parametrize(
    ("est", "truth", "share"),
    [([1.0], [1.0, 2.0], 0.01), ([], [], 0.01), ([1.0], [1.0], 0.0), ([1.0], [1.0], 1.5)],
)
def test_bad_input_is_refused(est: list[float], truth: list[float], share: float) -> None:
    with pytest.raises(ValueError):
        top_precision(est, truth, share=share)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ident") / "syn"
    make_synth(out, SynthConfig(n=600, image_size=8, classes=4, channels=1, seed=0), workers=1)
    return out


def _run(dataset: Path, system: str = "impact", **kw: Any) -> dict[str, Any]:
    return run_live(
        LiveOptions(
            system=system,
            options={"window": 64, "max_warm_up": 3},
            dataset=str(dataset),
            cache_frac=0.3,
            epochs=7,
            seed=0,
            batch_size=64,
            **kw,
        )
    )


def test_measuring_changes_no_decision_and_no_modeled_time(dataset: Path) -> None:
    plain, measured = _run(dataset), _run(dataset, measure_identification=True)
    got = [r.get("top1_precision") for r in measured["epochs"]]
    assert got[0] is None and all(0.0 <= g <= 1.0 for g in got[1:] if g is not None)
    assert all(g is not None for g in got[1:])
    for a, b in zip(plain["epochs"], measured["epochs"], strict=True):
        b = {k: v for k, v in b.items() if k != "top1_precision"}
        assert {k: v for k, v in a.items() if k != "wall_seconds"} == {
            k: v for k, v in b.items() if k != "wall_seconds"
        }


def test_hybrid_evaluates_from_the_static_buffer_and_realtime_reads_the_rest(
    dataset: Path,
) -> None:
    kw: dict[str, Any] = {"compute_ms_per_batch": 10.0, "measure_identification": True}
    hybrid, realtime = _run(dataset, **kw), _run(dataset, "impact_realtime", **kw)
    k = realtime["policy"]["warm_up_epochs"]
    assert k == hybrid["policy"]["warm_up_epochs"] and k + 2 <= 7
    assert any(r["evaluated"] for r in hybrid["epochs"])
    assert all(r["evaluate_reads"] == 0 for r in hybrid["epochs"])  # S is buffered
    n = realtime["epochs"][0]["requests"]  # the first epoch reads every sample
    for row in realtime["epochs"][k + 1 :]:
        assert row["evaluated"] == n
        # 30% of the bytes are cached: at least the other 70% are read first
        assert 0.7 * n <= row["evaluate_reads"] < n
        assert row["top1_precision"] == 1.0  # the draw saw every current loss
    for a, b in zip(hybrid["epochs"][: k + 1], realtime["epochs"][: k + 1], strict=True):
        assert a["modeled_epoch_seconds"] == b["modeled_epoch_seconds"]  # same until then
    later = slice(k + 1, None)
    slow = sum(r["modeled_epoch_seconds"] for r in realtime["epochs"][later])
    assert slow > sum(r["modeled_epoch_seconds"] for r in hybrid["epochs"][later])
