"""Can an order be told from a uniformly random permutation? (no pytest here)

Two tests of different power:

* :func:`randomness_p_values` -- first moments only: is each id equally likely at
  each position (a chi-square of positions) and uncorrelated with its position?
  Cheap on many short runs (16 ids), blind to chunk locality: an order that
  shuffles the chunks, shuffles inside each and reads chunk by chunk passes it.
* :func:`locality_verdict` -- the property that matters for chunk-reading systems:
  same-chunk adjacency, chunk-mate spread and the rank correlation of consecutive
  epochs (:mod:`hotset.sim.locality`), each compared with the same statistic of
  ``draws`` sets of independent uniform permutations of the same shape (a Monte
  Carlo test: exact level, whatever the statistic's distribution). Each p-value is
  two-sided; the verdict rejects when any is at most ``alpha / 3`` (Bonferroni),
  so a uniform order is rejected with probability at most ``alpha`` (default
  :data:`ALPHA`). The default ``draws`` is the fewest that can reach ``alpha / 3``.
  Use it at a size with power: 2,000 ids in chunks of 16 over 4 epochs tells a
  DIESEL-like order from uniform with every statistic at its extreme.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from hotset.sim.locality import Locality, measure, uniform

#: family-wise false-rejection rate of :func:`locality_verdict`
ALPHA = 1e-3
#: the statistics :func:`locality_verdict` tests, by their :meth:`Locality.as_dict` names
STATISTICS = ("same_chunk_adjacency", "chunk_spread", "epoch_rank_corr")


def randomness_p_values(got: np.ndarray) -> tuple[float, float]:
    """(rank-correlation p, per-position chi-square p) against uniform permutations."""
    runs, n = got.shape
    positions = np.tile(np.arange(n), runs)
    rho = np.array([stats.spearmanr(np.arange(n), row).statistic for row in got])
    # under uniformity each rho has mean 0 and variance 1 / (n - 1)
    z = rho.mean() / np.sqrt(1.0 / (n - 1) / runs)
    p_rho = float(2 * stats.norm.sf(abs(z)))
    counts = np.zeros((n, n))
    np.add.at(counts, (positions, got.ravel()), 1)
    chi2 = float(((counts - runs / n) ** 2 / (runs / n)).sum())
    p_chi = float(stats.chi2.sf(chi2, df=(n - 1) ** 2))
    return p_rho, p_chi


@dataclass(frozen=True)
class Verdict:
    """The observed statistics, their uniform expectations and Monte Carlo p-values."""

    observed: Locality
    expected: Locality
    p_values: dict[str, float]
    alpha: float

    @property
    def rejects(self) -> bool:
        """Whether the order is told from uniform permutations (family-wise rate ``alpha``)."""
        return min(self.p_values.values()) <= self.alpha / len(self.p_values)

    def describe(self) -> str:
        seen, want = self.observed.as_dict(), self.expected.as_dict()
        parts = [
            f"{k}={_fmt(seen[k])} (uniform {_fmt(want[k])}, p={p:.2g})"
            for k, p in self.p_values.items()
        ]
        return ", ".join(parts) + f"; rejects at alpha={self.alpha:g}: {self.rejects}"


def _fmt(value: object) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def locality_verdict(
    orders: Sequence[np.ndarray],
    group_of: np.ndarray,
    *,
    alpha: float = ALPHA,
    draws: int | None = None,
    seed: int = 0,
) -> Verdict:
    """Test consecutive epochs' ``orders`` (permutations of ``range(len(group_of))``)
    against independent uniform permutations; see the module docstring."""
    groups = np.asarray(group_of, dtype=np.int64)
    n = len(groups)
    for e, order in enumerate(orders):
        if sorted(np.asarray(order).tolist()) != list(range(n)):
            raise AssertionError(f"epoch {e}: not a permutation of 0..{n - 1}")
    tested = STATISTICS if len(orders) >= 2 else STATISTICS[:2]
    if draws is None:
        draws = math.ceil(len(tested) / alpha) - 1
    null = uniform_null(groups.tobytes(), len(orders), draws, seed)
    observed = measure(orders, groups)
    expected = uniform(groups, epochs=len(orders))
    seen, centre = observed.as_dict(), expected.as_dict()
    p_values = {}
    for key in tested:
        value, mid = seen[key], centre[key]
        assert isinstance(value, float) and isinstance(mid, float), (key, value, mid)
        far = np.abs(null[key] - mid) >= abs(value - mid) - 1e-12
        p_values[key] = (1 + int(far.sum())) / (draws + 1)
    return Verdict(observed, expected, p_values, alpha)


@functools.lru_cache(maxsize=16)
def uniform_null(groups_bytes: bytes, epochs: int, draws: int, seed: int) -> dict[str, np.ndarray]:
    """Each statistic of ``draws`` sets of ``epochs`` independent uniform permutations
    (vectorized; the same definitions as :mod:`hotset.sim.locality` for permutations).
    Cached: a null depends on the grouping and the shape only, never on the order tested."""
    groups = np.frombuffer(groups_bytes, dtype=np.int64)
    n = len(groups)
    rng = np.random.default_rng([seed, 0x10CA1])
    by_group = np.argsort(groups, kind="stable")
    sorted_g = groups[by_group]
    starts = np.flatnonzero(np.r_[True, sorted_g[1:] != sorted_g[:-1]])
    several = np.diff(np.r_[starts, n]) >= 2
    out: dict[str, list[np.ndarray]] = {key: [] for key in STATISTICS}
    block = max(1, 200_000 // (n * epochs))
    for lo in range(0, draws, block):
        b = min(block, draws - lo)
        perms = rng.permuted(np.tile(np.arange(n), (b * epochs, 1)), axis=1)
        g = groups[perms]
        out["same_chunk_adjacency"].append((g[:, 1:] == g[:, :-1]).mean(1).reshape(b, epochs))
        pos = np.argsort(perms, axis=1)  # pos[r, id]: the id's position in order r
        mine = pos[:, by_group]
        ranges = np.maximum.reduceat(mine, starts, axis=1) - np.minimum.reduceat(
            mine, starts, axis=1
        )
        spread = ranges[:, several].mean(1) / (n - 1)
        out["chunk_spread"].append(spread.reshape(b, epochs))
        if epochs >= 2:
            per = pos.reshape(b, epochs, n).astype(np.float64)
            d2 = ((per[:, 1:] - per[:, :-1]) ** 2).sum(-1)
            out["epoch_rank_corr"].append(1 - 6 * d2 / (n * (n * n - 1.0)))
    return {k: np.concatenate(v).mean(1) for k, v in out.items() if v}
