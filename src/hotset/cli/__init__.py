"""The ``hotset`` command.

Subcommands live in their own modules and are imported only when invoked, so
``hotset --help`` stays fast (no torch import) and each module owns one job.
"""

from __future__ import annotations

import importlib
import sys

import click

from hotset import __version__
from hotset.errors import HotsetError

# name -> (module, attribute, one-line help)
_COMMANDS: dict[str, tuple[str, str, str]] = {
    "data": ("hotset.cli.data", "data", "Make, import and verify datasets."),
    "simulate": ("hotset.cli.simulate", "simulate", "Replay traces or simulate training."),
    "systems": ("hotset.cli.systems", "systems", "List the named systems."),
    "stores": ("hotset.cli.stores", "stores", "List the store presets and their sources."),
    "bench": ("hotset.cli.bench", "bench", "Run benchmark suites."),
    "demo": ("hotset.cli.demo", "demo", "Run the headline demo on a synthetic dataset."),
    "cache": ("hotset.cli.cache", "cache", "List and reclaim shm segments and Redis namespaces."),
    "advise": ("hotset.cli.advise", "advise", "How much cache a data set needs (simulated)."),
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = _COMMANDS.get(cmd_name)
        if spec is None:
            return None
        module = importlib.import_module(spec[0])
        command = getattr(module, spec[1])
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, _COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hotset")
def cli() -> None:
    """hotset: importance-aware caching and sampling for training data."""


def main(argv: list[str] | None = None) -> None:
    """Entry point: bad input becomes one line on stderr and exit code 2."""
    try:
        # standalone_mode=False hands back ctx.exit(code) as a return value
        code = cli.main(args=argv, prog_name="hotset", standalone_mode=False)
    except HotsetError as exc:
        click.echo(f"hotset: error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        # One prefix for every error, ours or click's ("Error: No such option")
        hint = ""
        if isinstance(exc, click.UsageError) and exc.ctx is not None:
            hint = f" (see '{exc.ctx.command_path} --help')"
        click.echo(f"hotset: error: {exc.format_message()}{hint}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    if isinstance(code, int) and code != 0:
        sys.exit(code)
