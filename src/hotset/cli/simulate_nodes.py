"""``hotset simulate --system S --nodes K``: many nodes, private or pooled caches (simulated).

The sizes come from ``--dataset DIR`` (its manifest, and its chunk layout for a
system that reads chunks), a ``--sizes`` file, or ``--n`` samples of
``--sample-bytes`` each (``--n 1281167 --sample-bytes 110000`` is about
ImageNet-1k), so the question "64 nodes, 10% cache each" needs no data on disk.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import numpy as np

from hotset.cli.simulate_common import echo_records, emit_json, floats, split_list
from hotset.cli.simulate_options import SimulateOptions
from hotset.errors import HotsetError
from hotset.storage.presets import StoreModel

#: epochs when ``--epochs`` is not given: the first fills the caches, the later ones reuse
_NODES_DEFAULT_EPOCHS = 3

#: the per-epoch columns of the default table (``-v`` prints every field of an epoch,
#: ``--json`` the whole result)
COLUMNS = (
    "scope",
    "epoch",
    "exact_hit_ratio",
    "remote_hit_share",
    "storage_requests",
    "remote_bytes",
    "unique_ids_trained",
    "modeled_epoch_seconds",
)


def run_nodes_from_options(
    opts: SimulateOptions, *, system: str, options: dict[str, Any], store: StoreModel
) -> None:
    """Check what only the node model takes (from ``hotset simulate``'s options), then
    run ``system`` (its ``options`` resolved) behind the modeled ``store``."""
    if opts.policy is not None or opts.cache_items is not None:
        raise click.UsageError("--nodes takes --cache-frac; its policy comes with the system")
    fracs = floats(opts.cache_frac, "--cache-frac") or []
    if len(fracs) != 1:
        raise click.UsageError("--nodes needs a single --cache-frac value (per node)")
    sizes, layout = node_sizes(
        dataset=opts.dataset, sizes_path=opts.sizes_path, n=opts.n, sample_bytes=opts.sample_bytes
    )
    assert opts.nodes is not None  # the command picked this mode by it
    run_nodes_cli(
        opts,
        system=system,
        options=options,
        scopes=split_list(opts.scope, "--scope"),
        sizes=sizes,
        layout=layout,
        cache_frac=fracs[0],
        costs=_costs(opts, store),
    )


def _costs(opts: SimulateOptions, store: StoreModel) -> dict[str, Any]:
    """The node model's costs (:class:`hotset.sim.nodes.Costs`' fields): the store's
    link, the network's and the modeled compute."""
    return {
        "storage_latency_ms": store.latency_ms,
        "storage_mb_s": store.bandwidth_mb_s,
        "storage_concurrency": store.max_concurrency,
        "net_latency_ms": opts.net_latency_ms,
        "net_gb_s": opts.net_gb_s,
        "compute_ms_per_batch": opts.compute_ms_per_batch,
    }


def node_sizes(
    *, dataset: Path | None, sizes_path: Path | None, n: int | None, sample_bytes: int | None
) -> tuple[Any, Any]:
    """(sizes, layout) from exactly one of the three ways to give them."""
    given = [
        name
        for name, value in (
            ("--dataset", dataset),
            ("--sizes", sizes_path),
            ("--n/--sample-bytes", n if n is not None else sample_bytes),
        )
        if value is not None
    ]
    if len(given) != 1:
        raise click.UsageError(
            "--nodes needs the sizes from exactly one of --dataset DIR, --sizes FILE or "
            "--n N --sample-bytes B" + (f" (got {', '.join(given)})" if given else "")
        )
    if dataset is not None:
        from hotset.data.chunks import load_layout
        from hotset.data.manifest import Manifest

        manifest = Manifest.load(dataset)
        return np.asarray(manifest.sizes, dtype=np.int64), load_layout(dataset, manifest=manifest)
    if sizes_path is not None:
        from hotset.sim.trace import load_sizes

        return load_sizes(sizes_path), None
    if n is None or sample_bytes is None:
        raise click.UsageError("--n and --sample-bytes go together")
    if n < 1 or sample_bytes < 1:
        raise HotsetError(f"--n and --sample-bytes must be positive, got {n} and {sample_bytes}")
    return np.full(n, sample_bytes, dtype=np.int64), None


def run_nodes_cli(
    opts: SimulateOptions,
    *,
    system: str,
    options: dict[str, Any],
    scopes: list[str],
    sizes: Any,
    layout: Any,
    cache_frac: float,
    costs: dict[str, Any],
) -> None:
    """One result per scope; a table of their epochs (the default columns, or every
    field with ``--verbose``), or the JSON list."""
    from hotset.sim.nodes import Costs, run_nodes

    assert opts.nodes is not None
    cost_model = Costs(**costs)
    results = [
        run_nodes(
            system,
            nodes=opts.nodes,
            scope=scope,
            sizes=sizes,
            cache_frac=cache_frac,
            epochs=_NODES_DEFAULT_EPOCHS if opts.epochs is None else opts.epochs,
            seed=opts.seed,
            batch_size=opts.batch_size,
            options=options,
            costs=cost_model,
            layout=layout,
            progress=opts.progress,
        )
        for scope in scopes
    ]
    if emit_json(json.dumps(results), out=opts.out, as_json=opts.as_json):
        return
    click.echo(
        f"{system} on {opts.nodes} node(s), a cache of {cache_frac:g} of the "
        f"{int(np.sum(sizes)):,} data set bytes per node (simulated; see 'model' in --json "
        "for what it leaves out)"
    )
    records = [{"scope": result["scope"], **row} for result in results for row in result["epochs"]]
    echo_records(records, None if opts.verbose else COLUMNS)
