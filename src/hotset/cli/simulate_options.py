"""``hotset simulate``'s options, declared once: the command line is generated from them.

One command serves four modes (trace replay, sampler replay, live training, the node
model), each reading a part of these fields; :mod:`hotset.cli.simulate` picks the mode
and hands it this one object. The comma lists (``--policy``, ``--cache-frac``,
``--cache-items``, ``--scope``) stay text here: each mode parses the ones it takes, so
its error names the option as before. The live mode turns its part into the live
simulator's own options (:class:`hotset.sim.live.LiveOptions`); that module is not
imported here, so the CLI loads without numpy's and torch's weight.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import click

from hotset.options import cli

_PATH = click.Path(path_type=Path)


@dataclass(frozen=True)
class SimulateOptions:
    """Every option of ``hotset simulate`` but ``--verbose/-v``, ``--store`` and its link
    options, ``--option`` and ``--json``, which keep their own decorators (a short
    alias, the shared store options, a repeated option) and arrive as the last fields."""

    trace_path: Path | None = field(
        default=None, metadata=cli("Trace file (ids).", type=_PATH, flag="--trace")
    )
    sampler: str | None = field(
        default=None,
        metadata=cli("Generate orders instead.", type=click.Choice(["random"])),
    )
    system: str | None = field(
        default=None,
        metadata=cli("Train this system live: NAME or NAME[option=value,...] (`hotset systems`)."),
    )
    policy: str | None = field(
        default=None, metadata=cli("Cache policy, or a comma list for a sweep.")
    )
    cache_items: str | None = field(
        default=None, metadata=cli("Cache size in items (comma list for a sweep).")
    )
    cache_frac: str | None = field(
        default=None, metadata=cli("Cache size as a fraction of the dataset (comma list).")
    )
    sizes_path: Path | None = field(
        default=None, metadata=cli("Byte size per id.", type=_PATH, flag="--sizes")
    )
    n: int | None = field(default=None, metadata=cli("Dataset size (sampler mode).", type=int))
    epochs: int | None = field(
        default=None, metadata=cli("Epochs (sampler: 1, system: 15 by default).", type=int)
    )
    seed: int = field(default=0, metadata=cli(type=int))
    write_trace: Path | None = field(
        default=None, metadata=cli("Write the sampler's trace.", type=_PATH)
    )
    plot: Path | None = field(
        default=None,
        metadata=cli(
            "PNG: hit ratio vs cache size (sweeps), or per-epoch hits, reads and accuracy "
            "(--system).",
            type=_PATH,
        ),
    )
    dataset: Path | None = field(
        default=None, metadata=cli("Dataset directory (--system).", type=_PATH)
    )
    model: str = field(
        default="auto",
        metadata=cli(type=click.Choice(["auto", "cnn", "mlp", "resnet", "resnet18"])),
    )
    batch_size: int = field(default=128, metadata=cli(type=int))
    lr: float = field(default=0.05, metadata=cli(type=float))
    val_frac: float = field(default=0.1, metadata=cli(type=float))
    compute_ms_per_batch: float = field(
        default=0.0,
        metadata=cli(
            "Modeled compute per step (system mode): storage waits shrink when it hides them.",
            type=float,
        ),
    )
    nodes: int | None = field(
        default=None,
        metadata=cli(
            "Simulate this many data-parallel nodes (--system): private vs pooled caches.",
            type=int,
        ),
    )
    scope: str = field(
        default="private,pooled",
        metadata=cli(
            "With --nodes: private (a cache per node), pooled (one across nodes), or both."
        ),
    )
    sample_bytes: int | None = field(
        default=None, metadata=cli("With --nodes and --n: every sample's size.", type=int)
    )
    net_latency_ms: float = field(default=0.1, metadata=cli(type=float))
    net_gb_s: float = field(default=1.25, metadata=cli("Per node link.", type=float))
    out: Path | None = field(default=None, metadata=cli("Also write the JSON here.", type=_PATH))
    progress: bool = field(default=False, metadata=cli())
    # -- set by the command from its own decorators -------------------------------------
    #: every column (replay), every counter (--system), every field (--nodes)
    verbose: bool = False
    #: the ``--option KEY=VALUE`` flags, joined to the system's own spec
    option_pairs: tuple[str, ...] = ()
    #: print JSON instead of a table
    as_json: bool = False
