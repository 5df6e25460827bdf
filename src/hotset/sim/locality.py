"""How chunk-local is an epoch order? -- locality statistics against a uniform permutation.

Systems that read whole chunks (Brand, Quiver) change the order a job trains in:
they serve what a chunk read brought in, so members of one chunk may come close
together, and the epochs' orders may look alike. A test of the order's first
moments (each id equally likely at each position) cannot see that: an order that
shuffles the chunks, shuffles inside each and reads chunk by chunk (DIESEL-like)
passes it. These statistics measure the property that matters, given a grouping
of the ids (a chunk layout's ``chunk_of``, or the labels):

* **same-group adjacency** -- the share of consecutive pairs of the order whose
  two ids share a group. A uniform permutation of ``n`` ids in groups of sizes
  ``c_g`` gives ``sum c_g (c_g - 1) / (n (n - 1))`` exactly: ``(c - 1) / (n - 1)``
  for equal groups of ``c``.
* **group spread** -- for each group with two or more occurrences in the order,
  ``(last position - first position) / (len(order) - 1)`` (1: it spans the whole
  epoch), averaged over those groups. A uniform permutation gives, for a group of
  ``c``, ``(c - 1) (n + 1) / ((c + 1) (n - 1))`` exactly (the expected range of
  ``c`` positions drawn without replacement from ``0..n-1``).
* **consecutive-epoch rank correlation** -- Spearman's rho between the positions
  of each id in epoch ``e`` and in epoch ``e + 1``, averaged over consecutive
  pairs. Two independent uniform permutations give 0, with standard deviation
  ``1 / sqrt(n - 1)``.

Orders that are not permutations (importance sampling repeats some ids and
leaves others out) are measured as they are: adjacency over the pairs the order
has, spread over the positions of every occurrence, and the rank correlation over
the ids present in *both* epochs, each placed at its first occurrence and ranked
among those ids (no ties: first positions differ). The uniform expectations are
those of a permutation of every id of the grouping; compare a non-permutation
with uniform orders of its own kind instead.

Everything here returns plain Python numbers (never numpy scalars), so results go
into JSON as they are.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.errors import HotsetError

__all__ = [
    "Locality",
    "epoch_rank_correlation",
    "group_spread",
    "measure",
    "same_group_adjacency",
    "uniform",
    "uniform_adjacency",
    "uniform_rank_correlation_sd",
    "uniform_spread",
]


def _groups(group_of: npt.ArrayLike) -> IntArray:
    """``group_of`` as a 1-D int64 array of non-negative group ids, or a named error."""
    arr = np.asarray(group_of)
    if arr.ndim != 1 or arr.size == 0:
        raise HotsetError(f"group_of: expected a non-empty 1-D array, got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise HotsetError(f"group_of: expected integer group ids, got dtype {arr.dtype}")
    out = arr.astype(np.int64)
    if int(out.min()) < 0:
        raise HotsetError(f"group_of: group ids must be >= 0, got {int(out.min())}")
    return out


def _order(order: npt.ArrayLike, n: int, name: str = "order") -> IntArray:
    """``order`` as a 1-D int64 array of at least two ids in ``0..n-1``, or a named error."""
    arr = np.asarray(order)
    if arr.ndim != 1 or len(arr) < 2:
        raise HotsetError(f"{name}: expected a 1-D order of at least 2 ids, got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise HotsetError(f"{name}: expected integer ids, got dtype {arr.dtype}")
    out = arr.astype(np.int64)
    low, high = int(out.min()), int(out.max())
    if low < 0 or high >= n:
        bad = low if low < 0 else high
        raise HotsetError(f"{name}: id {bad} is outside the grouping's ids 0..{n - 1}")
    return out


def same_group_adjacency(order: npt.ArrayLike, group_of: npt.ArrayLike) -> float:
    """The share of consecutive pairs of ``order`` whose ids share a group."""
    groups = _groups(group_of)
    g = groups[_order(order, len(groups))]
    return float(np.mean(g[1:] == g[:-1]))


def group_spread(order: npt.ArrayLike, group_of: npt.ArrayLike) -> float | None:
    """Mean over groups occurring twice or more of (last - first position) / (len - 1).

    None when no group occurs twice (groups of one id each: nothing to spread).
    """
    groups = _groups(group_of)
    g = groups[_order(order, len(groups))]
    by_group = np.argsort(g, kind="stable")  # positions stay increasing within a group
    sorted_g = g[by_group]
    starts = np.flatnonzero(np.r_[True, sorted_g[1:] != sorted_g[:-1]])
    ends = np.r_[starts[1:], len(g)] - 1
    several = ends > starts
    if not several.any():
        return None
    ranges = by_group[ends[several]] - by_group[starts[several]]
    return float(np.mean(ranges) / (len(g) - 1))


def _first_positions(order: IntArray) -> dict[int, int]:
    """Each id of ``order`` -> the position of its first occurrence."""
    ids, first = np.unique(order, return_index=True)
    return dict(zip(ids.tolist(), first.tolist(), strict=True))


def epoch_rank_correlation(first: npt.ArrayLike, second: npt.ArrayLike) -> float | None:
    """Spearman's rho between the positions of the ids present in both orders.

    Each id is placed at its first occurrence; positions are ranked among the
    common ids. None with fewer than 3 common ids (no correlation to speak of).
    """
    a = _order(first, _bound(first), "first")
    b = _order(second, _bound(second), "second")
    pa, pb = _first_positions(a), _first_positions(b)
    common = np.array(sorted(pa.keys() & pb.keys()), dtype=np.int64)
    if len(common) < 3:
        return None
    ra = np.argsort(np.argsort([pa[i] for i in common.tolist()])).astype(np.float64)
    rb = np.argsort(np.argsort([pb[i] for i in common.tolist()])).astype(np.float64)
    ra -= ra.mean()
    rb -= rb.mean()
    return float((ra @ rb) / math.sqrt(float(ra @ ra) * float(rb @ rb)))


def _bound(order: npt.ArrayLike) -> int:
    """An id bound that accepts every non-negative id of ``order`` (no grouping to check)."""
    arr = np.asarray(order)
    return int(arr.max()) + 1 if arr.size and arr.dtype.kind in "iu" else 1


def uniform_adjacency(group_of: npt.ArrayLike) -> float:
    """Same-group adjacency of a uniform permutation of every id: exact, not estimated."""
    groups = _groups(group_of)
    n = len(groups)
    if n < 2:
        raise HotsetError("group_of: a permutation of fewer than 2 ids has no pairs")
    sizes = np.bincount(groups).astype(np.float64)
    return float((sizes * (sizes - 1)).sum() / (n * (n - 1)))


def uniform_spread(group_of: npt.ArrayLike) -> float | None:
    """Group spread of a uniform permutation of every id (exact); None: no group of 2."""
    groups = _groups(group_of)
    n = len(groups)
    sizes = np.bincount(groups)
    sizes = sizes[sizes >= 2].astype(np.float64)
    if not len(sizes):
        return None
    return float(np.mean((sizes - 1) * (n + 1) / ((sizes + 1) * (n - 1))))


def uniform_rank_correlation_sd(n: int) -> float:
    """Standard deviation of Spearman's rho between two independent permutations of ``n``."""
    if n < 3:
        raise HotsetError(f"n: a rank correlation needs at least 3 ids, got {n}")
    return 1.0 / math.sqrt(n - 1)


