"""``hotset simulate``: replay a trace, a sampler's orders, or train a system live.

Three modes, exactly one per call, each in its own module and handed the command's
one options object (:class:`~hotset.cli.simulate_options.SimulateOptions`, from which
the options are generated):

* ``--trace FILE``: replay a recorded trace (the contract in DESIGN.md);
* ``--sampler random --n N --epochs E``: generate each epoch's seeded order and
  replay it, with the policy's epoch hooks in between
  (both: :mod:`hotset.cli.simulate_replay`);
* ``--system S --dataset DIR``: live training with the virtual clock
  (:mod:`hotset.cli.simulate_system`, :func:`hotset.sim.live.run_live`);
  with ``--nodes K``, the node model instead (:mod:`hotset.cli.simulate_nodes`).

``--policy`` and ``--cache-frac``/``--cache-items`` take comma lists; more than
one value makes a sweep (a JSON list with ``--json``, a plot with ``--plot``).
"""

from __future__ import annotations

import dataclasses

import click

from hotset.cli.json_option import json_option
from hotset.cli.simulate_common import cell, echo_rows, emit_json, system_and_options
from hotset.cli.simulate_options import SimulateOptions
from hotset.cli.simulate_replay import run_replay
from hotset.cli.simulate_system import LIVE_COLUMNS, LIVE_TOTALS, run_system
from hotset.cli.store_option import simulated_store, store_option
from hotset.cli.typed_options import options_from

# the helpers moved to simulate_common and the modes' modules; these names stay
# importable from here
__all__ = ["LIVE_COLUMNS", "LIVE_TOTALS", "cell", "echo_rows", "emit_json", "simulate"]


@click.command(name="simulate")
@options_from(SimulateOptions)
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="Every column: capacities and per-epoch counts (replay), every counter (--system).",
)
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
@click.option("--option", "option_pairs", multiple=True, help="System option KEY=VALUE.")
@json_option("Print JSON instead of a table.")
def simulate(
    opts: SimulateOptions,
    verbose: bool,
    store_preset: str | None,
    latency_ms: float | None,
    bandwidth_mb_s: float | None,
    concurrency: int | None,
    option_pairs: tuple[str, ...],
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
    opts = dataclasses.replace(
        opts, verbose=verbose, option_pairs=tuple(option_pairs), as_json=as_json
    )
    _check_mode(opts, store_preset=store_preset)
    if opts.system is None:
        if opts.sample_bytes is not None:
            raise click.UsageError("--sample-bytes goes with --nodes")
        run_replay(opts)
        return
    store = simulated_store(store_preset, latency_ms, bandwidth_mb_s, concurrency)
    system, options = system_and_options(opts.system, opts.option_pairs)  # NAME[opt=v] + --option
    if opts.nodes is not None:
        from hotset.cli.simulate_nodes import run_nodes_from_options

        run_nodes_from_options(opts, system=system, options=options, store=store)
        return
    if opts.sample_bytes is not None:
        raise click.UsageError("--sample-bytes goes with --nodes")
    run_system(opts, system=system, options=options, store=store)


def _check_mode(opts: SimulateOptions, *, store_preset: str | None) -> None:
    """Exactly one of ``--trace``, ``--sampler`` and ``--system``, and no option of the
    live modes (``--nodes``, ``--store``) without ``--system``: usage errors, before any
    work."""
    if opts.nodes is not None and opts.system is None:
        raise click.UsageError("--nodes goes with --system")
    given = (("--trace", opts.trace_path), ("--sampler", opts.sampler), ("--system", opts.system))
    modes = [m for m, v in given if v]
    if len(modes) != 1:
        raise click.UsageError(
            "give exactly one of --trace, --sampler or --system"
            + (f" (got {', '.join(modes)})" if modes else "")
        )
    if store_preset is not None and opts.system is None:
        raise click.UsageError("--store goes with --system (replay counts hits, not seconds)")
