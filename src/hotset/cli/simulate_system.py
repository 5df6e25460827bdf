"""``hotset simulate --system S --dataset DIR``: live training with the virtual clock.

The command's options become the live simulator's own (:class:`hotset.sim.live.LiveOptions`,
imported only in this mode: it pulls in torch when it runs); the result is printed as
JSON or as an epoch table, and drawn per epoch with ``--plot``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from hotset.cli.simulate_common import cell, echo_records, emit_json, floats
from hotset.cli.simulate_options import SimulateOptions
from hotset.cli.store_option import store_line
from hotset.storage.presets import StoreModel

if TYPE_CHECKING:
    from hotset.sim.live import LiveOptions

_SYSTEM_DEFAULT_EPOCHS = 15

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


def run_system(
    opts: SimulateOptions, *, system: str, options: dict[str, Any], store: StoreModel
) -> None:
    """Train ``system`` (its ``options`` resolved from the spec and ``--option``) live,
    behind the modeled ``store``; print the result."""
    from hotset.sim.live import run_live

    result = run_live(
        _live_options(opts, system=system, options=options, store=store),
        progress=opts.progress,
    )
    result["store"] = store.as_dict()
    text = json.dumps(result)
    if opts.plot is not None:
        from hotset.sim.plot import plot_epochs

        plot_epochs(result, opts.plot)
        click.echo(f"wrote {opts.plot}", err=True)
    if emit_json(text, out=opts.out, as_json=opts.as_json):
        return
    _print_live(result, verbose=opts.verbose)
    click.echo(store_line(store))
    if result["config"].get("auto"):
        click.echo(f"system {result['config']['auto']}")


def _live_options(
    opts: SimulateOptions, *, system: str, options: dict[str, Any], store: StoreModel
) -> LiveOptions:
    """The live simulator's options from the command's: what this mode refuses (a policy,
    a cache in items, several fractions) is a usage error naming the option."""
    if opts.dataset is None:
        raise click.UsageError("--system needs --dataset DIR")
    if opts.policy is not None or opts.cache_items is not None:
        raise click.UsageError("--system takes --cache-frac; its policy comes with the system")
    if opts.cache_frac is None:
        raise click.UsageError("--system needs --cache-frac F")
    fracs = floats(opts.cache_frac, "--cache-frac") or []
    if len(fracs) != 1:
        raise click.UsageError("--system takes a single --cache-frac value")
    from hotset.sim.live import LiveOptions

    return LiveOptions(
        system=system,
        dataset=str(opts.dataset),
        cache_frac=fracs[0],
        epochs=_SYSTEM_DEFAULT_EPOCHS if opts.epochs is None else opts.epochs,
        seed=opts.seed,
        model=opts.model,
        batch_size=opts.batch_size,
        lr=opts.lr,
        val_frac=opts.val_frac,
        **store.link(),
        compute_ms_per_batch=opts.compute_ms_per_batch,
        options=options,
    )


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
