"""ImPACT's importance-informed order (IEEE TC'25 §III-B): warm-up, then selection.

* **Warm-up.** Every epoch is a full seeded permutation until the shared
  :class:`~hotset.importance.rank_variance.RankTracker` finds the set S stable
  (it observes the losses known at the start of each epoch).
* **Selection.** From then on every epoch keeps each sample with probability
  ``percentile(loss in the last 1024 losses) ** beta`` -- the loss-based
  sampling of iCACHE's IIS (:class:`IISSampler`, Selective-Backprop's rule, the
  paper's reference [14]; ``sampler="percentile"``, the default) -- or, with
  ``sampler="loss"``, with probability proportional to its loss
  (:mod:`hotset.samplers.loss_keep`, the loss-proportional importance sampling
  of the paper's references), or, with ``sampler="rho"``, the paper's own
  selector, RHO-loss [22]: the ``rho_share`` (10%) of highest reducible loss, the
  training loss minus a held-out model's irreducible loss
  (:mod:`hotset.samplers.rho`) -- over the *hybrid* estimates:
  the losses of S were re-evaluated by a forward pass just before the draw (the
  driver does it, see ``Planner.begin(evaluate=...)``), everyone else's are their
  latest training loss. There are no periodic full epochs: refreshing stale
  losses is what re-evaluating S is for. So nothing bounds how long an easy
  sample goes unread; ``coverage_epochs`` (IIS's guard, on by default in the
  ``impact`` systems) keeps every sample not trained for that many epochs.

The order is the prefetch list: ImPACT prefetches exactly the selected samples in
order, and a driver reads only what the epoch's plans name, so no unselected
sample is ever fetched.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import numpy.typing as npt

from hotset.errors import HotsetError
from hotset.importance.rank_variance import RankTracker
from hotset.samplers.base import EpochContext, IntArray
from hotset.samplers.iis import BETA, WINDOW, IISSampler
from hotset.samplers.loss_keep import loss_keep_mask
from hotset.samplers.rho import RHO_SHARE, IrreducibleLosses

#: the selection rules ``sampler=`` names; the first is the default
SAMPLERS = ("percentile", "loss", "rho")


class ImpactSampler(IISSampler):
    """Full epochs while the tracker warms up, IIS selection after (module docstring)."""

    name: ClassVar[str] = "impact"

    def __init__(
        self,
        n: int,
        *,
        tracker: RankTracker,
        seed: int = 0,
        beta: float = BETA,
        window: int = WINDOW,
        drop_last: bool = False,
        coverage_epochs: int = 0,
        sampler: str = SAMPLERS[0],
        rho: IrreducibleLosses | None = None,
        rho_share: float = RHO_SHARE,
    ) -> None:
        if sampler not in SAMPLERS:
            raise HotsetError(
                f"impact: sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}"
            )
        self.rule = sampler
        if sampler == "rho" and rho is None:
            rho = IrreducibleLosses(n)  # filled by the user or the simulator before selecting
        super().__init__(
            n,
            seed=seed,
            beta=beta,
            window=window,
            warm_up=0,
            reuse_factor=1,
            drop_last=drop_last,
            coverage_epochs=coverage_epochs,
            rho=rho if sampler == "rho" else None,
            rho_share=rho_share,
        )
        self.tracker = tracker

    def is_full_epoch(self, epoch: int) -> bool:
        return not self.tracker.done

    def keep_mask(self, perm: IntArray, values: npt.NDArray[np.float64], epoch: int) -> np.ndarray:
        """The percentile rule (IIS's), the loss-proportional one (``sampler="loss"``), or
        RHO-loss's top share by reducible loss (``sampler="rho"``, no coins).

        The first two draw their coins from the same generator, so the rule is the only
        difference.
        """
        if self.rule != "loss":  # IISSampler's: the percentile rule, or rho when given
            return super().keep_mask(perm, values, epoch)
        coins = np.random.default_rng([self.seed, int(epoch), 11]).random(len(perm))
        return loss_keep_mask(values[perm], coins, 1.0 / (1.0 + self.beta))

    def global_order(self, ctx: EpochContext) -> IntArray:
        values = self.importance(ctx)
        self.tracker.set_world(ctx.world_size)  # S fills every rank's buffer (§III-E)
        if values is not None:
            self.tracker.observe(ctx.epoch - 1, values, full_epoch=ctx.epoch)
        return super().global_order(ctx)
