"""Result files carry their command and machine; the README is rebuilt from them."""

from __future__ import annotations

import json
from pathlib import Path

from hotset.bench.results import render_readme, write_result, write_result_file


def test_write_result_records_command_and_regenerates_readme(tmp_path: Path) -> None:
    result = {"table": [{"policy": "lru", "accesses_per_s": 1.5e6}], "notes": ["a note"]}
    path = write_result("demo-suite", result, root=tmp_path, command="hotset bench demo-suite")
    doc = json.loads(path.read_text())
    assert doc["command"] == "hotset bench demo-suite"
    assert doc["result"] == result
    assert doc["machine"]["cpus"] >= 1
    readme = (tmp_path / "benchmarks" / "README.md").read_text()
    assert "## demo-suite" in readme
    assert "`hotset bench demo-suite`" in readme
    assert "| lru | 1.5e+06 |" in readme
    assert "- a note" in readme


def test_readme_lists_every_suite_in_name_order(tmp_path: Path) -> None:
    write_result("zeta", {"table": []}, root=tmp_path, command="hotset bench zeta")
    write_result("alpha", {"table": []}, root=tmp_path, command="hotset bench alpha")
    text = render_readme(root=tmp_path).read_text()
    assert text.index("## alpha") < text.index("## zeta")
    assert not list((tmp_path / "benchmarks" / "results").glob(".*.tmp"))


def test_every_committed_result_renders(tmp_path: Path) -> None:
    """A result file without the keys the README needs broke every later ``hotset
    bench`` run (it regenerates the README from all of them)."""
    committed = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    for path in committed.glob("*.json"):
        (results / path.name).write_bytes(path.read_bytes())
    text = render_readme(root=tmp_path).read_text()
    for path in committed.glob("*.json"):
        doc = json.loads(path.read_text())
        assert {"suite", "command", "date", "result"} <= doc.keys(), path.name
        assert f"Raw: [results/{path.name}]" in text


def test_a_script_naming_its_file_writes_a_result_that_renders(tmp_path: Path) -> None:
    path = tmp_path / "benchmarks" / "results" / "quiver-mask.json"
    path.parent.mkdir(parents=True)
    write_result_file(path, "quiver-mask", {"results": []}, "python -m x")
    assert json.loads(path.read_text())["suite"] == "quiver-mask"
    assert "## quiver-mask" in (tmp_path / "benchmarks" / "README.md").read_text()
    elsewhere = write_result_file(tmp_path / "out.json", "quiver-mask", {}, "python -m x")
    assert json.loads(elsewhere.read_text())["command"] == "python -m x"


def test_a_file_that_is_no_suite_result_is_left_out_of_the_readme(tmp_path: Path) -> None:
    """A module's own result file (``python -m hotset.bench.quiver_mask``: no suite, date
    or machine) stopped every later ``write_result`` with a KeyError after writing."""
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    (results / "aaa-own.json").write_text(json.dumps({"command": "python -m x", "results": []}))
    write_result("demo", {"table": []}, root=tmp_path, command="hotset bench demo")
    text = (tmp_path / "benchmarks" / "README.md").read_text()
    assert "## demo" in text and "aaa-own" not in text
