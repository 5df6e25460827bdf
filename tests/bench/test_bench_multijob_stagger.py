"""``hotset bench multijob``: staggered job starts beside lockstep ones, and ``--store``.

Real runs, kept tiny: two spawned ``pytorch`` job processes over one modeled store.
Without a cache every job reads every sample itself, so the storage figures of a
lockstep and a staggered row agree and only when the jobs start differs; that is
what these tests read from the result: each job's start on the system-wide
monotonic clock, relative to the first job's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli_support import run_cli
from hotset.errors import HotsetError

#: how late a job may leave the start barrier on a busy 2-core machine
JITTER_S = 0.35
_TINY = (
    "bench", "multijob", "--jobs", "2", "--systems", "pytorch", "--n", "256",
    "--epochs", "2", "--batch-size", "16", "--no-progress",
)  # fmt: skip


def _result(tmp_path: Path, *extra: str) -> tuple[dict[str, Any], str]:
    code, out = run_cli(*_TINY, "--root", str(tmp_path), *extra)
    assert code == 0, out
    doc = json.loads((tmp_path / "benchmarks" / "results" / "multijob.json").read_text())
    result: dict[str, Any] = doc["result"]
    return result, out


def _offsets(result: dict[str, Any], start: str) -> list[float]:
    (run,) = [r for r in result["jobs"] if r["start"] == start]
    return [job["start_offset_s"] for job in run["jobs"]]


def test_staggered_jobs_really_start_later_and_lockstep_jobs_together(tmp_path: Path) -> None:
    result, _ = _result(tmp_path, "--stagger", "0.6s")
    lockstep, staggered = result["table"]
    assert (lockstep["start"], staggered["start"]) == ("lockstep", "staggered")
    assert lockstep["start_gap_s"] == 0 and staggered["start_gap_s"] == 0.6
    assert result["params"]["stagger"] == "0.6 s apart"
    # lockstep: both jobs leave the barrier together (either may be a hair first)
    offsets = _offsets(result, "lockstep")
    assert min(offsets) == 0 and max(offsets) < JITTER_S and lockstep["start_spread_s"] < JITTER_S
    # staggered: job 1 really starts its first epoch 0.6 s after job 0 (it slept)
    first, second = _offsets(result, "staggered")
    assert first == 0 and 0.6 - 0.05 <= second < 0.6 + JITTER_S
    assert staggered["start_spread_s"] == second
    assert staggered["makespan_seconds"] >= 0.6
    # the same reads either way: without a cache each job reads every sample itself
    for row in (lockstep, staggered):
        assert row["reads_per_item_per_epoch"] == 2.0
        assert row["storage_requests_per_epoch"] == 2 * 256
        assert row["every_id_every_epoch"] is True and row["ids_trained_per_job_epoch"] == 256
        assert row["exact_hit_ratio"] == 0 == row["substitution_ratio"]


def test_default_spreads_starts_over_a_lockstep_epoch_on_the_preset_store(
    tmp_path: Path,
) -> None:
    # a narrow link so an epoch lasts long enough to measure a fraction of it
    result, out = _result(tmp_path, "--store", "nfs-10gbe", "--bandwidth-mb-s", "0.5")
    assert "store: nfs-10gbe (2 ms, 0.5 MB/s, 8 in flight)" in out
    expected = {"preset": "nfs-10gbe", "latency_ms": 2.0, "bandwidth_mb_s": 0.5}
    assert result["store"] == expected | {"max_concurrency": 8}
    params = result["params"]
    assert (params["latency_ms"], params["bandwidth_mb_s"], params["concurrency"]) == (2, 0.5, 8)
    assert "nfs-10gbe (2 ms, 0.5 MB/s, 8 in flight)" in result["notes"][0]
    lockstep, staggered = result["table"]
    # the default: job j of J starts j/J of the lockstep row's epoch after job 0
    epoch_s = lockstep["wall_seconds"] / 2
    assert staggered["start_gap_s"] == pytest.approx(epoch_s / 2, abs=1e-3)
    (second,) = _offsets(result, "staggered")[1:]
    # job 0's own start is stamped a little after the barrier it left with job 1, so job 1's
    # measured offset may fall short of the planned gap by that scheduling delay
    assert staggered["start_gap_s"] - 0.05 <= second < staggered["start_gap_s"] + JITTER_S
    # the preset's link reached the modeled server: one 0.5 MB/s link for both jobs
    # cannot move the run's bytes faster than that
    for row, seconds in ((lockstep, "wall_seconds"), (staggered, "makespan_seconds")):
        assert row["storage_mb_per_epoch"] * 2 / 0.5 <= row[seconds] + 0.02


def test_stagger_values_parse_and_bad_ones_name_themselves() -> None:
    from hotset.bench.stagger import Stagger, parse_stagger

    assert parse_stagger("none") is None
    assert parse_stagger("epoch") == Stagger(epochs=1.0)
    assert parse_stagger("0.5epoch") == Stagger(epochs=0.5)
    assert parse_stagger("0.5s") == Stagger(seconds=0.5)
    assert Stagger(seconds=0.5).gap_s(epoch_s=9.0, jobs=4) == 0.5
    assert Stagger(epochs=1.0).gap_s(epoch_s=2.0, jobs=4) == 0.5  # 4 jobs over 2 s
    for bad in ("2x", "s", "-1s", "0epoch", "nanepoch", "infs"):
        with pytest.raises(HotsetError, match="--stagger"):
            parse_stagger(bad)
