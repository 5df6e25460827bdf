"""Per-sample importance, keyed by sample id.

The table is the one place training feedback lands. Every entry is addressed by
the *sample id* the loss belongs to -- never by a position in a batch or in a
sampler's draw. (SHADE's public code wrote each score at the position the sample
had in the raw multinomial draw rather than at the id actually trained on, so
scores landed on the wrong samples; keying by id makes that mistake impossible
to express.)

An update is validated as a whole before anything changes, so a bad batch
(wrong length, NaN loss, unknown id) leaves the table exactly as it was: a
training loop can report the error and carry on without a half-applied step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.errors import HotsetError

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: the score of a sample that was never trained on (SHADE's initial weight)
DEFAULT_SCORE = 1.0


def _to_numpy(values: Any) -> np.ndarray:
    """A numpy view of a list, array or torch tensor (torch is never imported here)."""
    if hasattr(values, "detach") and hasattr(values, "cpu"):
        values = values.detach().cpu().numpy()
    return np.asarray(values)


def as_ids(ids: Any, *, what: str = "ids") -> IntArray:
    """Validate and convert sample ids to a 1-D int64 array (range is checked by callers)."""
    arr = _to_numpy(ids)
    if arr.ndim != 1:
        raise HotsetError(f"{what} must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise HotsetError(f"{what} must be integers, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)


def as_values(values: Any, n: int, ids: IntArray, *, what: str) -> FloatArray:
    """Validate ``values`` as ``n`` finite floats aligned with ``ids``; errors name the id."""
    arr = _to_numpy(values)
    if arr.ndim != 1:
        raise HotsetError(f"{what} must be 1-D, got shape {arr.shape}")
    if len(arr) != n:
        raise HotsetError(f"{what}: got {len(arr)} values for {n} ids")
    if arr.size and not (np.issubdtype(arr.dtype, np.number) and arr.dtype != np.bool_):
        raise HotsetError(f"{what} must be numbers, got dtype {arr.dtype}")
    out = arr.astype(np.float64, copy=False)
    bad = ~np.isfinite(out)
    if bad.any():
        i = int(np.argmax(bad))
        raise HotsetError(f"{what}: value {out[i]!r} for sample id {int(ids[i])} is not finite")
    return out


def _frozen(arr: np.ndarray) -> np.ndarray:
    out = arr.copy()
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class ImportanceSnapshot:
    """A read-only copy of the table at one ``version`` (arrays indexed by sample id)."""

    version: int
    scores: FloatArray
    losses: FloatArray
    counts: IntArray
    last_epoch: IntArray


class ImportanceTable:
    """Latest loss, score, access count and recent losses per sample id ``0..n-1``.

    ``history`` bounds the global window of recent losses (oldest dropped first)
    that percentile scorers compare against; ``per_sample_history`` bounds each
    sample's own ring of past losses. Both are fixed-size, so memory does not
    grow with training time.
    """

    def __init__(self, n: int, *, history: int = 1024, per_sample_history: int = 8) -> None:
        for name, value, low in (
            ("n", n, 1),
            ("history", history, 1),
            ("per_sample_history", per_sample_history, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
                raise HotsetError(
                    f"importance table: {name} must be an integer >= {low}, got {value!r}"
                )
        self.n = int(n)
        self.history = int(history)
        self.per_sample_history = int(per_sample_history)
        self.version = 0
        self._losses = np.full(self.n, np.nan, dtype=np.float64)
        self._scores = np.full(self.n, DEFAULT_SCORE, dtype=np.float64)
        self._counts = np.zeros(self.n, dtype=np.int64)
        self._last_epoch = np.full(self.n, -1, dtype=np.int64)
        self._ring = np.full((self.n, self.per_sample_history), np.nan, dtype=np.float64)
        self._ring_writes = np.zeros(self.n, dtype=np.int64)
        self._window = np.full(self.history, np.nan, dtype=np.float64)
        self._window_writes = 0

    # -- writing ----------------------------------------------------------------
    def validate(
        self, ids: Any, losses: Any, scores: Any = None
    ) -> tuple[IntArray, FloatArray, FloatArray | None]:
        """Check one update without applying it; return the converted arrays."""
        ids_arr = as_ids(ids)
        bad = (ids_arr < 0) | (ids_arr >= self.n)
        if bad.any():
            sid = int(ids_arr[int(np.argmax(bad))])
            raise HotsetError(f"unknown sample id {sid} (the table holds ids 0..{self.n - 1})")
        loss_arr = as_values(losses, len(ids_arr), ids_arr, what="losses")
        score_arr = None
        if scores is not None:
            score_arr = as_values(scores, len(ids_arr), ids_arr, what="scores")
        return ids_arr, loss_arr, score_arr

    def update(self, ids: Any, losses: Any, *, epoch: int, scores: Any = None) -> None:
        """Record the losses (and scores) of one step, keyed by the ids trained on.

        Duplicate ids are applied in order: the last occurrence sets the loss and
        score, every occurrence counts as an access and enters the histories.
        """
        if isinstance(epoch, bool) or not isinstance(epoch, int | np.integer) or epoch < 0:
            raise HotsetError(f"epoch must be a non-negative integer, got {epoch!r}")
        ids_arr, loss_arr, score_arr = self.validate(ids, losses, scores)
        self.version += 1
        if ids_arr.size == 0:
            return
        # last occurrence of each id wins (fancy assignment order is not guaranteed)
        rev_unique, rev_first = np.unique(ids_arr[::-1], return_index=True)
        last = len(ids_arr) - 1 - rev_first
        self._losses[rev_unique] = loss_arr[last]
        if score_arr is not None:
            self._scores[rev_unique] = score_arr[last]
        np.add.at(self._counts, ids_arr, 1)
        self._last_epoch[rev_unique] = int(epoch)
        self._append_rings(ids_arr, loss_arr)
        self._append_window(loss_arr)

    def _append_rings(self, ids: IntArray, losses: FloatArray) -> None:
        h = self.per_sample_history
        order = np.argsort(ids, kind="stable")
        sorted_ids = ids[order]
        uniq, start, count = np.unique(sorted_ids, return_index=True, return_counts=True)
        if h > 0:
            group = np.repeat(np.arange(len(uniq)), count)
            occ = np.arange(len(sorted_ids)) - start[group]  # occurrence number within its id
            keep = occ >= count[group] - h  # only the last h writes of an id can survive
            sid = sorted_ids[keep]
            slot = (self._ring_writes[sid] + occ[keep]) % h
            self._ring[sid, slot] = losses[order][keep]
        self._ring_writes[uniq] += count

    def _append_window(self, losses: FloatArray) -> None:
        tail = losses[-self.history :]
        first = self._window_writes + len(losses) - len(tail)  # write index of tail[0]
        slots = (first + np.arange(len(tail))) % self.history
        self._window[slots] = tail
        self._window_writes += len(losses)

    # -- reading ----------------------------------------------------------------
    def snapshot(self) -> ImportanceSnapshot:
        return ImportanceSnapshot(
            version=self.version,
            scores=_frozen(self._scores),
            losses=_frozen(self._losses),
            counts=_frozen(self._counts),
            last_epoch=_frozen(self._last_epoch),
        )

    def recent_losses(self) -> FloatArray:
        """The global window of recent losses, oldest first (at most ``history``)."""
        filled = min(self._window_writes, self.history)
        start = (self._window_writes - filled) % self.history
        return np.roll(self._window, -start)[:filled].copy()

    def history_of(self, sid: int) -> FloatArray:
        """The last ``per_sample_history`` losses of ``sid``, oldest first."""
        if isinstance(sid, bool) or not isinstance(sid, int | np.integer) or not 0 <= sid < self.n:
            raise HotsetError(f"unknown sample id {sid!r} (the table holds ids 0..{self.n - 1})")
        h = self.per_sample_history
        writes = int(self._ring_writes[sid])
        filled = min(writes, h)
        if filled == 0:
            return np.zeros(0, dtype=np.float64)
        start = (writes - filled) % h
        return np.roll(self._ring[sid], -start)[:filled].copy()

    def __len__(self) -> int:
        return self.n

    # -- resumption -------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "history": self.history,
            "per_sample_history": self.per_sample_history,
            "version": self.version,
            "losses": self._losses.copy(),
            "scores": self._scores.copy(),
            "counts": self._counts.copy(),
            "last_epoch": self._last_epoch.copy(),
            "ring": self._ring.copy(),
            "ring_writes": self._ring_writes.copy(),
            "window": self._window.copy(),
            "window_writes": self._window_writes,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a :meth:`state_dict`; the shape must match this table's."""
        for key in ("n", "history", "per_sample_history"):
            if key not in state:
                raise HotsetError(f"importance table state: missing {key!r}")
            if int(state[key]) != getattr(self, key):
                raise HotsetError(
                    f"importance table state: {key}={state[key]} does not match this table's "
                    f"{getattr(self, key)}"
                )
        shapes = {
            "losses": (self.n,),
            "scores": (self.n,),
            "counts": (self.n,),
            "last_epoch": (self.n,),
            "ring": (self.n, self.per_sample_history),
            "ring_writes": (self.n,),
            "window": (self.history,),
        }
        for key in ("version", "window_writes"):
            if key not in state:
                raise HotsetError(f"importance table state: missing {key!r}")
        arrays = {}
        for key, shape in shapes.items():
            if key not in state:
                raise HotsetError(f"importance table state: missing {key!r}")
            arr = np.asarray(state[key])
            if arr.shape != shape:
                raise HotsetError(
                    f"importance table state: {key} has shape {arr.shape}, expected {shape}"
                )
            arrays[key] = arr
        self.version = int(state["version"])
        self._losses = arrays["losses"].astype(np.float64, copy=True)
        self._scores = arrays["scores"].astype(np.float64, copy=True)
        self._counts = arrays["counts"].astype(np.int64, copy=True)
        self._last_epoch = arrays["last_epoch"].astype(np.int64, copy=True)
        self._ring = arrays["ring"].astype(np.float64, copy=True)
        self._ring_writes = arrays["ring_writes"].astype(np.int64, copy=True)
        self._window = arrays["window"].astype(np.float64, copy=True)
        self._window_writes = int(state["window_writes"])
