"""``hotset bench <suite>``: measured figures, written under ROOT/benchmarks/results/."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import click

from hotset.bench.loader_options import LoaderBenchOptions
from hotset.bench.sim_options import SimBenchOptions
from hotset.bench.store_options import StoreBenchOptions
from hotset.cli.json_option import json_option
from hotset.cli.store_option import store_line, store_option
from hotset.cli.typed_options import options_from
from hotset.errors import HotsetError
from hotset.storage.presets import StoreModel

# suites that live in their own CLI module: name -> module exposing ``command``
_SUITE_MODULES: dict[str, str] = {
    "hitratio": "hotset.cli.bench_hitratio",
    "train": "hotset.cli.bench_train",
    "traingrid": "hotset.cli.bench_train_grid",
    "overhead": "hotset.cli.bench_overhead",
    "faults": "hotset.cli.bench_faults",
    "brand": "hotset.cli.bench_brand",
    "nodes": "hotset.cli.bench_nodes",
    "ranks": "hotset.cli.bench_ranks",
    "multijob": "hotset.cli.bench_multijob",
    "matrix": "hotset.cli.bench_matrix",
    "which": "hotset.cli.bench_which",
    "locality": "hotset.cli.bench_locality",
    "icachejobs": "hotset.cli.bench_icache_jobs",
    "placement": "hotset.cli.bench_quiverloop",
    "pipeline": "hotset.cli.bench_pipeline",
}

#: commands of the group that read committed results instead of measuring (no suite)
READERS = ("which",)


class _BenchGroup(click.Group):
    """Suites defined here plus suites imported from their own module on demand."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(_SUITE_MODULES))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in _SUITE_MODULES:
            command = importlib.import_module(_SUITE_MODULES[cmd_name]).command
            assert isinstance(command, click.Command)
            return command
        return super().get_command(ctx, cmd_name)


@click.group(cls=_BenchGroup)
def bench() -> None:
    """Run a benchmark suite; results go to ROOT/benchmarks/results/<suite>.json.

    ROOT is --root, else $XDG_DATA_HOME/hotset (~/.local/share/hotset), wherever the run
    starts; --record writes the committed record of the hotset checkout holding the
    current directory instead. Each run prints the path it wrote.
    """


def finish(suite: str, result: dict[str, Any], root: Path, as_json: bool) -> None:
    """Write the result file, then print the whole result as JSON (``--json``) or an
    aligned table of the suite's main columns.

    ``suite`` is the result's name (``--name`` may have changed it); the columns
    follow the command that ran, so ``--name loader-quiver`` still prints loader's.
    """
    from hotset.bench.results import write_result
    from hotset.cli.bench_table import table_lines

    path = write_result(suite, result, root=root)
    if as_json:
        click.echo(json.dumps(result))
        click.echo(f"wrote {path}", err=True)  # the JSON stays alone on stdout
        return
    ctx = click.get_current_context(silent=True)
    command = ctx.command.name if ctx is not None and ctx.command.name else suite
    for line in table_lines(command, result.get("table", [])):
        click.echo(line)
    readme = path.parent.parent / "README.md"
    click.echo(f"wrote {path} (every column: --json, or {readme})")


