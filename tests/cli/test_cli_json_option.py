"""``--json`` is declared in one place and means the same on every command."""

from __future__ import annotations

import json
from pathlib import Path

import click
from click.testing import CliRunner

from hotset.cli import cli
from hotset.cli.json_option import json_option, json_path_option

CLI = Path(__file__).resolve().parents[2] / "src" / "hotset" / "cli"


def _commands(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    """Every leaf command, through the lazy groups (each imports its module on demand)."""
    ctx = click.Context(group)
    found: dict[str, click.Command] = {}
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if isinstance(cmd, click.Group):
            found |= _commands(cmd, f"{prefix}{name} ")
        elif cmd is not None:
            found[f"{prefix}{name}"] = cmd
    return found


def test_the_flag_is_spelled_out_only_in_its_own_module() -> None:
    spelled = sorted(
        p.name
        for p in CLI.glob("*.py")
        if '"--json"' in p.read_text() and p.name != "json_option.py"
    )
    assert spelled == [], f"--json declared by hand in {spelled}; use hotset.cli.json_option"


def test_every_command_with_the_flag_passes_it_as_as_json() -> None:
    with_json = {
        name: [p for p in cmd.params if "--json" in getattr(p, "opts", [])]
        for name, cmd in _commands(cli).items()
    }
    declared = {name: params for name, params in with_json.items() if params}
    assert len(declared) >= 20, sorted(declared)  # the benches, stores, systems, cache, advise
    for name, params in declared.items():
        assert len(params) == 1 and params[0].name == "as_json", name


def test_a_command_prints_parseable_json_with_it() -> None:
    out = CliRunner().invoke(cli, ["stores", "--json"])
    assert out.exit_code == 0, out.output
    assert {"name"} <= set(json.loads(out.stdout)[0])


def test_the_two_forms_differ_only_in_taking_a_path() -> None:
    @click.command()
    @json_option()
    def flag(as_json: bool) -> None:
        click.echo(repr(as_json))

    @click.command()
    @json_path_option("PATH or stdout")
    def path(as_json: Path | None) -> None:
        click.echo(repr(as_json))

    runner = CliRunner()
    assert runner.invoke(flag, ["--json"]).output.strip() == "True"
    assert runner.invoke(flag, []).output.strip() == "False"
    assert runner.invoke(path, ["--json"]).output.strip() == "PosixPath('-')"
    assert runner.invoke(path, ["--json", "x.json"]).output.strip() == "PosixPath('x.json')"
    assert runner.invoke(path, []).output.strip() == "None"
