"""``hotset bench faults`` runs every scenario and finds nothing lost (small sizes)."""

from __future__ import annotations

import errno
import json
import shutil
from pathlib import Path

import pytest

from hotset.bench.faults import FaultsOptions, run
from hotset.bench.faults_recovery import SCENARIOS as RECOVERY
from hotset.bench.faults_security import _fill, _tmpfs
from hotset.storage.local import LocalStore

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")


def test_every_scenario_runs_and_loses_nothing() -> None:
    result = run(FaultsOptions(n=400, runs=1))
    rows = {row["scenario"]: row for row in result["table"]}
    assert set(RECOVERY) <= set(rows)
    assert set(rows) - set(RECOVERY) == {
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
        # records other jobs write, poisoned (hotset.bench.faults_records)
        "record-deep (quiver)",
        "record-huge-claim (quiver)",
        "record-non-finite (icache)",
        "record-future-dated (icache)",
        "records-100000 (quiver)",
        "records-100000 (icache)",
    }
    for row in rows.values():
        assert row["failed_runs"] == 0, json.dumps(row)  # the detail names each failure
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
    for scenario, row in rows.items():
        if scenario.startswith("record"):  # every record planted is invalid: no change
            assert row["exact_hits"] == row["exact_hits_control"], row
            assert abs(row["state_bytes"] - row["state_bytes_control"]) <= 256, row
    for scenario in ("package-dir-full", "package-dir-read-only"):
        row = rows[scenario]
        if row["runs"]:  # a tmpfs could be mounted (root): the fallback really ran
            assert row["package_write_errors"] > 0, row  # the fault landed in every run
            assert row["package_fallback_reads"] > 0, row
    # recovery (hotset.bench.faults_recovery): 10 kills at runs=1, 40 at the default 4
    kills = rows["worker-killed-at-random"]
    assert kills["runs"] == 10 and kills["raw_exceptions"] == kills["hangs"] == 0, kills
    assert kills["named_errors"] > 0 and kills["unnamed_errors"] == 0, kills
    assert rows["package-lost-mid-run"]["packages_lost"] > 0
    assert rows["undecodable-entries-verify-off"]["integrity_errors"] > 0
    assert rows["refused-state"]["batches_differ"] == rows["refused-state"]["accepted"] == 0


def test_a_full_package_dir_stays_full_when_the_loader_deletes_a_package(
    tmp_path: Path,
) -> None:
    """The loader deletes each package once read; the space that freed used to take the
    next package, so in about one full run in six no package write failed and
    package-dir-full tested nothing. The filler keeps the file system full."""
    with _tmpfs(tmp_path / "pk", "1m") as mounted:
        if not mounted:
            pytest.skip("mounting a tmpfs needs root")
        store = LocalStore(tmp_path / "pk")
        store.write(".hotset-packages/run/0.pkg", b"p" * 65536)  # written before the fault
        _fill(tmp_path / "pk")
        (tmp_path / "pk" / ".hotset-packages" / "run" / "0.pkg").unlink()  # read: deleted
        with pytest.raises(OSError) as full:
            store.write(".hotset-packages/run/1.pkg", b"q" * 4096)
        assert full.value.errno == errno.ENOSPC
