"""Per-sample losses from a fixed model of difficulty, for simulations that train nothing.

Why: a learning system's order depends on the losses it is fed. At the scales
the multi-node simulator is for (many nodes, ImageNet-sized data sets) no model
can be trained here, yet SHADE or iCACHE fed uniform or random losses would be
a different system. This model keeps the two properties their decisions rest
on: samples differ (some stay hard for long), and a sample's loss falls as it
is trained. It is a model, and every result that uses it says so.

``loss_i = d_i * exp(-rate * t_i) * (1 + noise)`` with ``d_i`` drawn once per
sample from a seeded log-normal (``sigma``), ``t_i`` the times sample ``i`` has
been trained so far, and ``noise`` a seeded normal of scale ``jitter`` drawn
anew per call (clipped at zero). Deterministic: the same calls in the same order
give the same losses.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hotset.errors import HotsetError

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


class SyntheticLosses:
    """Callable: the ids a step trained -> their losses; each call counts as training them."""

    def __init__(
        self,
        n: int,
        *,
        seed: int,
        rate: float = 0.3,
        sigma: float = 1.0,
        jitter: float = 0.1,
    ) -> None:
        if n < 1:
            raise HotsetError(f"synthetic losses: n must be positive, got {n}")
        for name, value in (("rate", rate), ("sigma", sigma), ("jitter", jitter)):
            if not (np.isfinite(value) and value >= 0):
                raise HotsetError(f"synthetic losses: {name} must be >= 0, got {value!r}")
        self.rate, self.jitter = rate, jitter
        self.difficulty = np.random.default_rng([seed, 0x1055]).lognormal(0.0, sigma, n)
        self.trained = np.zeros(n, dtype=np.int64)
        self._calls = 0
        self._seed = seed

    def __call__(self, ids: IntArray) -> FloatArray:
        ids = np.asarray(ids, dtype=np.int64)
        rng = np.random.default_rng([self._seed, 0x1055, self._calls])
        self._calls += 1
        base = self.difficulty[ids] * np.exp(-self.rate * self.trained[ids])
        np.add.at(self.trained, ids, 1)
        noise = rng.normal(0.0, self.jitter, len(ids)) if self.jitter else 0.0
        return np.asarray(np.clip(base * (1.0 + noise), 0.0, None), dtype=np.float64)
