"""ImPACT's warm-up rule (IEEE TC'25 §III-B): rank variance, the set S, and when to stop.

During warm-up every sample is trained every epoch, so each epoch's losses rank
all of them. ImPACT keeps, per sample, the variance of its importance rank over
the warm-up epochs; the samples whose rank moves most form the set S, whose
importance is re-evaluated before every later epoch (the rest use their latest
loss). The rule implemented here, one observation per epoch:

1. After each warm-up epoch the losses are ranked (rank 0: the largest loss;
   ties by id) and each sample's rank variance is updated (Welford's running
   mean and sum of squares: no history is kept).
2. From the second observation on, the temporary set S' is the samples of
   highest rank variance (ties by id) whose bytes fill ``s_bytes`` (25% of the
   cache) times :attr:`RankTracker.world`, at least one sample. ``world`` is the
   number of data-parallel ranks (:meth:`RankTracker.set_world`, from the epoch's
   context): each rank buffers its own part of S, 25% of *its* cache, as each of
   the paper's nodes buffers 25% of its memory (§III-B, §III-E), so S is the
   union of ``world`` such parts.
3. Warm-up ends when two successive S' share at least ``overlap`` (80%) of their
   ids -- the later S' becomes S -- or after ``max_epochs`` observations (the
   user's upper limit; S is then the last S'). So the warm-up lasts at least 3
   epochs (S' needs two rankings, the overlap two S').

Pure: a function of the observed losses. One tracker is shared by ImPACT's
sampler (which trains full epochs until :attr:`done`) and its cache (which
buffers S); observing the same epoch twice is a no-op, so any number of
``order()`` calls per epoch leave it unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.errors import HotsetError

IntArray = npt.NDArray[np.int64]

#: the paper's constants: S holds 25% of the cache; S' stable at >= 80% overlap
S_SHARE = 0.25
OVERLAP = 0.8
#: the user's upper limit on warm-up epochs (the paper averages 6.4)
MAX_WARM_UP = 10


class RankTracker:
    """Rank variance over the warm-up, S' per epoch, and the stop rule (module docstring)."""

    def __init__(
        self,
        sizes: npt.ArrayLike,
        *,
        s_bytes: int,
        overlap: float = OVERLAP,
        max_epochs: int = MAX_WARM_UP,
    ) -> None:
        if isinstance(overlap, bool) or not isinstance(overlap, int | float):
            raise HotsetError(f"impact: overlap must be a share in (0, 1], got {overlap!r}")
        if not 0 < overlap <= 1:
            raise HotsetError(f"impact: overlap must be a share in (0, 1], got {overlap!r}")
        if isinstance(max_epochs, bool) or not isinstance(max_epochs, int) or max_epochs < 2:
            raise HotsetError(f"impact: max_warm_up must be an integer >= 2, got {max_epochs!r}")
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.n = len(self.sizes)
        self.s_bytes = max(0, int(s_bytes))
        self.overlap = float(overlap)
        self.max_epochs = max_epochs
        #: data-parallel ranks whose buffers S fills (set_world; 1: one rank)
        self.world = 1
        self.count = 0
        self._mean = np.zeros(self.n, dtype=np.float64)
        self._m2 = np.zeros(self.n, dtype=np.float64)
        self.last_seen = -1  # the epoch whose losses were observed last
        self.candidate: IntArray | None = None  # the latest S'
        #: overlap of each S' with the one before it, in order
        self.overlaps: list[float] = []
        #: S, fixed when the warm-up ends (None while it lasts)
        self.s_ids: IntArray | None = None
        #: warm-up epochs (full epochs) it took; None while it lasts
        self.k: int | None = None

    @property
    def done(self) -> bool:
        return self.s_ids is not None

    def ranks(self, losses: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Rank of each id (0: largest loss; unknown losses rank last; ties by id)."""
        keyed = np.where(np.isnan(losses), -np.inf, losses)
        order = np.lexsort((np.arange(self.n), -keyed))
        ranks = np.empty(self.n, dtype=np.float64)
        ranks[order] = np.arange(self.n, dtype=np.float64)
        return ranks

    def variance(self) -> npt.NDArray[np.float64]:
        if self.count < 2:
            return np.zeros(self.n, dtype=np.float64)
        return self._m2 / (self.count - 1)

    def set_world(self, world_size: int) -> None:
        """S fills ``world_size`` ranks' buffers (module docstring, step 2)."""
        if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
            raise HotsetError(f"impact: world_size must be an integer >= 1, got {world_size!r}")
        self.world = world_size

    def most_unstable(self) -> IntArray:
        """S': the highest rank variances (ties by id) filling ``s_bytes`` on each of
        ``world`` ranks, at least one id."""
        order = np.lexsort((np.arange(self.n), -self.variance()))
        filled = np.cumsum(self.sizes[order])
        k = max(1, int(np.searchsorted(filled, self.s_bytes * self.world, side="right")))
        return np.sort(order[: min(k, self.n)]).astype(np.int64)

    def observe(self, epoch: int, losses: npt.ArrayLike, *, full_epoch: int) -> None:
        """The losses known after epoch ``epoch``; ``full_epoch``: the epoch about to start.

        Observations after the warm-up ended, and repeats, change nothing.
        """
        if self.done or epoch <= self.last_seen or epoch < 0:
            return
        values = np.asarray(losses, dtype=np.float64)
        if values.shape != (self.n,):
            raise HotsetError(f"impact: losses must hold {self.n} values, got {values.shape}")
        self.last_seen = epoch
        ranks = self.ranks(values)
        self.count += 1
        delta = ranks - self._mean
        self._mean += delta / self.count
        self._m2 += delta * (ranks - self._mean)
        if self.count < 2:
            return
        current = self.most_unstable()
        if self.candidate is not None:
            shared = len(np.intersect1d(current, self.candidate, assume_unique=True))
            self.overlaps.append(shared / len(current))
        self.candidate = current
        stable = bool(self.overlaps) and self.overlaps[-1] >= self.overlap
        if stable or self.count >= self.max_epochs:
            self.s_ids = current
            self.k = full_epoch

    def state(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "mean": self._mean.tolist(),
            "m2": self._m2.tolist(),
            "last_seen": self.last_seen,
            "candidate": None if self.candidate is None else self.candidate.tolist(),
            "overlaps": list(self.overlaps),
            "s_ids": None if self.s_ids is None else self.s_ids.tolist(),
            "k": self.k,
        }

    def load_state(self, state: dict[str, Any]) -> None:
        def ids(value: Any) -> IntArray | None:
            return None if value is None else np.asarray(value, dtype=np.int64)

        self.count = int(state["count"])
        self._mean = np.asarray(state["mean"], dtype=np.float64)
        self._m2 = np.asarray(state["m2"], dtype=np.float64)
        self.last_seen = int(state["last_seen"])
        self.candidate = ids(state["candidate"])
        self.overlaps = [float(x) for x in state["overlaps"]]
        self.s_ids = ids(state["s_ids"])
        self.k = None if state["k"] is None else int(state["k"])
