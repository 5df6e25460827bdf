"""``hotset bench faults``: failed runs, lost samples and drift under injected failures."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.cli.bench import finish, root_option
from hotset.cli.json_option import json_option


@click.command("faults")
@click.option("--n", "n", type=click.IntRange(min=400), default=2000, show_default=True)
@click.option(
    "--runs", type=click.IntRange(min=1), default=4, show_default=True, help="Per scenario."
)
@click.option("--progress/--no-progress", default=True, show_default=True)
@json_option()
@root_option
def command(n: int, runs: int, progress: bool, as_json: bool, root: Path) -> None:
    """Storage errors, Redis killed/frozen/restarted, shared namespaces, kills, poison."""
    from hotset.bench.faults import run

    finish("faults", run(n=n, runs=runs, progress=progress), root, as_json)
