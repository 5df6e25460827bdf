"""``hotset systems``: the table and the JSON list agree with the registry."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from hotset.cli import cli
from hotset.systems.registry import capabilities_of, get_spec, system_names


def test_json_lists_every_system_with_summary_and_source() -> None:
    result = CliRunner().invoke(cli, ["systems", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [row["name"] for row in rows] == system_names()
    for row in rows:
        spec = get_spec(row["name"])
        assert row == {
            "name": spec.name,
            "summary": spec.summary,
            "source": spec.source,
            "capabilities": capabilities_of(spec.name).describe(),
        }
    assert {"pytorch", "lru", "minio", "belady", "oracle"} <= {row["name"] for row in rows}
    flags = {row["name"]: row["capabilities"] for row in rows}
    assert flags["pytorch"] == "no_cache"
    assert flags["lru"] == "plain cache"
    assert flags["belady"] == "needs_future"
    assert flags["oracle"] == "bound"
    assert "learns" in flags["shade"]
    assert "substitutes" in flags["emul_quiv"]


def test_table_shows_name_summary_and_paper_section() -> None:
    result = CliRunner().invoke(cli, ["systems"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) == 2 * len(system_names())
    for name, summary_line, source_line in zip(
        system_names(), lines[0::2], lines[1::2], strict=True
    ):
        spec = get_spec(name)
        assert summary_line.split()[0] == name
        assert spec.summary in summary_line
        caps = capabilities_of(name).describe()
        assert source_line.strip() == f"[{spec.source}] ({caps})"


def test_unknown_option_exits_2_through_main() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "from hotset.cli import main; main()", "systems", "--bogus"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "--bogus" in proc.stderr


def test_options_lists_each_option_with_type_default_and_meaning() -> None:
    from cli_support import run_cli

    code, out = run_cli("systems", "--options", "shade")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].split() == ["option", "type", "default", "meaning"]
    rows = {line.split()[0]: line for line in lines[1:-1]}
    assert list(rows) == [
        "rep_factor",
        "ls_init_frac",
        "adaptive",
        "steep_decline",
        "stagnant",
        "aggressive",
        "coverage_floor",
        "anneal_from",
        "unbiased",
        "guardrail",
        "guard_threshold",
    ]
    assert rows["coverage_floor"].split()[1:4] == ["number", "0.1", "share"]  # on by default
    assert rows["anneal_from"].split()[1:5] == ["int", "or", "none", "none"]
    assert rows["adaptive"].split()[1:3] == ["bool", "true"]
    assert lines[-1] == "give them as shade[option=value,...]"


def test_options_json_and_a_system_without_options() -> None:
    from cli_support import run_cli

    code, out = run_cli("systems", "--options", "quiver", "--json")
    assert code == 0, out
    assert [(r["name"], r["type"], r["default"]) for r in json.loads(out)] == [
        ("probe", "int", 0),
        ("evict_after_s", "number", 30.0),
        ("lookahead", "int or none", None),
        ("mask_failures", "bool", False),
        ("placement", "bool", False),
        ("min_benefit", "number", 1.1),
        ("reprobe_epochs", "int", 0),
        ("fresh_order", "bool", True),
    ]
    code, out = run_cli("systems", "--options", "lru")
    assert (code, out.strip()) == (0, "system 'lru' takes no options")
    code, out = run_cli("systems", "--options", "shde")
    assert code == 2 and "unknown system 'shde' (did you mean 'shade'?); choose from pytorch" in out
