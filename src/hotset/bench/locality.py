"""``hotset bench locality``: how chunk-local the orders of brand, quiver and a uniform order are.

Systems that read whole chunks serve a chunk's members close together and may
repeat an epoch's order in the next (issue #30, issue #27). This suite measures
it on real packed data sets: ``n`` synthetic 32x32 images of 10 classes
(``hotset data synth``), packed twice --

* ``shuffled``: ``hotset data pack`` with its default seeded shuffle, the layout
  every other benchmark runs on;
* ``label-sorted``: the same images with ids sorted by label (an ImageFolder tree
  imported class by class), packed with ``--no-shuffle``: chunks of one class each,
  the layout the loader and ``hotset data pack`` warn about.

For each layout, chunk size and cache share, each system's delivered order over
``epochs`` epochs (:func:`hotset.sim.delivered.delivered_orders`: the loader's
planner, the order the loader delivers) is measured with
:mod:`hotset.sim.locality`: same-chunk adjacency, chunk-mate spread and the rank
correlation of consecutive epochs, each beside what a uniform permutation gives
(exactly; ``uniform (exact)`` rows), and the same adjacency by label (what a
batch of few classes comes from). ``pytorch`` is hotset without a cache: the
sampler's seeded permutation, measured like the others.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import numpy as np

from hotset import options as typed
from hotset.bench.workloads import DEFAULT_DATA_DIR
from hotset.errors import HotsetError
from hotset.options import cli

DEFAULT_SYSTEMS = ("pytorch", "brand", "quiver")
LAYOUTS = ("shuffled", "label-sorted")
#: the runs averaged per row: not the pack's shuffle seed (0), whose epoch 0 is the pack
#: order itself (see :func:`_notes`); ``--seeds 0`` measures that case
DEFAULT_SEEDS = (1, 2, 3)


def _check(
    *,
    n: int,
    chunk_sizes: Sequence[int],
    cache_fracs: Sequence[float],
    epochs: int,
    seeds: Sequence[int],
) -> None:
    """Named errors for values no run can have."""
    if not seeds or any(seed < 0 for seed in seeds):
        raise HotsetError(f"bench locality: seeds must be integers >= 0, got {list(seeds)}")
    if n < 100:
        raise HotsetError(f"bench locality: --n must be at least 100, got {n}")
    if epochs < 2:
        raise HotsetError(f"bench locality: --epochs must be at least 2 (pairs), got {epochs}")
    if not chunk_sizes or any(c < 2 for c in chunk_sizes):
        raise HotsetError(f"bench locality: chunk sizes must be >= 2, got {list(chunk_sizes)}")
    if not cache_fracs or any(not 0 < f <= 1 for f in cache_fracs):
        raise HotsetError(
            f"bench locality: cache shares must be in (0, 1], got {list(cache_fracs)}"
        )


@dataclass(frozen=True)
class LocalityOptions:
    """What ``bench locality`` measures; the command line is generated from the fields
    (:mod:`hotset.cli.typed_options`), so a run built in Python is checked alike.

    ``systems`` None is the suite's default list (:data:`DEFAULT_SYSTEMS`, see
    :attr:`system_list`); ``data_dir`` is where the two data sets are generated once
    and reused (and re-packed).
    """

    systems: tuple[str, ...] | None = field(
        default=None,
        metadata=cli(
            "Comma list (default: pytorch, brand, quiver).", parse=typed.systems_or(DEFAULT_SYSTEMS)
        ),
    )
    n: int = field(default=2000, metadata=cli(type=click.IntRange(min=100)))
    chunk_sizes: tuple[int, ...] = field(default=(16, 64), metadata=cli(parse=typed.ints))
    cache_fracs: tuple[float, ...] = field(default=(0.1, 0.2), metadata=cli(parse=typed.floats))
    epochs: int = field(default=4, metadata=cli(type=click.IntRange(min=2)))
    seeds: tuple[int, ...] = field(
        default=DEFAULT_SEEDS,
        metadata=cli(
            "Runs averaged per row (0, the pack's shuffle seed, makes epoch 0 the pack order).",
            parse=typed.ints,
        ),
    )
    batch_size: int = field(default=64, metadata=cli(type=click.IntRange(min=1)))
    data_dir: Path = field(
        default=DEFAULT_DATA_DIR,
        metadata=cli(
            "Where the two data sets are generated once and reused (and re-packed).",
            type=click.Path(file_okay=False, path_type=Path),
        ),
    )

    def __post_init__(self) -> None:
        """Named errors for values no run can have, before any work."""
        _check(
            n=self.n,
            chunk_sizes=self.chunk_sizes,
            cache_fracs=self.cache_fracs,
            epochs=self.epochs,
            seeds=self.seeds,
        )

    @property
    def system_list(self) -> tuple[str, ...]:
        """The systems measured: those given, else :data:`DEFAULT_SYSTEMS`."""
        return DEFAULT_SYSTEMS if self.systems is None else self.systems


def run(opts: LocalityOptions = LocalityOptions(), *, progress: bool = True) -> dict[str, Any]:
    """Every layout x chunk size x cache share x system; see the module docstring."""
    n, epochs, seeds, batch_size = opts.n, opts.epochs, opts.seeds, opts.batch_size
    systems, chunk_sizes, cache_fracs = opts.system_list, opts.chunk_sizes, opts.cache_fracs
    table: list[dict[str, Any]] = []
    layouts: list[dict[str, Any]] = []
    for kind in LAYOUTS:
        path = _dataset(opts.data_dir, kind, n, progress=progress)
        for chunk in chunk_sizes:
            if progress:
                print(f"locality bench: {kind}, chunks of {chunk}", file=sys.stderr)
            layout, labels, sizes, about = _packed(path, kind, chunk)
            layouts.append(about)
            base = {"layout": kind, "chunk_size": chunk}
            table.append(
                base | {"cache_frac": None} | _uniform_row(layout.chunk_of, labels, epochs)
            )
            for frac in cache_fracs:
                for system in systems:
                    row = _system_row(
                        system, layout, labels, sizes, frac, epochs, seeds, batch_size
                    )
                    table.append(base | {"cache_frac": frac} | row)
    return {
        "params": {
            "n": n,
            "epochs": epochs,
            "seeds": list(seeds),
            "batch_size": batch_size,
            "systems": list(systems),
            "chunk_sizes": list(chunk_sizes),
            "cache_fracs": list(cache_fracs),
        },
        "layouts": layouts,
        "table": table,
        "notes": _notes(n, epochs, seeds),
    }


def _system_row(
    system: str,
    layout: Any,
    labels: Any,
    sizes: Any,
    frac: float,
    epochs: int,
    seeds: Sequence[int],
    batch_size: int,
) -> dict[str, Any]:
    """One system's locality (means over ``seeds``), and each statistic against uniform."""
    from hotset.sim.delivered import delivered_orders
    from hotset.sim.locality import measure, same_group_adjacency, uniform

    runs = [
        delivered_orders(
            system,
            sizes=sizes,
            cache_frac=frac,
            epochs=epochs,
            layout=layout,
            seed=seed,
            batch_size=batch_size,
        )
        for seed in seeds
    ]
    seen = [measure(orders, layout.chunk_of) for orders in runs]
    want = uniform(layout.chunk_of, epochs=epochs)
    adjacency = _mean([m.adjacency for m in seen])
    spread = _mean([m.spread for m in seen])
    rho = _mean([m.rank_correlation for m in seen])
    label_adj = _mean([same_group_adjacency(o, labels) for orders in runs for o in orders])
    label_want = uniform(labels, epochs=epochs).adjacency
    return {
        "system": system,
        "same_chunk_adjacency": adjacency,
        "adjacency_vs_uniform": _ratio(adjacency, want.adjacency),
        "chunk_spread": spread,
        "spread_vs_uniform": _ratio(spread, want.spread),
        "epoch_rank_corr": rho,
        "epoch_rank_corr_z": _z(rho, len(layout.chunk_of), len(seeds) * (epochs - 1)),
        "same_label_adjacency": label_adj,
        "label_adjacency_vs_uniform": _ratio(label_adj, label_want),
    }


