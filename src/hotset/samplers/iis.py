"""iCACHE's I/O-oriented importance sampling (HPCA'23 §III-A, "IIS").

The point of IIS is *fewer storage reads per epoch*: an epoch's order holds only
the samples it keeps, so a skipped sample is neither read nor trained.

One epoch, as a pure function of (seed, epoch, rank, importance snapshot):

1. **Full epochs.** While ``epoch < warm_up`` (5) or ``epoch % reuse_factor == 0``
   (3) the order is a seeded permutation of every id (the authors' constants,
   ``../shared/DESIGN.md`` "Faithful details"): the model needs fresh losses of
   everyone before the losses can steer the selection, and periodic full epochs
   refresh the losses of samples that were skipped.
2. **Selection.** Otherwise the ids are visited in the seeded permutation; each
   visited id's importance (its raw latest loss) is pushed into a sliding window
   of the last ``window`` (1024) losses, and the id is kept with probability
   ``percentile(loss within the window) ** beta`` (``beta`` = 0.33 keeps about
   75%). The first ``window`` ids of the permutation are always kept, as in the
   authors' code, where the window is not yet full. An id with no loss yet (never
   trained, NaN) is always kept and does not enter the window: there is nothing
   to rank it by, and skipping it would starve it forever.
3. **Shard.** The kept ids, in permutation order, are sharded across ranks like
   the random order (:func:`hotset.samplers.shard.shard`), so every rank computes
   the same global selection.

The percentile is the share of window entries ``<=`` the id's loss (the window
includes the id itself), so the hardest sample of a window has percentile 1 and
is always kept. Importance is ``ctx.losses`` (the raw per-sample loss) when the
context carries it, else ``ctx.scores``; with neither, every epoch is full.

**RHO-loss** (``rho``, beyond iCACHE): step 2 keeps instead the ``rho_share`` of the
ids with a known loss whose reducible loss (loss minus irreducible loss) is highest
(:mod:`hotset.samplers.rho`); the full epochs, the never-trained ids and the coverage
guard are as above.

**Coverage** (``coverage_epochs`` ``K``, beyond the papers; 0, the default here,
is the papers' behaviour): a selection epoch also keeps every id the table says
was last trained ``K`` or more epochs ago (``ctx.last_epoch <= epoch - K``,
never-trained ones from epoch ``K - 1``), after the coin flips, which it does not
change -- so every id is *asked for* at least once in every ``K`` consecutive
epochs. Without it a sample the loss calls easy is kept with probability about
``(1 / window) ** beta`` (0.10) per epoch and nothing bounds its gap; ImPACT, with
no periodic full epochs, turns it on by default (:mod:`hotset.systems.impact`).
A policy that substitutes (iCACHE's L-cache) may serve another sample in its
place; the id then stays due and is asked for again the next epoch.
"""

from __future__ import annotations

import bisect
from collections import deque
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from hotset.errors import HotsetError
from hotset.samplers.base import EpochContext, IntArray, Sampler
from hotset.samplers.rho import RHO_SHARE, IrreducibleLosses, check_share, rho_keep_mask
from hotset.samplers.shard import shard

#: the authors' constants (DESIGN.md "Faithful details")
BETA = 0.33
WINDOW = 1024
WARM_UP = 5
REUSE_FACTOR = 3
#: the coverage window ImPACT uses unless told otherwise (0: off, the papers' behaviour)
DEFAULT_COVERAGE_EPOCHS = 10


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise HotsetError(f"iis: {name} must be an integer >= 1, got {value!r}")
    return value


