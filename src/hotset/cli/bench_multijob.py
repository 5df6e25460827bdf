"""``hotset bench multijob``: independent jobs on one data set, private vs shared cache."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.multijob import DEFAULT_STORE, MultijobOptions
from hotset.cli.bench import finish, name_option, root_option
from hotset.cli.bench_job_store import job_store, job_store_options
from hotset.cli.json_option import json_option
from hotset.cli.store_option import store_line
from hotset.cli.typed_options import options_from


@click.command("multijob")
@options_from(MultijobOptions)
@job_store_options(DEFAULT_STORE)
@click.option("--progress/--no-progress", default=True, show_default=True)
@name_option("multijob")
@json_option()
@root_option
def command(
    opts: MultijobOptions,
    store_preset: str | None,
    latency_ms: float | None,
    bandwidth_mb_s: float | None,
    concurrency: int | None,
    progress: bool,
    name: str,
    as_json: bool,
    root: Path,
) -> None:
    """Storage reads per epoch across K jobs, private caches vs one shared namespace,
    jobs started together and staggered."""
    from hotset.bench.multijob import run

    store = job_store(DEFAULT_STORE, store_preset, latency_ms, bandwidth_mb_s, concurrency)
    result = run(opts, store=store, progress=progress)
    if not as_json:
        click.echo(store_line(store))
    finish(name, result, root, as_json)
