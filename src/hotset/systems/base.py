"""A system is a named composition: sampler + scorer + policy + importance table.

Drivers (the simulators and the loader) only talk to :class:`System`, so a
new paper is one small module that builds one of these with its defaults. The
engine's planner drives it through :class:`hotset.engine.system.System`, a
Protocol naming only the members it calls, which this class implements.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.engine.capabilities import Capabilities
from hotset.engine.outcome import Decision
from hotset.engine.policy import Policy
from hotset.engine.roles import (
    ObservesScores,
    PlansWorld,
    SplitsByRank,
    TakesImportance,
    missing_role,
)
from hotset.samplers.base import EpochContext, Sampler

if TYPE_CHECKING:
    from hotset.importance.scorers import Scorer
    from hotset.importance.table import ImportanceTable


@dataclass
class System:
    """The parts of one named system, and the hooks a driver calls in order:

    ``begin_epoch`` -> (``access`` per sample, ``feedback`` per step)* -> ``end_epoch``.
    """

    name: str
    sampler: Sampler
    policy: Policy
    table: ImportanceTable
    scorer: Scorer | None = None
    #: per-sample loss weights the training step should apply (importance sampling)
    weighted: bool = False
    options: dict[str, Any] = field(default_factory=dict)
    val_accuracy: list[float] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)

    @property
    def capabilities(self) -> Capabilities:
        """The policy's needs, plus whether the system learns from training feedback."""
        caps = self.policy.capabilities
        learns = self.scorer is not None or self.weighted
        return replace(caps, learns=True) if learns and not caps.learns else caps

    def begin_epoch(
        self, epoch: int, *, rank: int = 0, world_size: int = 1, announce: bool = True
    ) -> IntArray:
        """Compute this rank's order for ``epoch`` and tell the policy about it.

        ``announce=False`` keeps the order from the policy (a replayed trace
        that a real cache would not know in advance).
        """
        snapshot = self.table.snapshot()
        ctx = EpochContext(
            epoch=epoch,
            rank=rank,
            world_size=world_size,
            scores=snapshot.scores,
            last_epoch=snapshot.last_epoch,
            losses=snapshot.losses,
            resident=self.policy.resident(),
            val_accuracy=tuple(self.val_accuracy),
            train_loss=tuple(self.train_loss),
        )
        order = self.sampler.order(ctx)
        if isinstance(self.policy, SplitsByRank):
            self.policy.bind_rank(rank, world_size)
        if announce and world_size > 1 and self.policy.capabilities.plans_world:
            # every rank's order, as every rank computes it (the samplers are seeded)
            orders = [
                order if q == rank else self.sampler.order(replace(ctx, rank=q))
                for q in range(world_size)
            ]
            if not isinstance(self.policy, PlansWorld):
                raise missing_role(self.policy, "PlansWorld", "plans_world")
            self.policy.begin_world(epoch, orders, rank)
        else:
            self.policy.begin_epoch(epoch, order if announce else None)
        return order

    def access(self, sid: int) -> Decision:
        return self.policy.access(sid)

    @property
    def needs_irreducible(self) -> bool:
        """Whether the sampler selects by reducible loss (``sampler=rho``) and some ids
        still have no irreducible loss (:mod:`hotset.samplers.rho`)."""
        rho = getattr(self.sampler, "rho", None)
        return rho is not None and rho.missing > 0

    def set_irreducible(self, ids: npt.ArrayLike, losses: npt.ArrayLike) -> None:
        """Irreducible losses of ``ids`` (a held-out model's per-sample losses), which
        ``sampler=rho`` subtracts from the training loss to rank the ids.

        An input, like feedback, but not part of the saved state: a resumed run gives
        them again (or names them with the ``irreducible=PATH`` option, which is rebuilt
        from the options); a selection missing any is refused, never guessed.
        """
        rho = getattr(self.sampler, "rho", None)
        if rho is None:
            from hotset.errors import HotsetError

            raise HotsetError(
                f"system {self.name!r} does not select by reducible loss; "
                "set_irreducible needs sampler=rho (impact[sampler=rho], scout[sampler=rho])"
            )
        rho.set(ids, losses)

    def feedback(self, ids: IntArray, losses: npt.NDArray[np.float64], *, epoch: int) -> None:
        """Per-sample losses of one step, keyed by the ids actually trained on."""
        scores = None if self.scorer is None else self.scorer.score(ids, losses, self.table)
        self.table.update(ids, losses, epoch=epoch, scores=scores)
        if scores is not None and isinstance(self.policy, ObservesScores):
            self.policy.observe(ids, scores)

    def weights(self, ids: IntArray) -> npt.NDArray[np.float64]:
        """Loss weights for ``ids``: the sampler's (importance sampling), or all ones."""
        if self.weighted:
            loss_weights = getattr(self.sampler, "loss_weights", None)
            if loss_weights is not None:
                return np.asarray(loss_weights(ids), dtype=np.float64)
        return np.ones(len(ids), dtype=np.float64)

    def end_epoch(self, *, train_loss: float, val_accuracy: float | None) -> None:
        self.train_loss.append(float(train_loss))
        if val_accuracy is not None:
            self.val_accuracy.append(float(val_accuracy))
        self.policy.end_epoch()
        if isinstance(self.policy, TakesImportance):
            self.policy.update_importance(self.table.snapshot().scores, self.table.version)


def with_defaults(system: str, given: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """``given`` over ``defaults``; an option ``defaults`` does not name is an error naming it."""
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        from hotset.errors import HotsetError

        raise HotsetError(
            f"system {system!r}: unknown option(s) {', '.join(unknown)}; "
            f"it accepts {', '.join(sorted(defaults)) or 'none'}"
        )
    return {**defaults, **given}


@dataclass(frozen=True)
class SystemSpec:
    """A registry entry: how to build a system and where it comes from."""

    name: str
    summary: str
    source: str  # paper and section, e.g. "SHADE FAST'23 §4"
    build: Callable[..., System]
