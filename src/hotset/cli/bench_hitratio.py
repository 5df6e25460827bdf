"""``hotset bench hitratio``: every system × cache size, with Belady's bound."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.hitratio import HitratioOptions
from hotset.cli.bench import finish, name_option, root_option
from hotset.cli.json_option import json_option
from hotset.cli.store_option import simulated_store, simulated_store_options, store_line
from hotset.cli.typed_options import options_from


@click.command("hitratio")
@options_from(HitratioOptions)
@simulated_store_options
@name_option("hitratio")
@json_option()
@root_option
def command(
    opts: HitratioOptions,
    store_preset: str | None,
    latency_ms: float | None,
    bandwidth_mb_s: float | None,
    concurrency: int | None,
    name: str,
    as_json: bool,
    root: Path,
) -> None:
    """Exact hits, substitutions and storage reads per system and cache size."""
    from hotset.bench.hitratio import run

    store = simulated_store(store_preset, latency_ms, bandwidth_mb_s, concurrency)
    figure = root / "benchmarks" / "results" / f"{name}.png"
    figure.parent.mkdir(parents=True, exist_ok=True)
    result = run(opts, figure=figure, store=store)
    if not as_json:
        click.echo(store_line(store))
    finish(name, result, root, as_json)
