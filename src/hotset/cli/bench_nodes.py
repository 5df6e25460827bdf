"""``hotset bench nodes``: private vs pooled caches over several nodes (simulated)."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.nodes import NodesOptions
from hotset.cli.bench import finish, root_option
from hotset.cli.json_option import json_option
from hotset.cli.store_option import simulated_store, simulated_store_options, store_line
from hotset.cli.typed_options import options_from


@click.command("nodes")
@options_from(NodesOptions)
@simulated_store_options
@click.option("--progress/--no-progress", default=True, show_default=True)
@json_option()
@root_option
def command(
    opts: NodesOptions,
    store_preset: str | None,
    latency_ms: float | None,
    bandwidth_mb_s: float | None,
    concurrency: int | None,
    progress: bool,
    as_json: bool,
    root: Path,
) -> None:
    """Exact hits, storage reads and remote traffic per epoch, private vs pooled."""
    from hotset.bench.nodes import run

    store = simulated_store(store_preset, latency_ms, bandwidth_mb_s, concurrency)
    result = run(opts, store=store, progress=progress)
    if not as_json:
        click.echo(store_line(store))
    finish("nodes", result, root, as_json)
