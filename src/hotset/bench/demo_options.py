"""The demo's options (:class:`DemoOptions`) and defaults, apart from the demo itself.

``hotset demo`` loads these to build its command line; the measurement
(:mod:`hotset.bench.demo`, the matrix it is one cell of) and the checks that name a
system (the system registry, every policy) are loaded only when the demo runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import click

from hotset import options as typed
from hotset.errors import HotsetError
from hotset.options import cli

#: the no-cache loader, the five seed systems, then scout (hotset's own)
DEFAULT_SYSTEMS = ("pytorch", "shade", "icache", "impact", "quiver", "brand", "scout")
DEFAULT_STORE = "cloud-nas"
DEFAULT_WORKLOAD = "imagenet-like"


@dataclass(frozen=True)
class DemoOptions:
    """What the demo measures; the command line is generated from the fields
    (:mod:`hotset.cli.typed_options`), so a run built in Python is checked alike. Where
    it writes (``--out``) and the store (``--store`` and its overrides) are
    :func:`hotset.bench.demo.run`'s; ``batch_size`` and ``seeds`` (the live
    simulator's) are Python-only."""

    workload: str = field(
        default=DEFAULT_WORKLOAD,
        metadata=cli(
            "imagenet-like: 2,000 samples of about 110 kB; synth: --n samples of 2.4 kB.",
            type=click.Choice(["imagenet-like", "synth"]),
        ),
    )
    n: int = field(
        default=2000,
        metadata=cli("Samples of the synth workload.", type=click.IntRange(min=200)),
    )
    systems: tuple[str, ...] = field(
        default=DEFAULT_SYSTEMS,
        metadata=cli(
            "Comma list; NAME[option=value,...] sets a system's options.", parse=typed.systems
        ),
    )
    cache_frac: float = field(default=0.2, metadata=cli(type=float))
    repeats: int = field(default=3, metadata=cli(type=click.IntRange(min=1)))
    epochs: int = field(default=3, metadata=cli(type=click.IntRange(min=2)))
    step_ms: float = field(
        default=20.0,
        metadata=cli(
            "The accelerator's step per batch of 64, modeled as a fixed wait.",
            type=click.FloatRange(min=0),
        ),
    )
    workers: int = field(default=4, metadata=cli(type=click.IntRange(min=0)))
    sim_epochs: int = field(default=8, metadata=cli(type=click.IntRange(min=1)))
    batch_size: int = 64
    seeds: tuple[int, ...] = (0,)

    def __post_init__(self) -> None:
        from hotset.systems.registry import parse_system

        if not 0 < self.cache_frac <= 1:
            raise HotsetError(f"--cache-frac must be in (0, 1], got {self.cache_frac}")
        if self.repeats < 1 or self.epochs < 2:
            raise HotsetError(
                f"--repeats must be >= 1 and --epochs >= 2, got {self.repeats}, {self.epochs}"
            )
        for system in self.systems:
            parse_system(system)
