"""Run ``hotset`` commands through the real entry point under CliRunner (no pytest here)."""

from __future__ import annotations

import click
from click.testing import CliRunner

from hotset.cli import main


@click.command(context_settings={"ignore_unknown_options": True, "help_option_names": []})
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
def _entry(argv: tuple[str, ...]) -> None:
    """``hotset.cli.main`` (errors -> one line, exit 2) under CliRunner's capture."""
    main(list(argv))


def run_cli(*args: str) -> tuple[int, str]:
    """Exit code and stdout + stderr of ``hotset ARGS``."""
    result = CliRunner().invoke(_entry, list(args))
    return result.exit_code, result.output
