"""``nopfs``: a random order with NoPFS's placement from the seeded future.

NoPFS (Dryden et al., SC'21) is the prefetcher ImPACT (TC'25 §I, [27]) holds up
as reading the whole data set every epoch; what it adds over a plain cache is
clairvoyance: the order is a pure function of the seed, so the job knows every
future access before it happens (:mod:`hotset.policies.nopfs`). The system reads
PyTorch's order (a fresh seeded permutation per epoch, every sample once) and
gives the policy that very order for any epoch, for this rank: the sampler
remembers the rank and world size of the last order it was asked for, which the
system asks for before it tells the policy about the epoch
(:meth:`hotset.systems.base.System.begin_epoch`). Nothing else is needed from a
driver, so it runs in the loader as well as in both simulators.

Option ``horizon`` (10): the epochs one placement looks ahead. NoPFS plans the
whole run; a run longer than the horizon re-places every ``horizon`` epochs
(keeping residents on ties, so one rank's placement does not move).
"""

from __future__ import annotations

from typing import Any

from hotset.engine.budget import Budget
from hotset.importance.table import ImportanceTable
from hotset.policies.nopfs import HORIZON, NoPFS
from hotset.samplers.base import EpochContext, IntArray
from hotset.samplers.random import RandomSampler
from hotset.samplers.shard import shard
from hotset.systems.base import System, SystemSpec, with_defaults
from hotset.systems.options import SystemOption, declare

DEFAULTS: dict[str, Any] = {"horizon": HORIZON}

OPTION_DOCS: dict[str, tuple[str, str]] = {
    "horizon": ("int", "epochs of the seeded future one placement looks at (re-placed after)"),
}


class SeededFuture(RandomSampler):
    """The random order, and any epoch's order for the rank it last served."""

    def __init__(self, n: int, *, seed: int = 0) -> None:
        super().__init__(n, seed=seed)
        self.rank, self.world_size = 0, 1

    def order(self, ctx: EpochContext) -> IntArray:
        self.rank, self.world_size = ctx.rank, ctx.world_size
        return super().order(ctx)

    def future(self, epoch: int) -> IntArray:
        """This rank's order of ``epoch`` (pure: it records nothing)."""
        return shard(self.global_order(epoch), self.rank, self.world_size, drop_last=self.drop_last)


def build_nopfs(
    *, n: int, budget: Budget, seed: int, batch_size: int = 128, **options: Any
) -> System:
    """PyTorch's random order + NoPFS's placement; see the module docstring."""
    opts = with_defaults("nopfs", options, DEFAULTS)
    sampler = SeededFuture(n, seed=seed)
    return System(
        name="nopfs",
        sampler=sampler,
        policy=NoPFS(budget, seed=seed, future=sampler.future, horizon=opts["horizon"]),
        table=ImportanceTable(n),
        scorer=None,
        weighted=False,
        options={"batch_size": batch_size, "policy": "nopfs", **opts},
    )


SPECS: list[SystemSpec] = [
    SystemSpec(
        "nopfs",
        "NoPFS-style: random order; cache the ids the seeded future reads most, then "
        "soonest, and never evict them",
        "Dryden et al. SC'21 (NoPFS), ImPACT TC'25 [27]; hotset DESIGN.md 'NoPFS'",
        build_nopfs,
    ),
]

OPTIONS: dict[str, tuple[SystemOption, ...]] = {"nopfs": declare(DEFAULTS, OPTION_DOCS)}