class IISSampler(Sampler):
    """iCACHE's importance sampler; see the module docstring for the procedure."""

    name: ClassVar[str] = "iis"

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
        coverage_epochs: int = 0,
        rho: IrreducibleLosses | None = None,
        rho_share: float = RHO_SHARE,
    ) -> None:
        super().__init__(n, seed=seed)
        #: select by reducible loss (RHO-loss, :mod:`hotset.samplers.rho`) instead of the
        #: percentile rule; the schedule of full epochs stays IIS's
        self.rho = rho
        self.rho_share = check_share(rho_share, who=self.name)
        if (
            isinstance(coverage_epochs, bool)
            or not isinstance(coverage_epochs, int)
            or coverage_epochs < 0
        ):
            raise HotsetError(
                f"iis: coverage_epochs must be an integer >= 0 (0: off), got {coverage_epochs!r}"
            )
        self.coverage_epochs = coverage_epochs
        if isinstance(beta, bool) or not isinstance(beta, int | float) or not 0 < beta < np.inf:
            raise HotsetError(f"iis: beta must be a positive number, got {beta!r}")
        if isinstance(warm_up, bool) or not isinstance(warm_up, int) or warm_up < 0:
            raise HotsetError(f"iis: warm_up must be an integer >= 0, got {warm_up!r}")
        self.beta = float(beta)
        self.window = _positive_int("window", window)
        self.reuse_factor = _positive_int("reuse_factor", reuse_factor)
        self.warm_up = warm_up
        self.drop_last = bool(drop_last)
        #: ids kept / ids considered in the epoch of the last order() (reports, tests)
        self.last_kept = 0
        self.last_full = True
        #: ids kept in the last selection only because they were due (coverage_epochs)
        self.last_due = 0

    def is_full_epoch(self, epoch: int) -> bool:
        """True when ``epoch`` reads every sample (warm-up or a reuse epoch)."""
        return epoch < self.warm_up or epoch % self.reuse_factor == 0

    def importance(self, ctx: EpochContext) -> npt.NDArray[np.float64] | None:
        """Raw per-sample loss (NaN: unknown), validated; None when the context has none."""
        raw = ctx.losses if ctx.losses is not None else ctx.scores
        if raw is None:
            return None
        values = np.asarray(raw, dtype=np.float64)
        if values.shape != (self.n,):
            raise HotsetError(
                f"iis: importance must hold one value per sample ({self.n}), "
                f"got shape {values.shape}"
            )
        bad = np.isinf(values) | (values < 0)
        if bad.any():
            i = int(np.argmax(bad))
            raise HotsetError(f"iis: sample id {i} has importance {values[i]!r}; need >= 0")
        return values

    def keep_mask(self, perm: IntArray, values: npt.NDArray[np.float64], epoch: int) -> np.ndarray:
        """Which positions of ``perm`` are kept (step 2 of the module docstring), or, with
        ``rho``, the top ``rho_share`` by reducible loss (:func:`rho_keep_mask`)."""
        if self.rho is not None:
            irreducible = self.rho.require(self.name)
            return rho_keep_mask(values[perm], irreducible[perm], self.rho_share)
        rng = np.random.default_rng([self.seed, int(epoch), 11])
        coins = rng.random(len(perm))
        keep = np.ones(len(perm), dtype=bool)
        win: deque[float] = deque()  # arrival order, to know what leaves the window
        ranked: list[float] = []  # the same losses, sorted, for the percentile
        for pos, sid in enumerate(perm.tolist()):
            loss = float(values[sid])
            if np.isnan(loss):
                continue
            win.append(loss)
            bisect.insort(ranked, loss)
            if len(win) > self.window:
                del ranked[bisect.bisect_left(ranked, win.popleft())]
            if pos < self.window:
                continue
            pct = bisect.bisect_right(ranked, loss) / len(ranked)
            keep[pos] = coins[pos] < pct**self.beta
        return keep

    def global_order(self, ctx: EpochContext) -> IntArray:
        """The epoch's kept ids over all ranks, in the order they are read."""
        perm = self.epoch_rng(ctx.epoch).permutation(self.n).astype(np.int64, copy=False)
        values = self.importance(ctx)
        self.last_full = self.is_full_epoch(ctx.epoch) or values is None
        self.last_due = 0
        if self.last_full or values is None:
            self.last_kept = self.n
            return perm
        keep = self.keep_mask(perm, values, ctx.epoch)
        due = self.due_mask(perm, ctx)
        if due is not None:
            self.last_due = int((due & ~keep).sum())
            keep |= due
        kept = perm[keep]
        self.last_kept = len(kept)
        return kept

    def due_mask(self, perm: IntArray, ctx: EpochContext) -> np.ndarray | None:
        """Which positions of ``perm`` hold ids not trained for ``coverage_epochs``
        epochs (module docstring); None when the guard is off or nothing is known."""
        if not self.coverage_epochs or ctx.last_epoch is None:
            return None
        last = np.asarray(ctx.last_epoch, dtype=np.int64)
        if last.shape != (self.n,):
            raise HotsetError(
                f"iis: last_epoch must hold one epoch per sample ({self.n}), got shape {last.shape}"
            )
        return np.asarray(last[perm] <= ctx.epoch - self.coverage_epochs)

    def guard_note(self) -> str | None:
        """One line for a report saying the coverage guard is on (None: the papers')."""
        if not self.coverage_epochs:
            return None
        return (
            f"coverage_epochs={self.coverage_epochs}: every sample asked for at least once "
            f"every {self.coverage_epochs} epochs (coverage_epochs=0 is the paper's behaviour)"
        )

    def order(self, ctx: EpochContext) -> IntArray:
        return shard(self.global_order(ctx), ctx.rank, ctx.world_size, drop_last=self.drop_last)
