"""iCACHE's importance keys (HPCA'23 §III-B, §III-D): the snapshot in use and the shadow one.

The H-cache is keyed by the *previous* importance snapshot: a new one (the job's
own losses, or under ``multijob`` the adjusted importance of the jobs sharing the
cache) builds a **shadow heap** -- the H residents re-keyed by it -- which the
policy swaps in at the next epoch's start, so the live heap is never rebuilt
mid-epoch. The snapshot in use also names the H-list: the top ``h_share`` of the
epoch's ids by importance.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.errors import HotsetError
from hotset.importance.multijob import JobImportance
from hotset.policies.icache.multijob import JobKeys

FloatArray = npt.NDArray[np.float64]


class ImportanceKeys:
    """The snapshot the heap is keyed by, and the shadow heap the next one built."""

    def __init__(self, multijob: JobKeys | None) -> None:
        #: §III-D: keyed by the adjusted importance of the jobs sharing the cache
        self.multijob = multijob
        self.scores: FloatArray | None = None  # the snapshot in use
        self.next: FloatArray | None = None  # the shadow heap's snapshot
        #: the H residents as (key, id) under ``next``, swapped in at the epoch's start
        self.shadow: list[tuple[float, int]] | None = None

    def key(self, sid: int) -> float:
        """``sid``'s key in the snapshot in use (0 where it has none)."""
        if self.scores is None or sid >= len(self.scores) or np.isnan(self.scores[sid]):
            return 0.0
        return float(self.scores[sid])

    def update_importance(self, scores: FloatArray, residents: Iterable[int]) -> None:
        """A new snapshot of the job's own importance: the shadow heap of ``residents``
        (under ``multijob``, keyed by the jobs' adjusted importance when one is eligible)."""
        if self.multijob is not None:
            self.multijob.set_own(scores)
            self._rekey(residents)
            return
        self._shadow_from(np.asarray(scores, dtype=np.float64).copy(), residents)

    def update_jobs(self, jobs: Sequence[JobImportance], residents: Iterable[int]) -> None:
        """The published (benefit, RIV) of every job sharing the cache: the shadow heap
        of ``residents`` keyed by their AIV."""
        if self.multijob is None:
            raise HotsetError("icache: update_jobs() needs icache[multijob=true]")
        self.multijob.set_jobs(jobs)
        self._rekey(residents)

    def _rekey(self, residents: Iterable[int]) -> None:
        assert self.multijob is not None
        keys = self.multijob.keys()
        if keys is not None:
            self._shadow_from(keys.copy(), residents)

    def _shadow_from(self, snapshot: FloatArray, residents: Iterable[int]) -> None:
        self.next = snapshot
        keyed = [(0.0 if np.isnan(self.next[s]) else float(self.next[s]), s) for s in residents]
        heapq.heapify(keyed)
        self.shadow = keyed

    def swap_in(self) -> dict[int, float] | None:
        """At an epoch's start: the shadow snapshot becomes the one in use; the H residents'
        new keys (None: no shadow heap, the keys stay)."""
        if self.shadow is None:
            return None
        self.scores = self.next
        keys = {sid: key for key, sid in self.shadow}
        self.shadow = None
        return keys

    def h_list(self, planned: IntArray | None, h_share: float) -> set[int] | None:
        """The top ``h_share`` of the planned ids (all ids without a plan) by importance,
        ties by id; None before any importance is known (every id is H).

        Under ``multijob`` the importance is the job's own latest snapshot (the one just
        swapped in at an epoch's start), not the jobs' AIV: which requests are L, and so
        may be served by a substitute, decides which ids the job trains, and other jobs
        key what the cache keeps, never what a job trains."""
        scores = self.scores if self.multijob is None else self.multijob.own
        if scores is None:
            return None
        ids = np.arange(len(scores)) if planned is None else np.unique(planned)
        vals = np.nan_to_num(scores[ids], nan=np.inf)  # unknown: treat as important
        top = math.ceil(h_share * len(ids))
        order = np.lexsort((ids, -vals))
        return set(ids[order[:top]].tolist())

    def load(
        self,
        scores: FloatArray | None,
        next_: FloatArray | None,
        shadow: Iterable[Sequence[Any]] | None,
    ) -> None:
        """Restore the snapshots and the shadow heap's (key, id) pairs (a saved state's)."""
        self.scores, self.next = scores, next_
        self.shadow = None if shadow is None else [(float(k), int(s)) for k, s in shadow]
        if self.shadow is not None:
            heapq.heapify(self.shadow)

    def summary(self) -> dict[str, Any]:
        return {} if self.multijob is None else self.multijob.summary()
