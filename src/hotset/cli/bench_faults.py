"""``hotset bench faults``: failed runs, lost samples and drift under injected failures."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.faults import FaultsOptions
from hotset.cli.bench import finish, root_option
from hotset.cli.json_option import json_option
from hotset.cli.typed_options import options_from


@click.command("faults")
@options_from(FaultsOptions)
@click.option("--progress/--no-progress", default=True, show_default=True)
@json_option()
@root_option
def command(opts: FaultsOptions, progress: bool, as_json: bool, root: Path) -> None:
    """Storage errors, Redis killed/frozen/restarted, shared namespaces, kills, poison."""
    from hotset.bench.faults import run

    finish("faults", run(opts, progress=progress), root, as_json)
