"""RHO-loss selection: train on the samples of highest *reducible* loss.

Why: ImPACT (IEEE TC'25 §III-B) selects each epoch's samples with "a recent
loss-based importance sampling algorithm", its reference [22]: RHO-loss
(Mindermann et al., ICML 2022). RHO-loss ranks a point by its reducible loss,
the training loss minus its *irreducible* loss -- the loss of a model trained on
held-out data. A point the held-out model cannot fit either (a wrong label,
ambiguous pixels) has a high irreducible loss and is skipped; a point already
learnt has a low training loss and is skipped; what is left is learnable, worth
learning and not yet learnt.

The paper's setting, carried to an I/O-oriented sampler that must choose an
epoch's samples before reading them (ImPACT's, hotset's):

* RHO-loss draws a large batch and trains on the ``10%`` of it with the highest
  reducible loss (``n_b / n_B = 0.1``). Here the candidates are the epoch's ids
  and the ``share`` (:data:`RHO_SHARE`, 0.1) of those with a known training loss
  that rank highest is kept; the training loss is the latest one the table holds
  (ImPACT's hybrid estimate: S re-evaluated, the rest historical), not a forward
  pass over the candidates, which would read them all.
* Ties are broken by the position in the epoch's seeded permutation, so the
  selection is a pure function of (seed, epoch, loss snapshot, irreducible losses).
* An id with no training loss yet (never trained) is always kept, as in the
  other rules: there is nothing to rank it by.
* The selected ids train unweighted, as in RHO-loss.

Irreducible losses are an input (:class:`IrreducibleLosses`): the loader's user
gives them (``loader.system.set_irreducible(ids, losses)``, or the system option
``irreducible=PATH`` naming a ``.npy`` array, read without unpickling), and the
live simulator computes them with a model trained on held-out halves of the
training set (:mod:`hotset.sim.irreducible`). A selection with any id's
irreducible loss missing is refused, naming how many are missing: a silent
fallback to the plain training loss would be another rule under RHO-loss's name.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import numpy.typing as npt

from hotset.errors import HotsetError

FloatArray = npt.NDArray[np.float64]

#: RHO-loss's selection ratio (``n_b / n_B``: 32 kept of a large batch of 320)
RHO_SHARE = 0.1

__all__ = [
    "RHO_SHARE",
    "IrreducibleLosses",
    "check_share",
    "irreducible_option",
    "rho_keep_mask",
]


def check_share(value: object, *, who: str) -> float:
    """``value`` as a share in (0, 1], or a :class:`HotsetError` naming it."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise HotsetError(f"{who}: rho_share must be a share in (0, 1], got {value!r}")
    if not 0 < value <= 1:
        raise HotsetError(f"{who}: rho_share must be a share in (0, 1], got {value!r}")
    return float(value)


def rho_keep_mask(
    values: FloatArray, irreducible: FloatArray, share: float
) -> npt.NDArray[np.bool_]:
    """Which candidates to keep; ``values[j]`` and ``irreducible[j]`` belong to the
    ``j``-th id of the epoch's permutation (module docstring).

    The ``ceil(share * m)`` ids of highest ``values - irreducible`` among the ``m``
    with a known (non-NaN) training loss are kept, ties to the earlier position,
    and every id with an unknown training loss.
    """
    keep = np.isnan(values)
    known = np.flatnonzero(~keep)
    m = len(known)
    if not m:
        return keep
    k = min(m, math.ceil(share * m - 1e-9))
    reducible = values[known] - irreducible[known]
    # highest reducible first; on a tie the earlier position first (lexsort: last key primary)
    ranked = np.lexsort((known, -reducible))
    keep[known[ranked[:k]]] = True
    return keep


class IrreducibleLosses:
    """Each id's irreducible loss (NaN: not given yet), given whole or in parts.

    Why its own object: the sampler that selects by it and the system the user
    talks to share one array, filled from a file (the ``irreducible`` option),
    by the user (``set``), or by the simulator's held-out model.
    """

    def __init__(self, n: int) -> None:
        self.n = int(n)
        self.values: FloatArray = np.full(self.n, np.nan, dtype=np.float64)

    @property
    def missing(self) -> int:
        """How many ids have no irreducible loss yet."""
        return int(np.isnan(self.values).sum())

    def set(self, ids: npt.ArrayLike, losses: npt.ArrayLike) -> None:
        """Irreducible losses of ``ids`` (finite numbers; later calls overwrite)."""
        idx = np.asarray(ids)
        vals = np.asarray(losses, dtype=np.float64)
        if idx.ndim != 1 or vals.shape != idx.shape:
            raise HotsetError(
                f"set_irreducible: ids and losses must be two 1-d arrays of one length, "
                f"got shapes {idx.shape} and {vals.shape}"
            )
        if idx.size and (idx.dtype.kind not in "iu" or idx.min() < 0 or idx.max() >= self.n):
            raise HotsetError(f"set_irreducible: ids must be integers in 0..{self.n - 1}")
        bad = ~np.isfinite(vals)
        if bad.any():
            j = int(np.argmax(bad))
            raise HotsetError(
                f"set_irreducible: id {int(idx[j])} has irreducible loss {float(vals[j])!r}; "
                "need a finite number"
            )
        self.values[idx.astype(np.int64)] = vals

    def load(self, path: str | os.PathLike[str]) -> None:
        """Every id's irreducible loss from a ``.npy`` file of ``n`` numbers.

        ``allow_pickle=False``: an array of objects is refused, never unpickled.
        """
        where = Path(path)
        try:
            arr = np.load(where, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise HotsetError(
                f"irreducible={os.fspath(path)!r}: cannot read a .npy array of numbers ({exc})"
            ) from None
        if not isinstance(arr, np.ndarray) or arr.shape != (self.n,) or arr.dtype.kind not in "fiu":
            raise HotsetError(
                f"irreducible={os.fspath(path)!r}: need {self.n} numbers (one per sample id), "
                f"got an array of shape {getattr(arr, 'shape', None)} and dtype "
                f"{getattr(arr, 'dtype', None)}"
            )
        self.set(np.arange(self.n), arr.astype(np.float64))

    def require(self, who: str) -> FloatArray:
        """The whole array, or a :class:`HotsetError` saying how many are missing and
        how to give them."""
        missing = self.missing
        if missing:
            raise HotsetError(
                f"{who}: sampler=rho selects by reducible loss, but {missing} of {self.n} "
                "samples have no irreducible loss; give them with "
                "loader.system.set_irreducible(ids, losses) or the option irreducible=PATH "
                "(a .npy array of one loss per sample id)"
            )
        return self.values


def irreducible_option(
    system: str, n: int, *, rho: bool, path: str | None
) -> IrreducibleLosses | None:
    """The irreducible losses a ``sampler=rho`` system selects by, filled from the
    ``irreducible=PATH`` option when given; None for the other rules, which refuse
    the option (it would change nothing, silently)."""
    if not rho:
        if path is not None:
            raise HotsetError(
                f"system {system!r}: irreducible={path!r} is used only by sampler=rho"
            )
        return None
    holder = IrreducibleLosses(n)
    if path is not None:
        holder.load(path)
    return holder
