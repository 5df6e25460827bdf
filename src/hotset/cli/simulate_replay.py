"""``hotset simulate --trace FILE`` and ``--sampler random``: policies replayed over orders.

The trace mode replays a recorded trace (the contract in DESIGN.md); the sampler mode
generates each epoch's seeded order and replays it, with the policy's epoch hooks in
between. ``--policy`` and ``--cache-frac``/``--cache-items`` take comma lists; more
than one value makes a sweep (a JSON list with ``--json``, a plot with ``--plot``).
"""

from __future__ import annotations

import json
from typing import Any

import click

from hotset.cli.simulate_common import echo_rows, floats, ints, split_list
from hotset.cli.simulate_options import SimulateOptions
from hotset.errors import HotsetError

_SAMPLER_DEFAULT_EPOCHS = 1


def run_replay(opts: SimulateOptions) -> None:
    """The trace and sampler modes: policies replayed over recorded or generated orders."""
    if opts.policy is None:
        raise click.UsageError("--policy is required with --trace or --sampler")
    policies = split_list(opts.policy, "--policy")
    fracs = floats(opts.cache_frac, "--cache-frac")
    items = ints(opts.cache_items, "--cache-items")
    if (fracs is None) == (items is None):
        raise click.UsageError("give exactly one of --cache-items or --cache-frac")

    from hotset.policies.registry import policy_class
    from hotset.sim.sweep import plot_sweep, sweep, write_sweep_json

    for name in policies:
        policy_class(name)  # unknown names fail before any work
    epoch_orders, sizes, planned = _orders(opts)
    results = sweep(
        epoch_orders,
        policies,
        cache_fracs=fracs,
        cache_items=items,
        sizes=sizes,
        n=opts.n,
        seed=opts.seed,
        planned=planned,
        verbose=opts.verbose,
    )
    if opts.plot is not None:
        plot_sweep(results, opts.plot)
        write_sweep_json(results, opts.plot.with_suffix(".json"))
    key = "cache_frac" if fracs is not None else "cache_items"
    if len(results) == 1:
        single = {k: v for k, v in results[0].items() if k != key}
        if opts.as_json:
            click.echo(json.dumps(single))
        else:
            _print_table(results, key)
    elif opts.as_json:
        click.echo(json.dumps(results))
    else:
        _print_table(results, key)


def _orders(opts: SimulateOptions) -> tuple[list[Any], Any, bool]:
    """(each epoch's order, the sizes or None, whether the orders are known in advance):
    the recorded trace, or the sampler's seeded orders (written out with
    ``--write-trace``)."""
    from hotset.sim.trace import load_sizes, load_trace, sampler_epochs, save_trace

    if opts.trace_path is not None:
        if opts.n is not None:
            raise click.UsageError("--n applies to --sampler mode only")
        if opts.write_trace is not None:
            raise click.UsageError("--write-trace applies to --sampler mode only")
        trace = load_trace(opts.trace_path)
        return [trace], None if opts.sizes_path is None else load_sizes(opts.sizes_path), False
    assert opts.sampler is not None
    if opts.n is None:
        raise click.UsageError("--sampler needs --n (the dataset size)")
    if opts.n < 1:
        raise HotsetError(f"--n must be positive, got {opts.n}")
    sizes = None if opts.sizes_path is None else load_sizes(opts.sizes_path, opts.n)
    epochs = _SAMPLER_DEFAULT_EPOCHS if opts.epochs is None else opts.epochs
    epoch_orders = sampler_epochs(opts.sampler, n=opts.n, epochs=epochs, seed=opts.seed)
    if opts.write_trace is not None:
        import numpy as np

        save_trace(opts.write_trace, np.concatenate(epoch_orders))
    return epoch_orders, sizes, True


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
