"""``hotset bench traingrid``: systems against a reference over cache x chunk size."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.train_grid import TrainGridOptions
from hotset.cli.bench import finish, name_option, root_option
from hotset.cli.json_option import json_option
from hotset.cli.store_option import simulated_store, simulated_store_options, store_line
from hotset.cli.typed_options import options_from


@click.command("traingrid")
@options_from(TrainGridOptions)
@simulated_store_options
@name_option("traingrid")
@json_option()
@root_option
def command(
    opts: TrainGridOptions,
    store_preset: str | None,
    latency_ms: float | None,
    bandwidth_mb_s: float | None,
    concurrency: int | None,
    name: str,
    as_json: bool,
    root: Path,
) -> None:
    """Per cell of cache x chunk size: each system's epoch time, time to the pytorch
    baseline's accuracy and bytes read over bytes trained, beside the first system's
    (simulated; mean over seeds)."""
    from hotset.bench.train_grid import run

    store = simulated_store(store_preset, latency_ms, bandwidth_mb_s, concurrency)
    result = run(opts, store=store)
    if not as_json:
        click.echo(store_line(store))
    finish(name, result, root, as_json)
