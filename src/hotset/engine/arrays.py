"""The array aliases of the engine's contract (ids are int64 everywhere).

One alias, named once, so that a policy, a driver and the planner agree on what
"an array of ids" is without importing each other.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: sample ids, unit ids, counts: always int64
IntArray = npt.NDArray[np.int64]

__all__ = ["IntArray"]
