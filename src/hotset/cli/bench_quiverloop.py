"""``hotset bench placement``: Quiver's benefit-aware placement, open loop vs closed."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.quiverloop import PlacementOptions
from hotset.cli.bench import finish, name_option, root_option
from hotset.cli.json_option import json_option
from hotset.cli.typed_options import options_from


@click.command("placement")
@options_from(PlacementOptions)
@click.option("--progress/--no-progress", default=True, show_default=True)
@name_option("placement")
@json_option()
@root_option
def command(opts: PlacementOptions, progress: bool, name: str, as_json: bool, root: Path) -> None:
    """Two jobs on one namespace, one waiting on storage and one whose step hides its
    reads: open loop (probe measured, applied nowhere) vs closed (placement applied)."""
    from hotset.bench.quiverloop import run

    finish(name, run(opts, progress=progress), root, as_json)
