"""``hotset bench ranks``: private vs pooled caches with real ranks on this machine."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.ranks import DEFAULT_STORE, RanksOptions
from hotset.cli.bench import finish, root_option
from hotset.cli.bench_job_store import job_store, job_store_options
from hotset.cli.json_option import json_option
from hotset.cli.store_option import store_line
from hotset.cli.typed_options import options_from


@click.command("ranks")
@options_from(RanksOptions)
@job_store_options(DEFAULT_STORE)
@click.option("--progress/--no-progress", default=True, show_default=True)
@json_option()
@root_option
def command(
    opts: RanksOptions,
    store_preset: str | None,
    latency_ms: float | None,
    bandwidth_mb_s: float | None,
    concurrency: int | None,
    progress: bool,
    as_json: bool,
    root: Path,
) -> None:
    """Exact hits, pool hits and storage reads per epoch, private vs pooled, real ranks."""
    from hotset.bench.ranks import run

    store = job_store(DEFAULT_STORE, store_preset, latency_ms, bandwidth_mb_s, concurrency)
    result = run(opts, store=store, progress=progress)
    if not as_json:
        click.echo(store_line(store))
    finish("ranks", result, root, as_json)
