"""``hotset bench locality``: chunk locality of brand's, quiver's and a uniform order."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.locality import LocalityOptions
from hotset.cli.bench import finish, name_option, root_option
from hotset.cli.json_option import json_option
from hotset.cli.typed_options import options_from


@click.command("locality")
@options_from(LocalityOptions)
@click.option("--progress/--no-progress", default=True, show_default=True)
@name_option("locality")
@json_option()
@root_option
def command(opts: LocalityOptions, progress: bool, name: str, as_json: bool, root: Path) -> None:
    """Same-chunk adjacency, chunk-mate spread and consecutive-epoch rank correlation of
    each system's delivered order, against a uniform permutation (simulated decisions)."""
    from hotset.bench.locality import run

    finish(name, run(opts, progress=progress), root, as_json)
