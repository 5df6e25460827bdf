"""``hotset bench faults`` runs every scenario and finds nothing lost (small sizes)."""

from __future__ import annotations

import shutil

import pytest

from hotset.bench.faults import run

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")


def test_every_scenario_runs_and_loses_nothing() -> None:
    result = run(n=400, runs=1)
    rows = {row["scenario"]: row for row in result["table"]}
    assert set(rows) == {
        "storage-5%-oserror",
        "storage-1%-timeout",
        "redis-killed",
        "redis-frozen",
        "redis-restarted",
        "shared-namespace",
        "process-group-kill",
        "poisoned-entries",
        "corrupted-file",
        "chunks-reordered",
        "chunks-stale",
        "planted-payload",
        "redis-evicting",
        "worker-killed-in-write-turn",
        "package-dir-full",
        "package-dir-read-only",
    }
    for row in rows.values():
        assert row["failed_runs"] == 0, row
        assert row.get("samples_lost", 0) == 0 and row.get("wrong_samples", 0) == 0, row
        assert row.get("max_drift_bytes", 0) == 0, row
    assert rows["redis-killed"]["cache_errors"] > 0  # the fault really landed
    assert rows["process-group-kill"]["shm_bytes_left_after_next_start"] == 0
    assert rows["poisoned-entries"]["integrity_errors"] == 20
    assert rows["corrupted-file"]["integrity_errors"] == 1
    # the integrity and security review's scenarios (hotset.bench.faults_security)
    for scenario in ("chunks-reordered", "chunks-stale"):
        assert rows[scenario]["stopped_with_error"] == 2, rows[scenario]  # quiver, brand
    assert rows["planted-payload"]["code_run"] == 0
    assert rows["worker-killed-in-write-turn"]["hangs"] == 0
    assert rows["worker-killed-in-write-turn"]["error_named_the_worker"] == 1
    for scenario in ("package-dir-full", "package-dir-read-only"):
        row = rows[scenario]
        if row["runs"]:  # a tmpfs could be mounted (root): the fallback really ran
            assert row["package_fallback_reads"] > 0, row
