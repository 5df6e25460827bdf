"""``hotset bench brand``: Brand vs PyTorch and no-I/O in the real loader, and a chunk sweep."""

from __future__ import annotations

from pathlib import Path

import click

from hotset.bench.brand import BrandOptions
from hotset.cli.bench import finish, root_option
from hotset.cli.json_option import json_option
from hotset.cli.store_option import store_line, store_option
from hotset.cli.typed_options import options_from


@click.command("brand")
@store_option
@click.option(
    "--latency-ms",
    "latencies",
    default=None,
    help="Comma list [default: the --store preset's, else 2,10].",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=None,
    help="Requests in flight, job-wide [default: the --store preset's, else 4].",
)
@click.option(
    "--bandwidth-mb-s",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="One shared link [default: the --store preset's, else unlimited].",
)
@options_from(BrandOptions)
@click.option("--progress/--no-progress", default=True, show_default=True)
@json_option()
@root_option
def command(
    store_preset: str | None,
    latencies: str | None,
    concurrency: int | None,
    bandwidth_mb_s: float | None,
    opts: BrandOptions,
    progress: bool,
    as_json: bool,
    root: Path,
) -> None:
    """Samples/s vs torch and no-I/O, hits, substitutions and wasted reads, measured."""
    from hotset.bench.brand import run
    from hotset.bench.workloads import parse_floats
    from hotset.cli.bench_store import bench_stores

    # one model per latency; every latency shares the bandwidth and concurrency
    stores = bench_stores(
        store_preset,
        latencies=None if latencies is None else parse_floats(latencies, option="--latency-ms"),
        default_latencies=(2.0, 10.0),
        bandwidth_mb_s=bandwidth_mb_s,
        concurrency=concurrency,
    )
    result = run(opts, stores=stores, progress=progress)
    result["store"] = [s.as_dict() for s in stores]
    if not as_json:
        click.echo(store_line(stores))
    finish("brand", result, root, as_json)
