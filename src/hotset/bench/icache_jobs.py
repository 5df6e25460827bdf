"""``hotset bench icachejobs``: iCACHE's multi-job experiment (HPCA'23 Fig. 14), simulated.

Two jobs on one data set share one cache under four schemes -- ``default``
(LRU), ``inda`` / ``indb`` (the importance heap keyed by job A's / job B's
importance only) and ``icache`` (keyed by the adjusted importance of the
cache-eligible jobs, each job's benefit measured by a 20 + 20 mini-batch probe
at every epoch's start) -- and each job's modeled epoch time, hit ratio,
coverage and bytes read are reported. The model is :mod:`hotset.sim.icache_jobs`:
nothing is trained, read or timed, so every figure is simulated.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import click

from hotset import options as typed
from hotset.errors import HotsetError
from hotset.options import cli
from hotset.sim.icache_jobs import SCHEMES, JobModel, Setup, run_scheme

#: CIFAR10's size in 32x32x3 images; job A (ShuffleNet-like) and B (ResNet50-like)
DEFAULT_SETUP = Setup(
    n=50_000,
    item_bytes=3072,
    batch_size=128,
    epochs=15,
    latency_ms=2.0,
    concurrency=4,
    jobs=(JobModel("A", 8.0, 1), JobModel("B", 40.0, 2)),
    correlation=0.3,
)


@dataclass(frozen=True)
class IcacheJobsOptions:
    """What ``bench icachejobs`` models; the command line is generated from the fields
    (:mod:`hotset.cli.typed_options`), so a run built in Python is checked alike.

    The fields on the command line override ``base`` (Python only), which holds the
    rest of the model the command line does not set: item sizes, the store, the jobs
    and their compute. ``schemes`` (Python only) picks some of :data:`SCHEMES`.
    """

    cache_fracs: tuple[float, ...] = field(default=(0.3, 0.5), metadata=cli(parse=typed.floats))
    n: int = field(default=DEFAULT_SETUP.n, metadata=cli(type=click.IntRange(min=100)))
    epochs: int = field(default=DEFAULT_SETUP.epochs, metadata=cli(type=click.IntRange(min=1)))
    batch_size: int = field(
        default=DEFAULT_SETUP.batch_size, metadata=cli(type=click.IntRange(min=1))
    )
    probe: int = field(
        default=DEFAULT_SETUP.probe,
        metadata=cli(
            "Mini-batches without the cache, then as many with it, at every epoch's start.",
            type=click.IntRange(min=2),
        ),
    )
    eligible_above: float = field(
        default=DEFAULT_SETUP.threshold,
        metadata=cli(
            "A job's benefit must exceed this for its importance to count.",
            type=click.FloatRange(min=1.0),
        ),
    )
    correlation: float = field(
        default=DEFAULT_SETUP.correlation,
        metadata=cli(
            "How alike the two jobs find samples hard (their difficulties, in log space).",
            type=click.FloatRange(min=-1.0, max=1.0),
        ),
    )
    seed: int = field(default=DEFAULT_SETUP.seed, metadata=cli(type=int))
    schemes: tuple[str, ...] = SCHEMES
    base: Setup = DEFAULT_SETUP

    def __post_init__(self) -> None:
        """Every bad value fails before any work, naming it."""
        for scheme in self.schemes:
            if scheme not in SCHEMES:
                raise HotsetError(
                    f"bench icachejobs: scheme must be one of {SCHEMES}, got {scheme!r}"
                )
        for one in self.setups():
            one.check()

    @property
    def setup(self) -> Setup:
        """The model with this run's figures (its cache share is each row's own)."""
        return replace(
            self.base,
            n=self.n,
            epochs=self.epochs,
            batch_size=self.batch_size,
            probe=self.probe,
            threshold=self.eligible_above,
            correlation=self.correlation,
            seed=self.seed,
        )

    def setups(self) -> list[Setup]:
        """The model at each cache share, in ``cache_fracs``' order."""
        return [replace(self.setup, cache_frac=frac) for frac in self.cache_fracs]


def run(opts: IcacheJobsOptions = IcacheJobsOptions(), *, progress: bool = True) -> dict[str, Any]:
    """Every (cache share, scheme): one row per job; see the module docstring."""
    setup, schemes = opts.setup, opts.schemes
    setups = opts.setups()
    table: list[dict[str, Any]] = []
    for one in setups:
        frac = one.cache_frac
        for scheme in schemes:
            rows = run_scheme(one, scheme)
            table += rows
            if progress:
                for r in rows:
                    print(
                        f"{frac:g} {scheme} job {r['job']}: {r['epoch_seconds']:.3f} s/epoch, "
                        f"hit ratio {r['hit_ratio']:.3f}",
                        file=sys.stderr,
                    )
    params = asdict(setup) | {"cache_fracs": list(opts.cache_fracs), "schemes": list(schemes)}
    return {"params": params, "table": _with_speedups(table), "notes": _notes(setup)}


def _with_speedups(table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row's epoch time over the same job's under ``default`` at the same share."""
    base = {
        (r["cache_frac"], r["job"]): r["epoch_seconds"] for r in table if r["scheme"] == "default"
    }
    out = []
    for r in table:
        ref = base.get((r["cache_frac"], r["job"]))
        out.append(r | {"vs_default": round(ref / r["epoch_seconds"], 3) if ref else None})
    return out


def _notes(setup: Setup) -> list[str]:
    a, b = setup.jobs[0], setup.jobs[-1]
    return [
        "Simulated (hotset.sim.icache_jobs): nothing trained, read or timed. Two jobs on "
        f"one data set of {setup.n} items of {setup.item_bytes} bytes share one cache; job "
        f"{a.name} computes {a.compute_ms:g} ms per mini-batch of {setup.batch_size} "
        f"(I/O-bound, ShuffleNet's role), job {b.name} {b.compute_ms:g} ms (ResNet50's role). "
        f"A mini-batch takes max(compute, I/O), its I/O ceil(misses / {setup.concurrency}) x "
        f"{setup.latency_ms:g} ms; the jobs share the cache, not the store.",
        "Each job samples by IIS (the same in every scheme) from its own synthetic losses "
        f"(hotset.sim.losses; B's difficulty correlates with A's, {setup.correlation:g} in "
        "log space). The cache is iCACHE's H-cache alone (one importance heap, no "
        "L-cache: every hit is exact); default is LRU; inda/indb key the heap by job A's "
        "/ B's raw losses; icache by the AIV of the jobs whose benefit exceeds "
        f"{setup.threshold:g} (icache[multijob=true]).",
        f"icache measures each job's benefit at every epoch's start: {setup.probe} "
        f"mini-batches read without the cache, then {setup.probe} with it (Quiver's "
        "probe_result, first batch of each window dropped); the probe's reads count in "
        "the job's time, hit ratio and bytes (hit_ratio_cached_batches leaves them out).",
        "Per job, averaged over its epochs (the cold first one included): epoch_seconds "
        "(modeled), completion_seconds (its last epoch's end; the jobs start together), "
        "hit_ratio (exact hits / requests), coverage (distinct ids trained per epoch / n), "
        "mb_read_per_epoch; vs_default = default's epoch time / this row's.",
    ]
