"""Every benchmark that takes ``--systems`` reads them with the registry's one grammar.

``NAME[option=value,...]`` keeps its commas, and a misspelled option (or a value of
the wrong type) is named as such before any data is made or any job started.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_support import run_cli

#: each command that takes --systems, with what it needs to start
COMMANDS = {
    "loader": ("bench", "loader", "--n", "200", "--epochs", "1", "--latency-ms", "0.5"),
    "hitratio": ("bench", "hitratio", "--workloads", "synth"),
    "train": ("bench", "train", "--workloads", "synth"),
    "nodes": ("bench", "nodes"),
    "ranks": ("bench", "ranks"),
    "multijob": ("bench", "multijob"),
    "matrix": ("bench", "matrix", "--workloads", "synth"),
    "demo": ("demo", "--n", "200"),
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize(
    ("systems", "message"),
    [
        (
            "lru,shade[anneal_from=3,coverage_flor=0.05]",
            "system 'shade' has no option 'coverage_flor' (did you mean 'coverage_floor'?)",
        ),
        ("quiver[probe=ten],lru", "system 'quiver': option probe got 'ten', expected int"),
    ],
)
def test_a_bad_spec_is_named_before_any_work(
    tmp_path: Path, command: str, systems: str, message: str
) -> None:
    args = list(COMMANDS[command])
    where = ["--out", str(tmp_path / "out")] if command == "demo" else ["--root", str(tmp_path)]
    if command in ("hitratio", "train", "matrix"):
        where += ["--data-dir", str(tmp_path / "data")]
    code, out = run_cli(*args, *where, "--systems", systems)
    assert code == 2, out
    assert message in out
    written = [p for p in tmp_path.rglob("*") if p.is_file()]  # no data, no result
    assert written == [], f"work was done before the check: {written}"
