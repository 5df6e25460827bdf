"""``hotset bench overhead``: decisions/s, loader µs per sample, cache bandwidths."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.overhead import OverheadOptions
from hotset.cli.bench import finish, root_option
from hotset.cli.json_option import json_option
from hotset.cli.typed_options import options_from


@click.command("overhead")
@options_from(OverheadOptions)
@json_option()
@root_option
def command(opts: OverheadOptions, as_json: bool, root: Path) -> None:
    """What hotset itself costs: policy, loader, shared memory, Redis."""
    from hotset.bench.overhead import run

    finish("overhead", run(opts), root, as_json)
