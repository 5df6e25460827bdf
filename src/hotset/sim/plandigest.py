"""A digest of every registered system's plans: proof that a refactor changed no decision.

Why: issue #42 moves code between modules (sub-packages, role protocols, a
thinner loader) and promises that behaviour, decisions and results stay
identical. Tests of properties (the budget holds, each sample once) would
pass for a policy that decides *differently*; this digest would not. Each
system runs through the one planner (:mod:`hotset.engine.planner`, the code
every driver uses) over a small fixed grid of seeds and budgets, with
deterministic stand-in losses and validation accuracy, and every batch plan's
decisions are hashed: what was requested and served, each outcome, the reads,
unit reads and prefetches, admissions, evictions, the net deletes and puts,
the write order, and the importance weights (rounded to 6 decimals, so that a
last-bit difference of a float function on another CPU is not a change).

``python -m hotset.sim.plandigest`` prints the digests as JSON; ``--write
PATH`` records them (tests/sim/plan_digests.json is the committed record,
checked by tests/sim/test_sim_plandigest.py). A change that is meant
to change decisions records them again, and says so in its commit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from hotset.data.chunks import sized_layout
from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.plan import BatchPlan
from hotset.engine.planner import Planner
from hotset.engine.roles import NeedsFuture, missing_role
from hotset.errors import HotsetError
from hotset.samplers.base import EpochContext
from hotset.systems.registry import build_system, system_names

__all__ = ["PlanGrid", "plan_digest", "plan_digests"]


@dataclass(frozen=True)
class PlanGrid:
    """Where the digest looks: small enough to run every system in seconds, varied
    enough that every decision path runs: more samples than IIS's window (1,024:
    below it every id is kept), caches of 10% and 30%, two seeds, 8 epochs (past
    the 5 of warm-up, selective and full ones after), rank 0 alone and rank 1 of 2
    (the partitioned orders and ImPACT's S)."""

    n: int = 1536
    batch_size: int = 32
    chunk_size: int = 16
    seeds: tuple[int, ...] = (0, 1)
    fracs: tuple[float, ...] = (0.1, 0.3)
    epochs: int = 8
    #: (rank, world size) of the planner
    ranks: tuple[tuple[int, int], ...] = ((0, 1), (1, 2))
    #: feedback applied this many batches late, as a DataLoader with workers does
    lag: int = 1

    def __post_init__(self) -> None:
        for label in ("n", "batch_size", "chunk_size", "epochs"):
            value = getattr(self, label)
            if type(value) is not int or value < 1:
                raise HotsetError(f"PlanGrid: {label} must be an int >= 1, got {value!r}")
        if not self.seeds or not self.fracs:
            raise HotsetError("PlanGrid: give at least one seed and one cache fraction")
        if any(not 0 < f <= 1 for f in self.fracs):
            raise HotsetError(f"PlanGrid: fracs must be in (0, 1], got {self.fracs!r}")
        if any(not 0 <= r < w for r, w in self.ranks):
            raise HotsetError(
                f"PlanGrid: ranks must be (rank, world) with 0 <= rank < world, got {self.ranks!r}"
            )


def _losses(ids: IntArray, epoch: int) -> np.ndarray:
    """Stand-in per-sample losses: a hash of (id, epoch) in [0.1, 1.1), no float noise."""
    arr = np.asarray(ids, dtype=np.int64)
    return ((arr * 2654435761 + epoch * 40503) % 1000) / 1000.0 + 0.1


_ARRAYS = (
    "requested",
    "served",
    "outcomes",
    "units",
    "reads",
    "unit_reads",
    "prefetch",
    "admitted",
    "evicted",
    "deletes",
    "puts",
    "packs",
)


def _feed(h: hashlib._Hash, plan: BatchPlan) -> None:
    """Every decision of one batch plan, in a fixed order and fixed widths."""
    scalars = (plan.epoch, plan.index, plan.seq, plan.wait_for, plan.storage_requests)
    h.update(np.asarray([*scalars, plan.storage_bytes, plan.pack_requests], np.int64).tobytes())
    for name in _ARRAYS:
        arr = np.asarray(getattr(plan, name), dtype=np.int64)
        h.update(name.encode() + np.int64(len(arr)).tobytes() + arr.tobytes())
    h.update(np.round(np.asarray(plan.weights, dtype=np.float64), 6).tobytes())
    for unit in sorted(plan.read_groups):
        h.update(np.asarray([unit, *plan.read_groups[unit].tolist()], np.int64).tobytes())


def _cell(
    name: str, grid: PlanGrid, seed: int, frac: float, rank: tuple[int, int], h: hashlib._Hash
) -> None:
    """One system, seed, budget and rank: every plan of ``grid.epochs`` epochs into ``h``.

    A policy that re-evaluates (ImPACT's S) is given losses of a forward pass that
    differ from the training ones, so that feeding them back is seen."""
    sizes = np.random.default_rng(seed).integers(10, 60, grid.n).astype(np.int64)
    capacity = max(int(frac * sizes.sum()), int(sizes.max()) * grid.chunk_size)
    system = build_system(
        name,
        n=grid.n,
        budget=Budget(capacity_bytes=capacity, sizes=sizes),
        seed=seed,
        batch_size=grid.batch_size,
        layout=sized_layout(sizes, grid.chunk_size),
    )
    r, world = rank
    if system.capabilities.needs_future:  # an offline bound is handed the whole future
        orders = [
            system.sampler.order(EpochContext(epoch=e, rank=r, world_size=world))
            for e in range(grid.epochs)
        ]
        if not isinstance(system.policy, NeedsFuture):
            raise missing_role(system.policy, "NeedsFuture", "needs_future")
        system.policy.set_future(np.concatenate(orders))
    planner = Planner(system, n=grid.n, batch_size=grid.batch_size, lag=grid.lag)
    for epoch in range(grid.epochs):
        planner.begin(
            epoch,
            rank=r,
            world_size=world,
            evaluate=lambda ids, e=epoch: 0.9 * _losses(ids, e + 1),  # type: ignore[misc]
        )
        h.update(np.int64(planner.evaluated).tobytes())
        for plan in planner.plans():
            _feed(h, plan)
            planner.give(plan.index, plan.served, _losses(plan.served, epoch))
        planner.finish(val_accuracy=0.5 + 0.05 * epoch)


def plan_digest(name: str, grid: PlanGrid | None = None) -> str:
    """The hex digest of system ``name``'s plans over ``grid`` (a spec such as
    ``scout[serve=order]`` is a system of its own here)."""
    grid = PlanGrid() if grid is None else grid
    h = hashlib.sha256(json.dumps(asdict(grid), sort_keys=True).encode())
    for seed in grid.seeds:
        for frac in grid.fracs:
            for rank in grid.ranks:
                _cell(name, grid, seed, frac, rank, h)
    return h.hexdigest()[:32]


def plan_digests(
    names: Iterable[str] | None = None, grid: PlanGrid | None = None
) -> dict[str, str]:
    """``{system: digest}`` for ``names`` (default: every registered system)."""
    return {name: plan_digest(name, grid) for name in (system_names() if names is None else names)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hotset.sim.plandigest",
        description="Digest every registered system's plans (see the module docstring).",
    )
    parser.add_argument("--write", type=Path, help="record the digests in this JSON file")
    parser.add_argument("systems", nargs="*", help="systems or specs (default: every one)")
    args = parser.parse_args(argv)
    digests = plan_digests(args.systems or None)
    # numpy's Generator methods may draw other numbers in another numpy version
    # (NEP 19): a record holds for the version it was made with
    record = {"numpy": np.__version__, "grid": asdict(PlanGrid()), "digests": digests}
    text = json.dumps(record, indent=1) + "\n"
    if args.write is None:
        sys.stdout.write(text)
    else:
        args.write.write_text(text)
        print(f"wrote {len(digests)} digests to {args.write}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
