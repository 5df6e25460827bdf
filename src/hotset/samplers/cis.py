"""Computing-oriented importance sampling (CIS): the papers' "Base" reads every sample.

iCACHE (HPCA'23 §II-B, §V-A) and ImPACT (TC'25 §V-A) compare against *Base*: a
loss-based importance sampler (Jiang et al.'s Selective-Backprop, the iCACHE
paper's [18]) that only saves computation. Every sample is still read each epoch
-- the read order is the plain seeded permutation -- but only the samples the
sampler selects are trained on. The point of the comparison is that skipping
computation does nothing for an I/O-bound job: Base reads exactly what PyTorch
reads, where IIS (:mod:`hotset.samplers.iis`) reads only what it keeps.

The selection is IIS's own rule (:meth:`IISSampler.keep_mask`: keep with
probability ``percentile(loss in the last window) ** beta``, the authors' full
epochs during warm-up and every ``reuse_factor``-th epoch, history-based as the
iCACHE paper describes Base's algorithm), applied to the same seeded permutation
as IIS, so a selection epoch of Base trains exactly the ids IIS would keep given
the same losses -- Base differs from ``icache_iis_lru`` only in reading the rest.

How "not trained" is realised: :meth:`loss_weights` gives a selected id the weight
``len(batch) / selected_in_batch`` and the others 0, so a training step's weighted
mean loss is the mean over the selected samples of the batch (a batch with none
selected contributes a zero gradient). The forward pass still sees every sample,
so the loss table is refreshed for all of them, as Selective-Backprop's forward
pass does.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import numpy.typing as npt

from hotset.samplers.base import EpochContext, IntArray, Sampler
from hotset.samplers.iis import BETA, REUSE_FACTOR, WARM_UP, WINDOW, IISSampler
from hotset.samplers.shard import shard


class CISSampler(Sampler):
    """Every id read in a seeded permutation; IIS's selection decides which are trained."""

    name: ClassVar[str] = "cis"

    def __init__(
        self,
        n: int,
        *,
        seed: int = 0,
        beta: float = BETA,
        window: int = WINDOW,
        warm_up: int = WARM_UP,
        reuse_factor: int = REUSE_FACTOR,
        drop_last: bool = False,
    ) -> None:
        super().__init__(n, seed=seed)
        self.drop_last = bool(drop_last)
        self.selector = IISSampler(
            n, seed=seed, beta=beta, window=window, warm_up=warm_up, reuse_factor=reuse_factor
        )
        #: which ids the epoch of the last order() trains on (all, before any loss)
        self.selected = np.ones(self.n, dtype=bool)

    def order(self, ctx: EpochContext) -> IntArray:
        """The whole seeded permutation (this rank's shard); records the selection."""
        perm = self.epoch_rng(ctx.epoch).permutation(self.n).astype(np.int64, copy=False)
        kept = self.selector.global_order(ctx)  # the same permutation, filtered
        selected = np.zeros(self.n, dtype=bool)
        selected[kept] = True
        self.selected = selected
        return shard(perm, ctx.rank, ctx.world_size, drop_last=self.drop_last)

    @property
    def last_kept(self) -> int:
        """Ids selected for training in the last order (reports, tests)."""
        return int(self.selected.sum())

    def loss_weights(self, ids: IntArray) -> npt.NDArray[np.float64]:
        """Selected ids share the batch's weight; the rest weigh 0 (see the module doc)."""
        arr = np.asarray(ids, dtype=np.int64)
        chosen = self.selected[arr].astype(np.float64)
        count = float(chosen.sum())
        return chosen * (len(arr) / count) if count else chosen
