"""``hotset bench <suite>`` prints an aligned table of a few columns; ``--json`` all of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_support import run_cli
from hotset.cli.bench_table import SUITE_COLUMNS, TEXT_CELL, WIDE_CELL, table_lines


def _columns(line: str) -> list[str]:
    return line.split()


def test_sim_table_is_aligned_and_matches_the_result_file(tmp_path: Path) -> None:
    code, out = run_cli(
        "bench", "sim", "--accesses", "3000", "--n", "300", "--policy", "lru,minio,belady",
        "--root", str(tmp_path),
    )  # fmt: skip
    assert code == 0, out
    lines = out.strip().splitlines()
    assert _columns(lines[0]) == ["policy", "accesses", "seconds", "accesses/s", "hit_ratio"]
    body, last = lines[1:-1], lines[-1]
    assert last.startswith("wrote ") and "--json" in last
    assert "=" not in "".join(body)  # no key=value lines any more
    assert len({len(line) for line in lines[:-1]}) == 1  # every row as wide as the header
    doc = json.loads((tmp_path / "benchmarks" / "results" / "sim.json").read_text())
    table = doc["result"]["table"]
    assert [_columns(line)[0] for line in body] == [row["policy"] for row in table]
    for line, row in zip(body, table, strict=True):
        assert float(_columns(line)[-1]) == pytest.approx(row["hit_ratio"], rel=1e-3, abs=1e-4)
        assert int(_columns(line)[1]) == row["accesses"] == 3000


def test_json_prints_the_whole_result(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from hotset.cli import cli

    result = CliRunner().invoke(
        cli,
        [
            "bench", "sim", "--accesses", "2000", "--n", "200", "--policy", "lru",
            "--root", str(tmp_path), "--json",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "benchmarks" / "results" / "sim.json").read_text())
    assert json.loads(result.stdout) == doc["result"]  # where it wrote goes to stderr


def test_wide_text_stays_out_and_each_scenario_keeps_its_counters() -> None:
    detail = "2 epochs x 2000 samples per run, " * 10
    rows = [
        {"scenario": "storage", "runs": 4, "failed_runs": 0, "samples_lost": 0,
         "wrong_samples": 0, "detail": detail},
        {"scenario": "redis-killed", "runs": 4, "failed_runs": 1, "samples_lost": 0,
         "wrong_samples": 0, "detail": detail, "degraded_reads": 3002, "cache_errors": 10},
    ]  # fmt: skip
    lines = table_lines("faults", rows)
    assert _columns(lines[0]) == ["scenario", "runs", "failed", "lost", "wrong", "counters"]
    assert "2 epochs" not in "\n".join(lines)
    assert lines[2].endswith("degraded_reads=3002 cache_errors=10")
    assert _columns(lines[2])[:5] == ["redis-killed", "4", "1", "0", "0"]
    long_counters = [{**rows[1], **{f"counter_{i}": i for i in range(30)}}]
    line = table_lines("faults", long_counters)[1]
    counters = line[line.index("degraded_reads") :]
    assert len(counters) == WIDE_CELL and counters.endswith("...")


def test_columns_no_row_has_are_left_out_and_none_is_a_dash() -> None:
    rows = [
        {"latency_ms": 2.0, "name": "torch", "samples_per_s": 1582.8, "exact_hit_ratio": None},
        {"latency_ms": 2.0, "name": "lru", "samples_per_s": 1600.0, "exact_hit_ratio": 0.25,
         "stall_seconds": 3.0, "per_epoch_samples_per_s": [1.0, 2.0]},
    ]  # fmt: skip
    lines = table_lines("loader", rows)
    assert _columns(lines[0]) == ["ms", "name", "samples/s", "exact"]
    assert _columns(lines[1]) == ["2", "torch", "1583", "-"]
    assert _columns(lines[2]) == ["2", "lru", "1600", "0.25"]


def test_a_long_system_name_keeps_both_ends_and_an_unknown_suite_its_scalars() -> None:
    name = "shade[adaptive=false,coverage_floor=0.05,anneal_from=13,unbiased=true,guardrail=0.05]"
    lines = table_lines("train", [{"workload": "digits", "system": name, "final_acc_mean": 0.95}])
    cell = _columns(lines[1])[1]
    assert len(cell) == TEXT_CELL and cell.startswith("shade[") and cell.endswith("=0.05]")
    rows = [{"a": 1, "b": "x", "nested": {"k": 1}}]
    assert _columns(table_lines("not-a-suite", rows)[0]) == ["a", "b"]


def test_every_suite_command_has_its_columns() -> None:
    import click

    from hotset.cli.bench import READERS, bench

    ctx = click.Context(bench)
    assert set(bench.list_commands(ctx)) - set(READERS) == set(SUITE_COLUMNS)
