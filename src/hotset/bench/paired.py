"""A seed-paired difference with its standard error and 95% interval.

Why: a benchmark that compares two systems over a few seeds (``bench traingrid``)
must say whether a difference is larger than the run-to-run noise. Runs at one seed
share their initial weights, their split and their target, so the difference at each
seed removes what the seed moves in both; the spread of those differences over the
seeds is the noise the mean difference carries. The interval is Student's t for
``n - 1`` degrees of freedom (a table, so no SciPy at run time).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

#: two-sided 95% quantiles of Student's t, for 1..20 degrees of freedom
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086)  # fmt: skip
#: beyond the table, the quantile at the table's end (wider than the true one: safe)
_T95_TAIL = ((30, 2.086), (60, 2.042), (120, 2.000))


def t95(df: int) -> float:
    """The two-sided 95% quantile of Student's t with ``df`` degrees of freedom (>= 1);
    beyond 20, a value at least as large as the true one."""
    if df < 1:
        raise ValueError(f"t95: degrees of freedom must be >= 1, got {df}")
    if df <= len(_T95):
        return _T95[df - 1]
    for upto, value in _T95_TAIL:
        if df <= upto:
            return value
    return 1.980


@dataclass(frozen=True)
class Paired:
    """The mean of ``n`` paired differences, its standard error and 95% interval
    (None where ``n`` is too small to say: no pair, or one for the spread)."""

    n: int
    mean: float | None
    se: float | None
    low: float | None
    high: float | None

    @property
    def above_zero(self) -> bool:
        """The whole interval lies above zero: a difference larger than the noise."""
        return self.low is not None and self.low > 0

    def as_dict(self, prefix: str, digits: int = 4) -> dict[str, float | int | None]:
        """The fields as ``{prefix}_mean``, ``_se``, ``_low``, ``_high`` and ``_n``."""

        def r(v: float | None) -> float | None:
            return None if v is None else round(v, digits)

        return {f"{prefix}_mean": r(self.mean), f"{prefix}_se": r(self.se),
                f"{prefix}_low": r(self.low), f"{prefix}_high": r(self.high),
                f"{prefix}_n": self.n}  # fmt: skip


def paired(diffs: Sequence[float]) -> Paired:
    """The mean of ``diffs`` (one per seed: a system's figure minus the reference's at
    that seed) with its standard error and 95% interval."""
    values = [float(d) for d in diffs]
    if any(not math.isfinite(v) for v in values):
        raise ValueError(f"paired: every difference must be finite, got {values!r}")
    n = len(values)
    if n == 0:
        return Paired(0, None, None, None, None)
    mean = statistics.fmean(values)
    if n == 1:
        return Paired(1, mean, None, None, None)
    se = statistics.stdev(values) / math.sqrt(n)
    half = t95(n - 1) * se
    return Paired(n, mean, se, mean - half, mean + half)


__all__ = ["Paired", "paired", "t95"]