def _mean(values: Sequence[float | None]) -> float | None:
    """The mean of the values that exist (None: none does)."""
    present = [v for v in values if v is not None]
    return float(np.mean(present)) if present else None


def _uniform_row(chunk_of: Any, labels: Any, epochs: int) -> dict[str, Any]:
    """What independent uniform permutations give, exactly (the reference of every ratio)."""
    from hotset.sim.locality import uniform, uniform_rank_correlation_sd

    want = uniform(chunk_of, epochs=epochs)
    return {
        "system": "uniform (exact)",
        "same_chunk_adjacency": want.adjacency,
        "adjacency_vs_uniform": 1.0,
        "chunk_spread": want.spread,
        "spread_vs_uniform": 1.0,
        "epoch_rank_corr": 0.0,
        "epoch_rank_corr_sd": uniform_rank_correlation_sd(len(chunk_of)),
        "same_label_adjacency": uniform(labels, epochs=epochs).adjacency,
        "label_adjacency_vs_uniform": 1.0,
    }


def _ratio(value: float | None, reference: float | None) -> float | None:
    return None if value is None or not reference else value / reference


def _z(rho: float | None, n: int, pairs: int) -> float | None:
    """A mean rho over ``pairs`` consecutive pairs in standard errors of independent
    permutations (consecutive pairs of independent epochs are uncorrelated)."""
    from hotset.sim.locality import uniform_rank_correlation_sd

    if rho is None or pairs < 1:
        return None
    return rho / (uniform_rank_correlation_sd(n) / math.sqrt(pairs))


