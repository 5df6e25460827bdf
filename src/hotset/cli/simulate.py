"""``hotset simulate``: replay a trace, a sampler's orders, or train a system live.

Three modes, exactly one per call:

* ``--trace FILE``: replay a recorded trace (the contract in DESIGN.md);
* ``--sampler random --n N --epochs E``: generate each epoch's seeded order and
  replay it, with the policy's epoch hooks in between;
* ``--system S --dataset DIR``: live training with the virtual clock
  (:func:`hotset.sim.live.run_live`, imported only in this mode).

``--policy`` and ``--cache-frac``/``--cache-items`` take comma lists; more than
one value makes a sweep (a JSON list with ``--json``, a plot with ``--plot``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from hotset.cli.json_option import json_option
from hotset.cli.simulate_common import (
    cell,
    echo_records,
    echo_rows,
    emit_json,
    floats,
    ints,
    split_list,
    system_and_options,
)
from hotset.cli.store_option import simulated_store, store_line, store_option
from hotset.errors import HotsetError
from hotset.storage.presets import StoreModel

# the helpers moved to simulate_common; these names stay importable from here
__all__ = ["cell", "echo_rows", "emit_json", "simulate"]

_SYSTEM_DEFAULT_EPOCHS = 15
_SAMPLER_DEFAULT_EPOCHS = 1

#: the per-epoch columns of the live mode's default table; ``-v`` prints every counter
#: (about 22), ``--json`` the whole result. The keys are documented in docs/report.md.
LIVE_COLUMNS = (
    "epoch",
    "exact_hit_ratio",
    "substitutions",
    "storage_requests",
    "unique_ids_trained",
    "never_trained",
    "val_accuracy",
    "modeled_epoch_seconds",
)
#: the totals the default table ends with
LIVE_TOTALS = (
    "exact_hit_ratio",
    "exact_hit_ratio_after_first",
    "storage_requests",
    "modeled_epoch_seconds",
    "final_val_accuracy",
)


@click.command(name="simulate")
@click.option("--trace", "trace_path", type=click.Path(path_type=Path), help="Trace file (ids).")
@click.option("--sampler", type=click.Choice(["random"]), help="Generate orders instead.")
@click.option(
    "--system", help="Train this system live: NAME or NAME[option=value,...] (`hotset systems`)."
)
@click.option("--policy", help="Cache policy, or a comma list for a sweep.")
@click.option("--cache-items", help="Cache size in items (comma list for a sweep).")
@click.option("--cache-frac", help="Cache size as a fraction of the dataset (comma list).")
@click.option("--sizes", "sizes_path", type=click.Path(path_type=Path), help="Byte size per id.")
@click.option("--n", "n", type=int, help="Dataset size (sampler mode).")
@click.option("--epochs", type=int, help="Epochs (sampler: 1, system: 15 by default).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--write-trace", type=click.Path(path_type=Path), help="Write the sampler's trace.")
@click.option(
    "--plot",
    type=click.Path(path_type=Path),
    help="PNG: hit ratio vs cache size (sweeps), or per-epoch hits, reads and accuracy (--system).",
)
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="Every column: capacities and per-epoch counts (replay), every counter (--system).",
)
@click.option("--dataset", type=click.Path(path_type=Path), help="Dataset directory (--system).")
@click.option(
    "--model",
    type=click.Choice(["auto", "cnn", "mlp", "resnet", "resnet18"]),
    default="auto",
    show_default=True,
)
@click.option("--batch-size", type=int, default=128, show_default=True)
@click.option("--lr", type=float, default=0.05, show_default=True)
@click.option("--val-frac", type=float, default=0.1, show_default=True)
@store_option
@click.option(
    "--latency-ms", type=float, help="Per request [default: the --store preset's, else 2]."
)
@click.option(
    "--bandwidth-mb-s", type=float, help="Link bandwidth [default: the --store preset's, else 100]."
)
@click.option(
    "--concurrency", type=int, help="Requests in flight [default: the --store preset's, else 4]."
)
@click.option(
    "--compute-ms-per-batch",
    type=float,
    default=0.0,
    show_default=True,
    help="Modeled compute per step (system mode): storage waits shrink when it hides them.",
)
@click.option(
    "--nodes",
    type=int,
    help="Simulate this many data-parallel nodes (--system): private vs pooled caches.",
)
@click.option(
    "--scope",
    default="private,pooled",
    show_default=True,
    help="With --nodes: private (a cache per node), pooled (one across nodes), or both.",
)
@click.option("--sample-bytes", type=int, help="With --nodes and --n: every sample's size.")
@click.option("--net-latency-ms", type=float, default=0.1, show_default=True)
@click.option("--net-gb-s", type=float, default=1.25, show_default=True, help="Per node link.")
@click.option("--option", "option_pairs", multiple=True, help="System option KEY=VALUE.")
@click.option("--out", type=click.Path(path_type=Path), help="Also write the JSON here.")
@click.option("--progress/--no-progress", default=False, show_default=True)
@json_option("Print JSON instead of a table.")
def simulate(
    trace_path: Path | None,
    sampler: str | None,
    system: str | None,
    policy: str | None,
    cache_items: str | None,
    cache_frac: str | None,
    sizes_path: Path | None,
    n: int | None,
    epochs: int | None,
    seed: int,
    write_trace: Path | None,
    plot: Path | None,
    verbose: bool,
    dataset: Path | None,
    model: str,
    batch_size: int,
    lr: float,
    val_frac: float,
    store_preset: str | None,
    latency_ms: float | None,
    bandwidth_mb_s: float | None,
    concurrency: int | None,
    compute_ms_per_batch: float,
    nodes: int | None,
    scope: str,
    sample_bytes: int | None,
    net_latency_ms: float,
    net_gb_s: float,
    option_pairs: tuple[str, ...],
    out: Path | None,
    progress: bool,
    as_json: bool,
) -> None:
    """Replay a trace or a sampler's orders through cache policies, or train a system live.

    \b
    hotset simulate --trace t.txt --policy lru --cache-frac 0.2 --json
    hotset simulate --sampler random --n 10000 --epochs 5 --policy lru,minio,belady \\
        --cache-frac 0.1,0.2,0.4 --plot hit.png
    hotset simulate --system shade --dataset data/ --cache-frac 0.2 --epochs 15 --json
    hotset simulate --system shade --nodes 64 --n 1281167 --sample-bytes 110000 \\
        --cache-frac 0.1 --epochs 3
    """
    if nodes is not None and system is None:
        raise click.UsageError("--nodes goes with --system")
    modes = [
        m for m, v in (("--trace", trace_path), ("--sampler", sampler), ("--system", system)) if v
    ]
    if len(modes) != 1:
        raise click.UsageError(
            "give exactly one of --trace, --sampler or --system"
            + (f" (got {', '.join(modes)})" if modes else "")
        )
    if store_preset is not None and system is None:
        raise click.UsageError("--store goes with --system (replay counts hits, not seconds)")
    options: dict[str, Any] = {}
    if system is not None:
        store = simulated_store(store_preset, latency_ms, bandwidth_mb_s, concurrency)
        system, options = system_and_options(system, option_pairs)  # NAME[opt=v] + --option
    if nodes is not None:
        assert system is not None  # checked before the modes
        from hotset.cli.simulate_nodes import run_nodes_from_options

        run_nodes_from_options(
            system=system,
            nodes=nodes,
            scope=scope,
            dataset=dataset,
            sizes_path=sizes_path,
            n=n,
            sample_bytes=sample_bytes,
            cache_frac=cache_frac,
            policy=policy,
            cache_items=cache_items,
            epochs=3 if epochs is None else epochs,
            seed=seed,
            batch_size=batch_size,
            options=options,
            costs={
                "storage_latency_ms": store.latency_ms,
                "storage_mb_s": store.bandwidth_mb_s,
                "storage_concurrency": store.max_concurrency,
                "net_latency_ms": net_latency_ms,
                "net_gb_s": net_gb_s,
                "compute_ms_per_batch": compute_ms_per_batch,
            },
            progress=progress,
            out=out,
            as_json=as_json,
            verbose=verbose,
        )
        return
    if sample_bytes is not None:
        raise click.UsageError("--sample-bytes goes with --nodes")
    if system is not None:
        _run_system(
            system=system,
            dataset=dataset,
            cache_frac=cache_frac,
            cache_items=cache_items,
            policy=policy,
            epochs=_SYSTEM_DEFAULT_EPOCHS if epochs is None else epochs,
            seed=seed,
            model=model,
            batch_size=batch_size,
            lr=lr,
            val_frac=val_frac,
            store=store,
            compute_ms_per_batch=compute_ms_per_batch,
            options=options,
            progress=progress,
            out=out,
            as_json=as_json,
            plot=plot,
            verbose=verbose,
        )
        return
    _run_replay(
        trace_path=trace_path,
        sampler=sampler,
        policy=policy,
        cache_frac=cache_frac,
        cache_items=cache_items,
        sizes_path=sizes_path,
        n=n,
        epochs=epochs,
        seed=seed,
        write_trace=write_trace,
        plot=plot,
        verbose=verbose,
        as_json=as_json,
    )


def _run_replay(
    *,
    trace_path: Path | None,
    sampler: str | None,
    policy: str | None,
    cache_frac: str | None,
    cache_items: str | None,
    sizes_path: Path | None,
    n: int | None,
    epochs: int | None,
    seed: int,
    write_trace: Path | None,
    plot: Path | None,
    verbose: bool,
    as_json: bool,
) -> None:
    """The trace and sampler modes: policies replayed over recorded or generated orders."""
    if policy is None:
        raise click.UsageError("--policy is required with --trace or --sampler")
    policies = split_list(policy, "--policy")
    fracs = floats(cache_frac, "--cache-frac")
    items = ints(cache_items, "--cache-items")
    if (fracs is None) == (items is None):
        raise click.UsageError("give exactly one of --cache-items or --cache-frac")

    from hotset.policies.registry import policy_class
    from hotset.sim.sweep import plot_sweep, sweep, write_sweep_json
    from hotset.sim.trace import load_sizes, load_trace, sampler_epochs, save_trace

    for name in policies:
        policy_class(name)  # unknown names fail before any work
    if trace_path is not None:
        if n is not None:
            raise click.UsageError("--n applies to --sampler mode only")
        if write_trace is not None:
            raise click.UsageError("--write-trace applies to --sampler mode only")
        epoch_orders = [load_trace(trace_path)]
        sizes = None if sizes_path is None else load_sizes(sizes_path)
        planned = False
    else:
        assert sampler is not None
        if n is None:
            raise click.UsageError("--sampler needs --n (the dataset size)")
        if n < 1:
            raise HotsetError(f"--n must be positive, got {n}")
        sizes = None if sizes_path is None else load_sizes(sizes_path, n)
        epoch_orders = sampler_epochs(
            sampler, n=n, epochs=_SAMPLER_DEFAULT_EPOCHS if epochs is None else epochs, seed=seed
        )
        planned = True
        if write_trace is not None:
            import numpy as np

            save_trace(write_trace, np.concatenate(epoch_orders))
    results = sweep(
        epoch_orders,
        policies,
        cache_fracs=fracs,
        cache_items=items,
        sizes=sizes,
        n=n,
        seed=seed,
        planned=planned,
        verbose=verbose,
    )
    if plot is not None:
        plot_sweep(results, plot)
        write_sweep_json(results, plot.with_suffix(".json"))
    if len(results) == 1:
        key = "cache_frac" if fracs is not None else "cache_items"
        single = {k: v for k, v in results[0].items() if k != key}
        if as_json:
            click.echo(json.dumps(single))
        else:
            _print_table(results, key)
    elif as_json:
        click.echo(json.dumps(results))
    else:
        _print_table(results, "cache_frac" if fracs is not None else "cache_items")


def _print_table(results: list[dict[str, Any]], key: str) -> None:
    header = ["policy", key, "requests", "hits", "misses", "hit_ratio", "bytes_read"]
    rows = [
        [
            str(r["policy"]),
            f"{r[key]:g}",
            str(r["requests"]),
            str(r["hits"]),
            str(r["misses"]),
            f"{r['hit_ratio']:.4f}",
            str(r["bytes_read"]),
        ]
        for r in results
    ]
    echo_rows(header, rows)


def _run_system(
    *,
    system: str,
    dataset: Path | None,
    cache_frac: str | None,
    cache_items: str | None,
    policy: str | None,
    epochs: int,
    seed: int,
    model: str,
    batch_size: int,
    lr: float,
    val_frac: float,
    store: StoreModel,
    compute_ms_per_batch: float,
    options: dict[str, Any],
    progress: bool,
    out: Path | None,
    as_json: bool,
    plot: Path | None = None,
    verbose: bool = False,
) -> None:
    """Forward to the live driver; its result is printed as JSON or as an epoch table
    (and drawn per epoch with ``--plot``)."""
    if dataset is None:
        raise click.UsageError("--system needs --dataset DIR")
    if policy is not None or cache_items is not None:
        raise click.UsageError("--system takes --cache-frac; its policy comes with the system")
    if cache_frac is None:
        raise click.UsageError("--system needs --cache-frac F")
    fracs = floats(cache_frac, "--cache-frac") or []
    if len(fracs) != 1:
        raise click.UsageError("--system takes a single --cache-frac value")
    from hotset.sim.live import run_live

    result = run_live(
        system=system,
        dataset=str(dataset),
        cache_frac=fracs[0],
        epochs=epochs,
        seed=seed,
        model=model,
        batch_size=batch_size,
        lr=lr,
        val_frac=val_frac,
        **store.link(),
        compute_ms_per_batch=compute_ms_per_batch,
        options=options,
        progress=progress,
    )
    result["store"] = store.as_dict()
    text = json.dumps(result)
    if plot is not None:
        from hotset.sim.plot import plot_epochs

        plot_epochs(result, plot)
        click.echo(f"wrote {plot}", err=True)
    if emit_json(text, out=out, as_json=as_json):
        return
    _print_live(result, verbose=verbose)
    click.echo(store_line(store))
    if result["config"].get("auto"):
        click.echo(f"system {result['config']['auto']}")


def _print_live(result: dict[str, Any], *, verbose: bool) -> None:
    """The live result as an epoch table and a totals line: the default columns, or every
    counter with ``verbose`` (the keys: docs/report.md)."""
    echo_records(list(result.get("epochs", [])), None if verbose else LIVE_COLUMNS)
    totals = result.get("totals", {})
    shown = totals if verbose else {k: totals[k] for k in LIVE_TOTALS if k in totals}
    if shown:
        click.echo("totals: " + "  ".join(f"{k}={cell(v)}" for k, v in shown.items()))
    if not verbose:
        click.echo("(-v: every counter; --json: the whole result)")
