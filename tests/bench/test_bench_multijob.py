"""``hotset bench multijob``: independent job processes, private caches vs one shared namespace.

A tiny real run: two spawned job processes per arrangement over one modeled
store and a redis-server the suite starts itself. Quiver at a cache of the
whole data set loads every chunk once per job in the cold epoch; sharing a
namespace, each job finds in the pool some chunks the other loaded first
(co-operative misses, §5.2), so the two read less between them than alone.
"""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import run_cli

ROW_KEYS = {
    "system",
    "arrangement",
    "cache_frac",
    "cache_total_frac",
    "jobs",
    "storage_requests_per_epoch",
    "storage_requests_per_job_epoch",
    "storage_mb_per_epoch",
    "storage_mb_per_job_epoch",
    "reads_per_item_per_epoch",
    "exact_hit_ratio",
    "substitution_ratio",
    "pool_hits_per_epoch",
    "pool_unit_hits_per_epoch",
    "claimed_units_per_epoch",
    "rebuild_reads_per_epoch",
    "refused_puts_per_epoch",
    "min_ids_trained",
    "ids_trained_per_job_epoch",
    "every_id_every_epoch",
    "samples_per_s",
    "wall_seconds",
    "wall_seconds_with_startup",
    "start",
    "start_gap_s",
    "start_spread_s",
    "makespan_seconds",
}


def test_two_jobs_share_their_chunk_reads(tmp_path: Path) -> None:
    code, out = run_cli(
        "bench", "multijob", "--root", str(tmp_path), "--jobs", "2",
        "--systems", "pytorch,quiver", "--cache-frac", "1.0", "--n", "1024",
        "--epochs", "2", "--batch-size", "16", "--no-progress", "--stagger", "none",
    )  # fmt: skip
    assert code == 0, out
    doc = json.loads((tmp_path / "benchmarks" / "results" / "multijob.json").read_text())
    result = doc["result"]
    assert result["params"]["jobs"] == 2 and result["params"]["n"] == 1024
    assert result["params"]["stagger"] is None
    rows = {(r["system"], r["arrangement"]): r for r in result["table"]}
    assert len(rows) == len(result["table"])  # --stagger none: lockstep rows only
    assert set(rows) == {("pytorch", "none"), ("quiver", "private"), ("quiver", "shared")}
    for row in rows.values():
        assert set(row) == ROW_KEYS
        # both promise every sample once per epoch, to every job
        assert row["every_id_every_epoch"] is True and row["min_ids_trained"] == 1024
        assert row["ids_trained_per_job_epoch"] == 1024
        assert row["samples_per_s"] > 0
        # lockstep: every job starts its first epoch when the last is built
        assert row["start"] == "lockstep" and row["start_gap_s"] == 0
        assert row["start_spread_s"] < 0.25
    # no cache: every job reads every sample, alone, every epoch
    plain = rows["pytorch", "none"]
    assert plain["storage_requests_per_epoch"] == 2 * 1024
    assert plain["reads_per_item_per_epoch"] == 2.0
    private, shared = rows["quiver", "private"], rows["quiver", "shared"]
    assert private["pool_unit_hits_per_epoch"] == 0 == private["pool_hits_per_epoch"]
    assert private["cache_total_frac"] == 2.0 and shared["cache_total_frac"] == 1.0
    # co-operative misses: chunks one job put are not read again by the other
    assert shared["pool_unit_hits_per_epoch"] > 0
    assert shared["storage_requests_per_epoch"] < private["storage_requests_per_epoch"]
    assert shared["reads_per_item_per_epoch"] < private["reads_per_item_per_epoch"]
    # and the saved reads are the pool's or another job's claim: planned unit requests
    # + units found + units left to the other job = what private read (a member of a
    # unit left to the other job and served before its put landed is a rebuild read)
    saved = shared["pool_unit_hits_per_epoch"] + shared["claimed_units_per_epoch"]
    planned = shared["storage_requests_per_epoch"] - shared["rebuild_reads_per_epoch"]
    assert planned + saved == private["storage_requests_per_epoch"]
    # per job detail: one report row per epoch for each job
    for run in result["jobs"]:
        assert len(run["jobs"]) == 2 and all(len(j["rows"]) == 2 for j in run["jobs"])
    readme = (tmp_path / "benchmarks" / "README.md").read_text()
    assert "## multijob" in readme and "results/multijob.json" in readme


def test_bad_input_fails_before_any_work(tmp_path: Path) -> None:
    code, out = run_cli("bench", "multijob", "--root", str(tmp_path), "--cache-frac", "1.5")
    assert code == 2 and "cache share" in out
    code, out = run_cli("bench", "multijob", "--root", str(tmp_path), "--systems", "nope")
    assert code == 2 and "nope" in out
    code, out = run_cli("bench", "multijob", "--root", str(tmp_path), "--stagger", "2x")
    assert code == 2 and "'2x'" in out and "0.5s" in out
    code, out = run_cli("bench", "multijob", "--root", str(tmp_path), "--store", "tape")
    assert code == 2 and "'tape'" in out and "nfs-10gbe" in out
    assert not (tmp_path / "benchmarks").exists()
