"""SHADE's Priority-based Adaptive Data Sampling (FAST'23 §4.2.1, "PADS").

One epoch, step by step (every step is a function of the seed, the epoch and the
:class:`EpochContext`, so every rank computes the same global draw):

1. **Weights.** ``w = score + ls_param`` per sample id, ``score`` being the
   importance snapshot (1.0 for a never-trained sample -- the authors' default,
   kept: since log-rank scores are ``>= ln 10``, a sample not drawn in epoch 0 is
   drawn 2.3-4.9x less often afterwards; ``coverage_floor`` below is the remedy
   rather than a different prior, because it bounds the gap for every sample). ``ls_param`` smooths the
   distribution: 0 before any epoch has finished, then ``ls_init_frac`` (1%) of the
   first epoch's mean training loss, then multiplied by
   ``exp((loss_now - loss_prev) / loss_prev)`` after every further epoch (it
   shrinks while the loss falls, sharpening the sampling). It is recomputed from
   ``ctx.train_loss`` each time, so a resumed job gets the same value. At epoch 0
   no loss exists yet, ``ls_param = 0`` and every score is 1: the draw is uniform.
2. **Global draw.** ``L * W`` ids drawn *with replacement* from ``w`` with
   ``np.random.default_rng([seed, epoch])``, where ``W`` is the world size and
   ``L = ceil(n / W)`` is the per-rank epoch length. When ``W`` divides ``n``
   this is exactly ``n`` draws (the paper's N); otherwise the draw is rounded up
   to ``L * W`` so every rank gets ``L`` ids without padding by repetition.
3. **Mode.** The mean of the last (up to) three epoch-to-epoch changes of the
   validation accuracy decides: positive -> *aggressive*, else *relaxed*. With a
   single validation accuracy the change is 0 (the authors' code seeds its change
   list with 0), so the mode is relaxed. With no validation accuracy at all the
   training loss stands in, negated (a falling loss means improving); with
   fewer than two losses there is no signal and the mode is relaxed.
   ``last_signal`` records which of "val_accuracy", "train_loss", "none" decided.
4. **Shard.** Aggressive: the draw is sorted by how often each id was drawn (most
   frequent first, ties by id) and rank ``r`` takes the contiguous block
   ``[r*L, (r+1)*L)`` -- so the copies of one hard sample stay on one rank, where
   its cache can serve them. Relaxed: rank ``r`` takes ``draw[r::W]``. Either
   way the shards of all ranks are exactly the global draw.
5. **Cache-aware repetition.** Among the rank's ids, those resident in the cache
   (``ctx.resident``) are repeated ``rep_factor`` times and scheduled first, in a
   seeded shuffle; the misses, shuffled, fill the rest, and the order is cut to
   ``L``. ``rep_factor`` is 1, 1.5, 2, 2.5, ...: for ``k + 0.5`` the first half
   (rounded down) of the rank's cached entries, in shard order, get ``k + 1``
   copies and the rest ``k`` -- the meaning in the authors' code (``h*k + h//2``
   extra-copy total); in aggressive mode shard order puts the most frequently
   drawn samples first, so they get the extra copy. Values below 1 are refused:
   the authors' code then produces fewer ids than the epoch needs.

``adaptive=True`` adds the paper's adaptivity (repetitions that follow the loss,
a shuffle epoch on a steep loss decline or a stagnant accuracy curve):
:mod:`hotset.samplers.pads_schedule` says how the paper's words are read.
``aggressive="head"`` gives aggressive mode the authors' meaning: each rank
draws for itself and trains the most-drawn head of its own sorted draw (with one
rank that is the same multiset as ``"blocks"``, sorted by frequency).

``pads=False`` gives the plain loss-based importance sampling of SHADE's §6.2
ablations: steps 1, 2 and the relaxed shard only (no sort, no repetition).

Guards against training a subset (issue: SHADE, once cached ids fill a third of
a rank's draw with ``rep_factor`` 3, schedules only hits, admits nothing and
trains the same ids forever). Each is an option every PADS-based system accepts.
This class leaves them all off, so it is the authors' arithmetic; the *systems*
(:mod:`hotset.systems.shade`) turn the coverage floor on by default
(:data:`DEFAULT_COVERAGE_FLOOR`), and ``coverage_floor=0`` there is the paper's
behaviour:

* ``coverage_floor`` (a share ``f`` in [0, 1)): the last ``F = ceil(f * L)``
  slots of each rank's order go to the ``F * W`` samples trained longest ago
  (never-trained first, ties in a seeded random order, dealt ``r::W``), after the
  first ``L - F`` ids of the order above. Every sample is then trained at least
  once in every ``K = ceil(n / (F * W))`` consecutive epochs, whatever the cache
  holds (:meth:`PADSSampler.coverage_window`; ``K <= ceil(1 / f)`` for every
  ``n`` and ``W``): the ids not trained since epoch ``t`` shrink by ``F * W``
  each epoch until the floor reaches them. "Trained" is what the table's
  ``last_epoch`` says, so the bound holds where every served id is fed back
  (a policy that substitutes, or a loader dropping a last partial batch, can
  delay a floor id to a later epoch, where it is again among the stalest).
* ``anneal_from`` (an epoch): from that epoch on the order is a uniform
  permutation of all ids, strided across ranks (padded by wrapping, as torch's
  DistributedSampler does): InfoBatch's annealing, the last epochs on the full
  data so that the final model has seen it all recently.
* ``guardrail`` (a share ``g`` in [0, 1)): the first ``ceil(g * L)`` slots of
  each rank's order are a *sentinel*: ids drawn uniformly (without
  replacement, from ``(seed, epoch)``, dealt ``r::W``). At the next epoch their
  latest losses are compared with the epoch's mean training loss: importance
  batches are drawn to be *harder* than average, so when they come out easier
  than the uniform sentinel by more than ``guard_threshold`` (10%) the model is
  fitting its subset rather than the data, and that epoch falls back to a
  uniform permutation (``last_mode == "guardrail"``, shown in the loader's and
  the simulator's epoch rows). The rule reads only the previous epoch's
  sentinel (recomputable from the seed) and the table, so it stays pure.
* ``loss_weights(ids)``: ``1 / (N * p_i)`` with ``p_i`` the probability of id
  ``i`` in this epoch's draw (1 in an anneal epoch), which makes the weighted
  loss of the draw an unbiased estimate of the full-data loss. It corrects the
  importance draw only: repetitions (the cache's choice of which drawn ids to
  repeat) and the floor change how often a sample is trained, not the
  distribution it was drawn from, and are not corrected.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from hotset.errors import HotsetError
from hotset.samplers.base import EpochContext, IntArray, Sampler
from hotset.samplers.pads_schedule import Schedule, adaptive_schedule

#: the mode's signal looks at this many most recent epoch-to-epoch changes
TREND_EPOCHS = 3
#: "blocks": rank r takes block r of the one global frequency-sorted draw;
#: "head": each rank draws its own ids and trains the head of its own sorted draw
#: (the authors' code: ``indices[:num_samples]``, only the most-drawn samples)
AGGRESSIVE_MODES = ("blocks", "head")
#: the coverage floor the SHADE-family systems use unless told otherwise: every
#: sample trained at least once in every 10 consecutive epochs (the trade-off
#: measured for this choice: docs/systems/shade.md "Coverage by default")
DEFAULT_COVERAGE_FLOOR = 0.1
#: ``ls_param``'s ceiling: far above any rank score (``ln(j + 10)``), so at the ceiling
#: the draw is already uniform, and low enough that ``n`` weights still sum finitely.
#: A loss rising from a tiny one (1e-38 to 1, say) would otherwise overflow ``exp``.
LS_PARAM_MAX = 1e200


def _share(name: str, value: object) -> float:
    """A share in [0, 1) (a guard's slice of the epoch, or its threshold), as a float.

    1 is excluded: a floor or sentinel of the whole epoch would leave PADS no slot.
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
        raise HotsetError(f"pads: {name} must be a share in [0, 1), got {value!r}")
    return float(value)


def _positive(name: str, value: object) -> float:
    """A positive number (an adaptivity threshold), as a float."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise HotsetError(f"pads: {name} must be a positive number, got {value!r}")
    return float(value)


def _anneal_from(anneal_from: object) -> int | None:
    """None (never anneal) or the first epoch (an int >= 0) of uniform permutations."""
    if anneal_from is not None and (
        isinstance(anneal_from, bool) or not isinstance(anneal_from, int) or anneal_from < 0
    ):
        raise HotsetError(
            f"pads: anneal_from must be an epoch (an integer >= 0) or None, got {anneal_from!r}"
        )
    return anneal_from


def _rep_factor(rep_factor: object) -> float:
    """1, 1.5, 2, ...: below 1 the authors' code yields fewer ids than the epoch needs,
    and only halves have a meaning (module docstring, step 5)."""
    if isinstance(rep_factor, bool) or not isinstance(rep_factor, int | float):
        raise HotsetError(f"pads: rep_factor must be a number, got {rep_factor!r}")
    if not math.isfinite(rep_factor) or rep_factor < 1 or (2 * rep_factor) % 1 != 0:
        raise HotsetError(
            f"pads: rep_factor must be 1, 1.5, 2, 2.5, ... (>= 1, a multiple of 0.5), "
            f"got {rep_factor!r}"
        )
    return float(rep_factor)


@dataclass(frozen=True)
class SubsetGuards:
    """The guards against training a subset (the module docstring's list): all off here.

    ``coverage_floor`` and ``guardrail`` are shares of a rank's epoch in [0, 1),
    ``guard_threshold`` the guardrail's tolerance (a share too), ``anneal_from`` the
    first epoch of uniform permutations (None: never). The systems turn the floor on
    (:data:`DEFAULT_COVERAGE_FLOOR`); PADS itself keeps the paper's arithmetic.
    """

    coverage_floor: float = 0.0
    anneal_from: int | None = None
    guardrail: float = 0.0
    guard_threshold: float = 0.1

    def __post_init__(self) -> None:
        object.__setattr__(self, "guardrail", _share("guardrail", self.guardrail))
        object.__setattr__(self, "guard_threshold", _share("guard_threshold", self.guard_threshold))
        object.__setattr__(self, "coverage_floor", _share("coverage_floor", self.coverage_floor))
        _anneal_from(self.anneal_from)


@dataclass(frozen=True)
class Adaptivity:
    """The paper's adaptivity (:mod:`hotset.samplers.pads_schedule`): off by default.

    ``steep_decline`` and ``stagnant`` are the loss-decline and accuracy-change
    thresholds that call a shuffle epoch; they matter only with ``adaptive``.
    """

    adaptive: bool = False
    steep_decline: float = 0.25
    stagnant: float = 0.002

    def __post_init__(self) -> None:
        if not isinstance(self.adaptive, bool):
            raise HotsetError(f"pads: adaptive must be True or False, got {self.adaptive!r}")
        object.__setattr__(self, "steep_decline", _positive("steep_decline", self.steep_decline))
        object.__setattr__(self, "stagnant", _positive("stagnant", self.stagnant))


class PADSSampler(Sampler):
    """SHADE's sampler; see the module docstring for the exact procedure."""

    name: ClassVar[str] = "pads"

    def __init__(
        self,
        n: int,
        *,
        seed: int = 0,
        rep_factor: float = 1.0,
        ls_init_frac: float = 0.01,
        batch_size: int = 128,
        pads: bool = True,
        aggressive: str = "blocks",
        adaptivity: Adaptivity = Adaptivity(),
        guards: SubsetGuards = SubsetGuards(),
    ) -> None:
        super().__init__(n, seed=seed)
        self.guardrail = guards.guardrail
        self.guard_threshold = guards.guard_threshold
        self.coverage_floor = guards.coverage_floor
        self.anneal_from = guards.anneal_from
        #: the last guardrail check: (importance loss / sentinel loss) or None
        self.last_guard_ratio: float | None = None
        if aggressive not in AGGRESSIVE_MODES:
            raise HotsetError(
                f"pads: aggressive must be one of {', '.join(AGGRESSIVE_MODES)}, got {aggressive!r}"
            )
        self.adaptive = adaptivity.adaptive
        self.steep_decline = adaptivity.steep_decline
        self.stagnant = adaptivity.stagnant
        self.aggressive = aggressive
        #: what adaptivity decided for the epoch of the last order() (reports, tests)
        self.last_schedule = Schedule("pads", float(rep_factor), "not adaptive")
        #: the draw probability of each id in the epoch of the last order() (loss_weights)
        self._probs = np.full(n, 1.0 / n)
        self.rep_factor = _rep_factor(rep_factor)
        if not math.isfinite(ls_init_frac) or ls_init_frac < 0:
            raise HotsetError(
                f"pads: ls_init_frac must be a non-negative number, got {ls_init_frac!r}"
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise HotsetError(f"pads: batch_size must be an integer >= 1, got {batch_size!r}")
        self.ls_init_frac = float(ls_init_frac)
        #: kept for the training loop's convenience; the order does not depend on it
        self.batch_size = batch_size
        self.pads = bool(pads)
        # what the last call to order() decided (for logs and tests)
        self.last_mode = "relaxed"
        self.last_signal = "none"
        self.last_ls_param = 0.0
        self.last_cached = 0
        self.last_repeated = 0

    # -- the pieces -------------------------------------------------------------
    def per_rank_length(self, world_size: int) -> int:
        """``ceil(n / world_size)``: every rank reads this many ids per epoch."""
        return -(-self.n // world_size)

    def ls_param(self, train_loss: tuple[float, ...]) -> float:
        """The smoothing term after the given finished epochs' mean losses."""
        losses = [float(x) for x in train_loss]
        for i, value in enumerate(losses):
            if not math.isfinite(value) or value < 0:
                raise HotsetError(f"pads: train_loss[{i}] = {value!r} is not a finite loss >= 0")
        if not losses:
            return 0.0
        ls = self.ls_init_frac * losses[0]
        for prev, cur in itertools.pairwise(losses):
            if prev > 0:  # a zero loss gives no relative change: keep ls as it is
                step = (cur - prev) / prev
                ls = LS_PARAM_MAX if step > math.log(LS_PARAM_MAX) else ls * math.exp(step)
                ls = min(ls, LS_PARAM_MAX)
        return ls

    def mode(self, ctx: EpochContext) -> tuple[str, str]:
        """(mode, signal): "aggressive" or "relaxed", and what decided it."""
        if not self.pads:
            return "relaxed", "none"
        acc = np.asarray(ctx.val_accuracy, dtype=np.float64)
        if acc.size:
            if not np.isfinite(acc).all():
                raise HotsetError(
                    f"pads: val_accuracy holds a non-finite value: {ctx.val_accuracy}"
                )
            change = float(np.diff(acc)[-TREND_EPOCHS:].mean()) if acc.size > 1 else 0.0
            return ("aggressive" if change > 0 else "relaxed"), "val_accuracy"
        loss = np.asarray(ctx.train_loss, dtype=np.float64)
        if loss.size > 1:
            if not np.isfinite(loss).all():
                raise HotsetError(f"pads: train_loss holds a non-finite value: {ctx.train_loss}")
            change = float(np.diff(loss)[-TREND_EPOCHS:].mean())
            return ("aggressive" if change < 0 else "relaxed"), "train_loss"
        return "relaxed", "none"

    def weights(self, ctx: EpochContext) -> np.ndarray:
        """``score + ls_param`` per id, validated."""
        if ctx.scores is None:
            scores = np.ones(self.n, dtype=np.float64)
        else:
            scores = np.asarray(ctx.scores, dtype=np.float64)
            if scores.shape != (self.n,):
                raise HotsetError(
                    f"pads: scores must hold one value per sample ({self.n}), got shape {scores.shape}"
                )
        w = scores + self.ls_param(ctx.train_loss)
        bad = ~np.isfinite(w) | (w < 0)
        if bad.any():
            i = int(np.argmax(bad))
            raise HotsetError(f"pads: sample id {i} has weight {w[i]!r}; weights must be >= 0")
        if w.sum() <= 0:
            raise HotsetError("pads: every sample has weight 0, there is nothing to draw")
        return w

    def global_draw(self, ctx: EpochContext) -> IntArray:
        """The arranged global draw (length ``L * W``): rank ``r``'s shard is a slice of it.

        Aggressive: sorted by draw frequency, rank ``r`` takes block ``r``.
        Relaxed: draw order, rank ``r`` takes every ``W``-th id from ``r``.
        """
        world = self._check_topology(ctx)
        w = self.weights(ctx)
        total = self.per_rank_length(world) * world
        draw = self.epoch_rng(ctx.epoch).choice(self.n, size=total, replace=True, p=w / w.sum())
        draw = draw.astype(np.int64, copy=False)
        mode, _ = self.mode(ctx)
        if mode == "aggressive":
            freq = np.bincount(draw, minlength=self.n)
            draw = draw[np.lexsort((draw, -freq[draw]))]
        return draw

    def shard(self, ctx: EpochContext) -> IntArray:
        """This rank's ids before cache-aware repetition (order: the arranged draw's)."""
        world = self._check_topology(ctx)
        length = self.per_rank_length(world)
        if self.mode(ctx)[0] == "aggressive" and self.aggressive == "head":
            return self._own_head(ctx, length * world)[:length]
        draw = self.global_draw(ctx)
        if self.mode(ctx)[0] == "aggressive":
            return draw[ctx.rank * length : (ctx.rank + 1) * length]
        return draw[ctx.rank :: world]

    def _own_head(self, ctx: EpochContext, total: int) -> IntArray:
        """This rank's own draw of ``total`` ids, most-drawn first (the authors' aggressive)."""
        w = self.weights(ctx)
        rng = np.random.default_rng([self.seed, int(ctx.epoch), 4, int(ctx.rank)])
        draw = rng.choice(self.n, size=total, replace=True, p=w / w.sum()).astype(np.int64)
        freq = np.bincount(draw, minlength=self.n)
        return draw[np.lexsort((draw, -freq[draw]))]

    def repetitions(self, cached: int, rep_factor: float | None = None) -> IntArray:
        """Copies per cached entry, in shard order, for ``cached`` cached entries."""
        rep = self.rep_factor if rep_factor is None else rep_factor
        whole = int(rep)
        reps = np.full(cached, whole, dtype=np.int64)
        if rep != whole:
            reps[: cached // 2] += 1
        return reps

    def floor_ids(self, ctx: EpochContext) -> IntArray:
        """This rank's share of the epoch's coverage floor: the stalest samples."""
        world = self._check_topology(ctx)
        per_rank = math.ceil(self.coverage_floor * self.per_rank_length(world))
        if per_rank == 0:
            return np.zeros(0, dtype=np.int64)
        last = (
            np.full(self.n, -1, dtype=np.int64)
            if ctx.last_epoch is None
            else np.asarray(ctx.last_epoch, dtype=np.int64)
        )
        tiebreak = np.random.default_rng([self.seed, int(ctx.epoch), 2]).random(self.n)
        stalest = np.lexsort((tiebreak, last))[: per_rank * world]
        return stalest[ctx.rank :: world].astype(np.int64, copy=False)

    def coverage_window(self, world_size: int = 1) -> int | None:
        """``K``: every id is trained at least once in every ``K`` consecutive epochs.

        ``ceil(n / (F * W))`` with ``F = ceil(coverage_floor * L)`` floor slots per
        rank (module docstring); None without a floor, where PADS bounds nothing.
        """
        if world_size < 1:
            raise HotsetError(f"pads: world_size must be >= 1, got {world_size}")
        per_rank = math.ceil(self.coverage_floor * self.per_rank_length(world_size))
        if per_rank == 0:
            return None
        return -(-self.n // min(self.n, per_rank * world_size))

    def guard_note(self) -> str | None:
        """One line for a report saying which guard is on (None: the paper's PADS)."""
        notes = []
        if self.coverage_floor:
            bound = math.ceil(round(1.0 / self.coverage_floor, 9))
            notes.append(
                f"coverage_floor={self.coverage_floor:g}: every sample trained at least once "
                f"every {bound} epochs (coverage_floor=0 is the paper's behaviour)"
            )
        if self.anneal_from is not None:
            notes.append(f"anneal_from={self.anneal_from}: uniform epochs from then on")
        if self.guardrail:
            notes.append(f"guardrail={self.guardrail:g}: a uniform sentinel checks the draw")
        return "; ".join(notes) or None

    def sentinel_ids(self, epoch: int, rank: int, world: int) -> IntArray:
        """This rank's uniform sentinel of ``epoch`` (the guardrail's yardstick)."""
        per_rank = math.ceil(self.guardrail * self.per_rank_length(world))
        if per_rank == 0:
            return np.zeros(0, dtype=np.int64)
        rng = np.random.default_rng([self.seed, int(epoch), 5])
        picked = rng.permutation(self.n)[: min(self.n, per_rank * world)]
        return picked[rank::world].astype(np.int64, copy=False)

    def guard_tripped(self, ctx: EpochContext) -> bool:
        """Whether last epoch's importance batches came out easier than its sentinel."""
        self.last_guard_ratio = None
        if not self.guardrail or ctx.epoch == 0 or not ctx.train_loss or ctx.losses is None:
            return False
        world = self._check_topology(ctx)
        sentinel = np.concatenate(
            [self.sentinel_ids(ctx.epoch - 1, r, world) for r in range(world)]
        )
        losses = np.asarray(ctx.losses, dtype=np.float64)[sentinel]
        losses = losses[np.isfinite(losses)]
        if not len(losses) or losses.mean() <= 0:
            return False
        self.last_guard_ratio = float(ctx.train_loss[-1] / losses.mean())
        return self.last_guard_ratio < 1.0 - self.guard_threshold

    def loss_weights(self, ids: IntArray) -> np.ndarray:
        """``1 / (N * p_i)`` of the current epoch's draw (see the module docstring)."""
        return 1.0 / (self.n * self._probs[np.asarray(ids, dtype=np.int64)])

    # -- the order --------------------------------------------------------------
    def order(self, ctx: EpochContext) -> IntArray:
        world = self._check_topology(ctx)
        mode, signal = self.mode(ctx)
        self.last_mode, self.last_signal = mode, signal
        self.last_ls_param = self.ls_param(ctx.train_loss)
        length = self.per_rank_length(world)
        schedule = Schedule("pads", self.rep_factor, "not adaptive")
        if self.adaptive and self.pads:
            schedule = adaptive_schedule(
                ctx.train_loss,
                ctx.val_accuracy,
                rep_factor=self.rep_factor,
                steep_decline=self.steep_decline,
                stagnant=self.stagnant,
            )
        self.last_schedule = schedule
        annealing = self.anneal_from is not None and ctx.epoch >= self.anneal_from
        guarded = self.guard_tripped(ctx)
        if annealing or guarded or schedule.kind == "shuffle":
            # a uniform permutation of all ids: the anneal tail, the guardrail's
            # fallback, or adaptivity's shuffle
            self.last_mode = "anneal" if annealing else "guardrail" if guarded else "shuffle"
            self.last_cached = self.last_repeated = 0
            self._probs = np.full(self.n, 1.0 / self.n)
            perm = self.epoch_rng(ctx.epoch).permutation(self.n).astype(np.int64)
            padded = np.resize(perm, length * world)  # wraps, like DistributedSampler
            return padded[ctx.rank :: world]
        w = self.weights(ctx)
        self._probs = w / w.sum()
        floor = self.floor_ids(ctx)
        sentinel = self.sentinel_ids(ctx.epoch, ctx.rank, world)
        room = max(0, length - len(floor) - len(sentinel))
        body = self._body(ctx, length, schedule.rep_factor)[:room]
        if not len(floor) and not len(sentinel):
            return body
        tail = floor.copy()
        np.random.default_rng([self.seed, int(ctx.epoch), 3, int(ctx.rank)]).shuffle(tail)
        order = np.concatenate([sentinel, body, tail])[:length]
        return order.astype(np.int64, copy=False)

    def _body(self, ctx: EpochContext, length: int, rep_factor: float) -> IntArray:
        """Steps 2-5: the shard, with cache-aware repetition under ``pads``."""
        shard = self.shard(ctx)
        if not self.pads:
            self.last_cached = self.last_repeated = 0
            return shard
        if ctx.resident:
            resident = np.fromiter(ctx.resident, dtype=np.int64, count=len(ctx.resident))
            cached_mask = np.isin(shard, resident)
        else:
            cached_mask = np.zeros(len(shard), dtype=bool)
        hits = shard[cached_mask]
        misses = shard[~cached_mask]
        repeated = np.repeat(hits, self.repetitions(len(hits), rep_factor))
        rng = np.random.default_rng([self.seed, int(ctx.epoch), 1, int(ctx.rank)])
        rng.shuffle(repeated)
        rng.shuffle(misses)
        self.last_cached = len(hits)
        self.last_repeated = len(repeated)
        return np.concatenate([repeated, misses])[:length].astype(np.int64, copy=False)

    def _check_topology(self, ctx: EpochContext) -> int:
        world = int(ctx.world_size)
        if world < 1:
            raise HotsetError(f"pads: world_size must be >= 1, got {ctx.world_size}")
        if not 0 <= ctx.rank < world:
            raise HotsetError(f"pads: rank {ctx.rank} is outside 0..{world - 1}")
        if ctx.epoch < 0:
            raise HotsetError(f"pads: epoch must be >= 0, got {ctx.epoch}")
        return world