def _dataset(data_dir: Path, kind: str, n: int, *, progress: bool) -> Path:
    """The synthetic set of ``n`` images, generated once under ``data_dir``; for
    ``label-sorted`` its ids sorted by label (the same files, the manifest's rows sorted)."""
    from hotset.data import Manifest, SynthConfig, make_synth

    path = data_dir / f"locality-{kind}-{n}"
    try:
        manifest = Manifest.load(path) if path.is_dir() else None
    except HotsetError:
        manifest = None
    if manifest is not None and len(manifest) == n and _sorted_as(manifest.labels, kind):
        return path
    made = make_synth(path, SynthConfig(n=n, seed=0), force=True, progress=progress)
    if kind == "label-sorted":
        order = np.argsort(made.labels, kind="stable")
        Manifest(
            np.arange(n),
            [made.keys[i] for i in order.tolist()],
            made.sizes[order],
            made.labels[order],
            [made.hashes[i] for i in order.tolist()],
            made.meta,
        ).save(path)
    return path


def _sorted_as(labels: Any, kind: str) -> bool:
    """Whether reused labels are in the order ``kind`` asks for (sorted, or as generated)."""
    ordered = bool(np.all(np.diff(np.asarray(labels)) >= 0))
    return ordered if kind == "label-sorted" else not ordered


def _packed(path: Path, kind: str, chunk: int) -> tuple[Any, Any, Any, dict[str, Any]]:
    """Pack ``path`` in chunks of ``chunk`` (a seeded shuffle, or id order for
    ``label-sorted``); the layout, labels, sizes and what the layout is."""
    from hotset.data import Manifest
    from hotset.data.chunks import DEFAULT_SHUFFLE_SEED, pack_dataset
    from hotset.data.homogeneity import homogeneity_warning, label_purity

    seed = None if kind == "label-sorted" else DEFAULT_SHUFFLE_SEED
    layout = pack_dataset(path, chunk_size=chunk, shuffle_seed=seed)
    manifest = Manifest.load(path)
    labels = np.asarray(manifest.labels, dtype=np.int64)
    purity = label_purity(layout, labels)
    about = {
        "layout": kind,
        "chunk_size": chunk,
        "command": f"hotset data pack DIR --chunk-size {chunk}"
        + (" --no-shuffle" if seed is None else ""),
        "label_purity": None if purity is None else purity.purity,
        "label_purity_excess": None if purity is None else purity.excess,
        "warned": homogeneity_warning(layout, labels) is not None,
    }
    return layout, labels, np.asarray(manifest.sizes, dtype=np.int64), about


def _notes(n: int, epochs: int, seeds: Sequence[int]) -> list[str]:
    from hotset.data.chunks import DEFAULT_SHUFFLE_SEED

    same = (
        [
            f"Seed {DEFAULT_SHUFFLE_SEED} is also the pack's default shuffle seed, and the "
            "sampler's epoch 0 at seed s is np.random.default_rng(s).permutation(n), the very "
            "permutation `hotset data pack --shuffle-seed s` cuts into chunks: on the "
            "shuffled layout epoch 0 of that seed requests the ids chunk by chunk, for every "
            "system (pytorch's row included)."
        ]
        if DEFAULT_SHUFFLE_SEED in seeds
        else []
    )
    return [
        *same,
        f"Simulated decisions, nothing timed: {n} synthetic images, {epochs} epochs, means "
        f"over seeds {', '.join(map(str, seeds))}; each system's delivered order is the one "
        "its loader delivers (the engine's planner).",
        "adjacency: the share of consecutive samples from one chunk; spread: the mean over "
        "chunks of (last - first position) / (epoch length - 1); epoch_rank_corr: Spearman's "
        "rho of each sample's positions in consecutive epochs, averaged over the pairs "
        "(epoch_rank_corr_z: in standard errors of independent permutations; |z| < 3 is "
        "what independent epochs give).",
        "*_vs_uniform divide by what a uniform permutation gives exactly (the 'uniform "
        "(exact)' row); same_label_adjacency is the adjacency by class.",
        "label-sorted: ids sorted by label, packed with --no-shuffle (chunks of one class; "
        "'warned' in layouts: the loader and hotset data pack warn about it).",
    ]
