"""Can an order be told from a uniformly random permutation? (no pytest here)"""

from __future__ import annotations

import numpy as np
from scipy import stats


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