@dataclass(frozen=True)
class Locality:
    """The three statistics of some epochs' orders (means over epochs / consecutive pairs)."""

    adjacency: float
    spread: float | None
    rank_correlation: float | None
    """None with a single epoch (no consecutive pair) or too few common ids."""
    epochs: int

    def as_dict(self) -> dict[str, float | int | None]:
        """Plain numbers, named as the benchmarks' columns."""
        return {
            "same_chunk_adjacency": self.adjacency,
            "chunk_spread": self.spread,
            "epoch_rank_corr": self.rank_correlation,
            "epochs": self.epochs,
        }


def measure(epochs: Sequence[npt.ArrayLike], group_of: npt.ArrayLike) -> Locality:
    """The statistics of consecutive epochs' orders under one grouping (see the module)."""
    if not epochs:
        raise HotsetError("epochs: give at least one epoch's order")
    groups = _groups(group_of)
    adjacency = [same_group_adjacency(o, groups) for o in epochs]
    spreads = [s for o in epochs if (s := group_spread(o, groups)) is not None]
    rhos = [
        r for a, b in itertools.pairwise(epochs) if (r := epoch_rank_correlation(a, b)) is not None
    ]
    return Locality(
        adjacency=float(np.mean(adjacency)),
        spread=float(np.mean(spreads)) if spreads else None,
        rank_correlation=float(np.mean(rhos)) if rhos else None,
        epochs=len(epochs),
    )


def uniform(group_of: npt.ArrayLike, *, epochs: int = 2) -> Locality:
    """What independent uniform permutations of every id give, in expectation (exact)."""
    return Locality(
        adjacency=uniform_adjacency(group_of),
        spread=uniform_spread(group_of),
        rank_correlation=0.0 if epochs >= 2 else None,
        epochs=epochs,
    )