def _check_name(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    if not value or not value.replace("-", "").replace("_", "").isalnum():
        raise click.BadParameter(f"letters, digits, '-' and '_' only, got {value!r}")
    return value


def name_option(suite: str) -> Any:
    """``--name``: the result's file name, so a run of some systems sits next to the default."""
    return click.option(
        "--name",
        default=suite,
        show_default=True,
        callback=_check_name,
        help="Result name: benchmarks/results/<name>.json (and .png where the suite draws one).",
    )


def _note_record(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    ctx.meta["hotset.record"] = value  # eager: seen before --root resolves
    return value


def _resolve_root(ctx: click.Context, _param: click.Parameter, value: Path | None) -> Path:
    """``--root`` as given, ``--record``'s checkout, else the user data directory (never
    the current directory, nor the committed record unless asked)."""
    from hotset.bench.results import default_root, record_root

    record = bool(ctx.meta.get("hotset.record"))
    if record and value is not None:
        raise click.BadParameter("give --root or --record, not both", param_hint="--root")
    if value is not None:
        return value
    try:
        return record_root() if record else default_root()
    except HotsetError as exc:
        raise click.UsageError(str(exc)) from None


def root_option(command: Any) -> Any:
    """``--root DIR`` and ``--record``: where ROOT/benchmarks/results/<name>.json goes."""
    command = click.option(
        "--root",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        callback=_resolve_root,
        help="Directory under which benchmarks/results/<name>.json is written "
        "[default: $XDG_DATA_HOME/hotset, or ~/.local/share/hotset, wherever the run starts; "
        "never the repository's committed results unless --record].",
    )(command)
    return click.option(
        "--record",
        is_flag=True,
        is_eager=True,
        expose_value=False,
        callback=_note_record,
        help="Update the committed record: write into the hotset source checkout holding "
        "the current directory (its benchmarks/results and benchmarks/README.md).",
    )(command)


@bench.command("sim")
@options_from(SimBenchOptions)
@json_option()
@root_option
def sim(opts: SimBenchOptions, as_json: bool, root: Path) -> None:
    """Policy replay speed: accesses per second per policy (one core)."""
    from hotset.bench.sim import run

    finish("sim", run(opts), root, as_json)


@bench.command("store")
@options_from(StoreBenchOptions)
@json_option()
@root_option
def store(opts: StoreBenchOptions, as_json: bool, root: Path) -> None:
    """ThrottledStore: real-clock seconds against virtual-clock modeled seconds, and a
    chunk of samples read in one request against one request per sample."""
    from hotset.bench.store import run

    finish("store", run(opts), root, as_json)


@bench.command("loader")
@store_option
@click.option(
    "--latency-ms",
    "latencies",
    default=None,
    help="Per-request latency; a comma list runs one table per value "
    "[default: the --store preset's, else 0.5,2,10].",
)
@click.option(
    "--concurrency",
    type=int,
    default=None,
    help="Requests in flight, job-wide [default: the --store preset's, else 4].",
)
@click.option(
    "--bandwidth-mb-s",
    type=float,
    default=None,
    help="One link shared by all requests [default: the --store preset's, else unlimited].",
)
@options_from(LoaderBenchOptions)
@name_option("loader")
@json_option()
@root_option
def loader(
    store_preset: str | None,
    latencies: str | None,
    concurrency: int | None,
    bandwidth_mb_s: float | None,
    opts: LoaderBenchOptions,
    name: str,
    as_json: bool,
    root: Path,
) -> None:
    """Real-clock throughput and stall: torch DataLoader, hotset systems, no-I/O.

    Over a modeled store by default; over a real S3 server with an s3:// --dataset or
    --s3-server (requests and bytes per epoch, hotset's count beside the server's).
    """
    from hotset.bench.loader import run_tables
    from hotset.data.opener import is_url

    over_s3 = opts.s3_server or (opts.dataset is not None and is_url(opts.dataset))
    if over_s3 or opts.server_metrics is not None:
        modeled = {
            "--store": store_preset,
            "--latency-ms": latencies,
            "--bandwidth-mb-s": bandwidth_mb_s,
        }
        result = _loader_s3(opts, modeled, concurrency=concurrency)
        finish(name, result, root, as_json)
        return
    stores = _loader_stores(store_preset, latencies, concurrency, bandwidth_mb_s)
    result = run_tables(opts, stores, log=lambda message: click.echo(message, err=True))
    if not as_json:
        click.echo(store_line(stores))
    finish(name, result, root, as_json)


def _loader_stores(
    store_preset: str | None,
    latencies: str | None,
    concurrency: int | None,
    bandwidth_mb_s: float | None,
) -> list[StoreModel]:
    """``bench loader``'s store models, one per latency (``--latency-ms`` a comma list)."""
    from hotset.bench.workloads import parse_floats
    from hotset.cli.bench_store import bench_stores

    values = None if latencies is None else parse_floats(latencies, option="--latency-ms")
    if values and min(values) < 0:
        raise HotsetError(f"--latency-ms: expected non-negative numbers, got {latencies!r}")
    return bench_stores(
        store_preset,
        latencies=values,
        default_latencies=(0.5, 2.0, 10.0),
        bandwidth_mb_s=bandwidth_mb_s,
        concurrency=concurrency,
    )


def _loader_s3(
    opts: LoaderBenchOptions, modeled: dict[str, Any], *, concurrency: int | None
) -> dict[str, Any]:
    """``bench loader`` over a real S3 server (:mod:`hotset.bench.loader_s3`): nothing is
    modeled, so a store figure given is refused; ``concurrency`` (4 when not given) is
    the loader's requests in flight."""
    from hotset.bench.loader import median_of_runs, with_rates
    from hotset.bench.loader_s3 import run_local_s3, run_s3
    from hotset.data.opener import is_url

    dataset, server_metrics, s3_server = opts.dataset, opts.server_metrics, opts.s3_server
    given = [flag for flag, value in modeled.items() if value is not None]
    if given:
        raise HotsetError(f"{given[0]} models a store; a real S3 server is measured as it is")
    if s3_server and (dataset is not None or server_metrics is not None):
        raise HotsetError(
            "--s3-server starts its own server: give no --dataset nor --server-metrics"
        )
    if not s3_server and (dataset is None or not is_url(dataset)):
        raise HotsetError(
            "--server-metrics counts an S3 server's requests: give an s3:// --dataset"
        )
    rows: dict[str, Any] = {
        "concurrency": 4 if concurrency is None else concurrency,
        "workers": opts.workers,
        "batch_size": opts.batch_size,
        "compute_ms": opts.compute_ms,
        "cache_frac": opts.cache_frac,
        "epochs": opts.epochs,
        "systems": opts.systems,
    }
    runs = []
    for rep in range(opts.repeats):
        click.echo(f"loader benchmark over S3 (run {rep + 1} of {opts.repeats}) ...", err=True)
        if s3_server:
            one = run_local_s3(n=opts.n, sizes=opts.sizes, image_size=opts.image_size,
                               chunk_size=opts.chunk_size, seed=opts.seed, **rows)  # fmt: skip
        else:
            assert dataset is not None
            one = run_s3(dataset, server_metrics=server_metrics, seed=opts.seed, **rows)
        runs.append(one)
    table = median_of_runs([with_rates(run["table"]) for run in runs])
    return {"table": table, "notes": runs[0]["notes"], "runs": runs, "params": runs[0]["params"]}
