"""Re-evaluation in the live-training simulator: bytes from the cache, the rest read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hotset.data.synth import SynthConfig, make_synth
from hotset.sim.live import run_live


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("evaluate") / "syn"
    make_synth(out, SynthConfig(n=600, image_size=8, classes=4, channels=1, seed=0), workers=1)
    return out


def _run(dataset: Path, system: str) -> dict[str, Any]:
    return run_live(
        system=system,
        options={"window": 64, "max_warm_up": 3},
        dataset=str(dataset),
        cache_frac=0.3,
        epochs=7,
        seed=0,
        batch_size=64,
        compute_ms_per_batch=10.0,
        measure_identification=True,
    )


def test_hybrid_evaluates_from_the_static_buffer_and_realtime_reads_the_rest(
    dataset: Path,
) -> None:
    hybrid, realtime = _run(dataset, "impact"), _run(dataset, "impact_realtime")
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
