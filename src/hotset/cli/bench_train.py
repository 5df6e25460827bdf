"""``hotset bench train``: accuracy and time-to-accuracy per system, over seeds."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.train import TrainOptions
from hotset.cli.bench import finish, name_option, root_option
from hotset.cli.json_option import json_option
from hotset.cli.store_option import simulated_store, simulated_store_options, store_line
from hotset.cli.typed_options import options_from


@click.command("train")
@options_from(TrainOptions)
@simulated_store_options
@name_option("train")
@json_option()
@root_option
def command(
    opts: TrainOptions,
    store_preset: str | None,
    latency_ms: float | None,
    bandwidth_mb_s: float | None,
    concurrency: int | None,
    name: str,
    as_json: bool,
    root: Path,
) -> None:
    """Time to the pytorch baseline's accuracy, and final accuracy (mean ± std over seeds)."""
    from hotset.bench.train import run

    store = simulated_store(store_preset, latency_ms, bandwidth_mb_s, concurrency)
    result = run(opts, store=store)
    if not as_json:
        click.echo(store_line(store))
    finish(name, result, root, as_json)
