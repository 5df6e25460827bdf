"""``hotset bench icachejobs``: Fig. 14's four schemes for two jobs, written as a result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_support import run_cli


def test_it_writes_a_row_per_scheme_and_job_with_the_terminal_table(tmp_path: Path) -> None:
    code, out = run_cli(
        "bench", "icachejobs", "--root", str(tmp_path), "--n", "600", "--epochs", "4",
        "--batch-size", "16", "--probe", "3", "--cache-fracs", "0.4", "--correlation", "0",
        "--no-progress",
    )  # fmt: skip
    assert code == 0, out
    assert "hit_cached" in out and "vs_default" in out  # the terminal table's headers
    doc = json.loads((tmp_path / "benchmarks" / "results" / "icachejobs.json").read_text())
    result = doc["result"]
    rows = {(r["scheme"], r["job"]): r for r in result["table"]}
    assert set(rows) == {(s, j) for s in ("default", "inda", "indb", "icache") for j in "AB"}
    assert all(r["vs_default"] == 1.0 for k, r in rows.items() if k[0] == "default")
    assert rows["icache", "A"]["probe_reads_per_epoch"] == 3 * 16
    assert result["params"]["probe"] == 3 and result["params"]["correlation"] == 0
    assert any("Simulated" in note for note in result["notes"])
    assert json.dumps(result, allow_nan=False)  # plain numbers only


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("--cache-fracs", "0.3,1.5"), "cache_frac must be in (0, 1]"),
        (("--probe", "1"), "--probe"),
        (("--eligible-above", "0.5"), "--eligible-above"),
        (("--correlation", "2"), "--correlation"),
    ],
)
def test_bad_values_fail_before_any_work(tmp_path: Path, args: tuple[str, ...], match: str) -> None:
    code, out = run_cli("bench", "icachejobs", "--root", str(tmp_path), "--no-progress", *args)
    assert code == 2 and match in out, out
    assert not (tmp_path / "benchmarks").exists()
