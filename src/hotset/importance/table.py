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
_NAN_BITS = np.array(np.nan).view(np.uint64)


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

    ``per_sample_history`` is 0 by default: no system decides on a sample's past
    losses (SHADE ranks the latest, iCACHE and ImPACT keep snapshots of their own),
    and a ring of 8 float64 per sample cost 82 MB of memory per rank at ImageNet's
    1.28M ids and most of a checkpoint (about 5 of its 8.9 bytes a sample). A caller
    that wants :meth:`history_of` asks for a ring.
    """

    def __init__(self, n: int, *, history: int = 1024, per_sample_history: int = 0) -> None:
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
        """The table's arrays, without what they repeat of one another.

        A checkpoint of a large data set is mostly this table, so what can be
        derived is left out, exactly: ``ring_writes`` is None while it equals
        ``counts`` (each loss written is counted once); ``trained_losses`` holds the
        losses of the ids trained on (an untrained id's is NaN); ``ring_older`` each
        id's older past losses, in slot order (its newest is its loss, and a slot
        not yet written is NaN). Where a loaded state broke one of these rules the
        whole array is kept instead (``losses``, ``ring``), so a state is always
        exact. :meth:`load_state_dict` reads either form.
        """
        state: dict[str, Any] = {
            "n": self.n,
            "history": self.history,
            "per_sample_history": self.per_sample_history,
            "version": self.version,
            "counts": self._counts.copy(),
            "scores": self._scores.copy(),
            "last_epoch": self._last_epoch.copy(),
            "ring_writes": None,
            "window": self._window.copy(),
            "window_writes": self._window_writes,
        }
        if not np.array_equal(self._ring_writes, self._counts):
            state["ring_writes"] = self._ring_writes.copy()
        trained = self._counts > 0
        if _all_nan(self._losses[~trained]):
            state["trained_losses"] = self._losses[trained]
        else:
            state["losses"] = self._losses.copy()
        older, newest = _ring_slots(self._ring_writes, self.per_sample_history)
        rows = np.flatnonzero(newest >= 0)
        unwritten = ~older
        unwritten[rows, newest[rows]] = False
        ring = self._ring
        if _all_nan(ring[unwritten]) and np.array_equal(
            ring[rows, newest[rows]].view(np.uint64), self._losses[rows].view(np.uint64)
        ):
            state["ring_older"] = ring[older]
        else:
            state["ring"] = ring.copy()
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a :meth:`state_dict` (either form); the shape must match this table's.

        A state saved with another ``per_sample_history`` (8 was the default before
        0) restores with its own ring: nothing decides on the ring, and the state
        stays the one saved."""
        for key in ("n", "history", "per_sample_history", "version", "window_writes"):
            if key not in state:
                raise HotsetError(f"importance table state: missing {key!r}")
        ring_size = state["per_sample_history"]
        if (
            isinstance(ring_size, bool)
            or not isinstance(ring_size, int | np.integer)
            or ring_size < 0
        ):
            raise HotsetError(
                f"importance table state: per_sample_history must be an integer >= 0, "
                f"got {ring_size!r}"
            )
        for key in ("n", "history"):
            if int(state[key]) != getattr(self, key):
                raise HotsetError(
                    f"importance table state: {key}={state[key]} does not match this table's "
                    f"{getattr(self, key)}"
                )
        n = self.n
        counts = _array(state, "counts", (n,), np.int64)
        writes = counts.copy()
        if state.get("ring_writes") is not None:
            writes = _array(state, "ring_writes", (n,), np.int64)
        if (writes < 0).any():
            raise HotsetError("importance table state: ring_writes holds a negative count")
        losses = self._restored_losses(state, counts)
        ring = self._restored_ring(state, writes, losses, int(ring_size))
        scores = _array(state, "scores", (n,), np.float64)
        last_epoch = _array(state, "last_epoch", (n,), np.int64)
        window = _array(state, "window", (self.history,), np.float64)
        self.version = int(state["version"])
        self.per_sample_history = int(ring_size)
        self._counts, self._ring_writes, self._losses, self._ring = counts, writes, losses, ring
        self._scores, self._last_epoch, self._window = scores, last_epoch, window
        self._window_writes = int(state["window_writes"])

    def _restored_losses(self, state: Mapping[str, Any], counts: IntArray) -> FloatArray:
        if "trained_losses" not in state:
            return _array(state, "losses", (self.n,), np.float64)
        trained = counts > 0
        losses = np.full(self.n, np.nan, dtype=np.float64)
        losses[trained] = _array(state, "trained_losses", (int(trained.sum()),), np.float64)
        return losses

    def _restored_ring(
        self, state: Mapping[str, Any], writes: IntArray, losses: FloatArray, h: int
    ) -> FloatArray:
        if "ring_older" not in state:
            return _array(state, "ring", (self.n, h), np.float64)
        older, newest = _ring_slots(writes, h)
        ring = np.full((self.n, h), np.nan, dtype=np.float64)
        ring[older] = _array(state, "ring_older", (int(older.sum()),), np.float64)
        rows = np.flatnonzero(newest >= 0)
        ring[rows, newest[rows]] = losses[rows]
        return ring


def _array(state: Mapping[str, Any], key: str, shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """``state[key]`` as a fresh array of ``dtype``, or an error naming the key and shapes."""
    if key not in state:
        raise HotsetError(f"importance table state: missing {key!r}")
    arr = np.asarray(state[key])
    if arr.shape != shape:
        raise HotsetError(f"importance table state: {key} has shape {arr.shape}, expected {shape}")
    return arr.astype(dtype, copy=True)


def _all_nan(values: FloatArray) -> bool:
    """Whether every value is the NaN a fresh table holds, bit for bit (what a restore
    writes back where nothing was stored)."""
    return bool((values.view(np.uint64) == _NAN_BITS).all())


def _ring_slots(writes: IntArray, h: int) -> tuple[npt.NDArray[np.bool_], IntArray]:
    """Each id's older written ring slots (mask), and its newest slot (-1: none yet).

    An id written ``w`` times holds its last ``min(w, h)`` losses: slots
    ``0 .. w-1`` until the ring is full, then every slot; the newest is
    ``(w - 1) % h``.
    """
    older = np.arange(h)[None, :] < np.minimum(writes, h)[:, None]
    if h == 0:
        return older, np.full(len(writes), -1, dtype=np.int64)
    newest = np.where(writes > 0, (writes - 1) % h, -1)
    rows = np.flatnonzero(newest >= 0)
    older[rows, newest[rows]] = False
    return older, newest
