""" "Which system should I use?": derived from the matrix, never typed by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cli_support import run_cli
from hotset.bench.which import END, START, load, render, replace_block

ROOT = Path(__file__).resolve().parents[2]


def _row(system: str, preset: str, workload: str, vs_torch: float, **extra: Any) -> dict:
    return {
        "preset": preset,
        "workload": workload,
        "cache_frac": 0.2,
        "system": system,
        "vs_torch": vs_torch,
        "vs_torch_min": vs_torch - 0.1,
        "vs_torch_max": vs_torch + 0.1,
        "vs_no_io": vs_torch / 4,
        "sim_acc_delta_pt": 0.0,
        "sim_acc_noise_pt": 0.5,
        "sim_distinct_share": 1.0,
    } | extra


def _matrix(rows: list[dict]) -> dict[str, Any]:
    return {"table": rows, "params": {"stores": {}}}


CELLS = [("s3-small", "synth"), ("cloud-nas", "imagenet-like"), ("nfs-10gbe", "imagenet-like")]


def _grid(speeds: dict[str, float], **extra: dict[str, Any]) -> list[dict]:
    return [
        _row(name, p, w, speed, **extra.get(name, {}))
        for p, w in CELLS
        for name, speed in speeds.items()
    ] + [_row("torch", p, w, 1.0) for p, w in CELLS]


def _use(lines: list[str], label_start: str) -> str:
    row = next(line for line in lines if line.startswith(f"| {label_start}"))
    return row.split("|")[2].strip()


def test_a_system_that_trains_a_subset_or_loses_accuracy_does_not_win() -> None:
    rows = _grid(
        {"shade": 9.0, "impact": 8.0, "quiver": 3.0, "lru": 1.5},
        shade={"sim_distinct_share": 0.35},  # fast by training a third of the ids
        impact={"sim_acc_delta_pt": -4.0},  # beyond 1 pt and beyond the noise
    )
    lines = render(_matrix(rows))
    assert lines[0] == START and lines[-1] == END
    assert _use(lines, "all-rounder") == "`quiver`"
    # quiver reads whole chunks: where data cannot be packed, the best single-sample reader
    assert _use(lines, "data cannot be packed") == "`lru`"


def test_an_accuracy_gap_within_the_noise_is_no_loss() -> None:
    rows = _grid({"impact": 8.0, "quiver": 3.0}, impact={"sim_acc_delta_pt": -1.5})
    assert _use(render(_matrix(rows)), "all-rounder") == "`quiver`"
    noisy = _grid(
        {"impact": 8.0, "quiver": 3.0},
        impact={"sim_acc_delta_pt": -1.5, "sim_acc_noise_pt": 2.0},
    )
    lines = render(_matrix(noisy))
    assert _use(lines, "all-rounder") == "`impact`"
    # impact learns from losses: a loop without per-sample losses cannot use it
    assert _use(lines, "training loop returns no per-sample losses") == "`quiver`"


def test_replace_block_keeps_the_rest_of_the_file() -> None:
    text = f"intro\n{START}\nold\n{END}\noutro\n"
    assert replace_block(text, [START, "new", END]) == f"intro\n{START}\nnew\n{END}\noutro\n"


def test_the_readme_table_is_the_committed_matrix_rendered() -> None:
    readme = (ROOT / "README.md").read_text()
    block = render(load(ROOT / "benchmarks" / "results" / "matrix.json"))
    assert "\n".join(block) in readme, (
        "README.md's 'which system' table differs from benchmarks/results/matrix.json; "
        "run `hotset bench which --write README.md`"
    )


def test_the_cli_writes_the_block_between_the_markers(tmp_path: Path) -> None:
    import json

    matrix = tmp_path / "matrix.json"
    rows = _grid({"quiver": 3.0, "lru": 1.5})
    matrix.write_text(json.dumps({"suite": "matrix", "result": _matrix(rows)}))
    target = tmp_path / "README.md"
    target.write_text(f"# x\n\n{START}\n{END}\n\nmore\n")
    code, out = run_cli("bench", "which", "--matrix", str(matrix), "--write", str(target))
    assert code == 0, out
    text = target.read_text()
    assert "`quiver`" in text and text.endswith("\n\nmore\n")
    code, out = run_cli("bench", "which", "--matrix", str(tmp_path / "none.json"))
    assert code != 0 and "run `hotset bench matrix` first" in out


@pytest.mark.parametrize("frac", [0.5])
def test_a_cache_size_the_matrix_lacks_is_named(frac: float) -> None:
    from hotset.errors import HotsetError

    with pytest.raises(HotsetError, match=r"no cells at cache size 0\.5"):
        render(_matrix(_grid({"quiver": 3.0})), frac=frac)


def test_the_no_cache_loader_is_never_taken_for_pytorchs_own() -> None:
    lines = render(_matrix(_grid({"pytorch": 3.0, "lru": 1.5})))
    assert _use(lines, "all-rounder") == "`pytorch` (hotset's loader, no cache)"
