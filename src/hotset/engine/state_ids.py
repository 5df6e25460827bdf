"""Sample ids read back from a saved state: integers in range, or an error naming them.

A checkpoint is data from disk. Its id lists went through ``np.asarray(..., int64)``
and indexing before, which takes what it is given: ``[0.5]`` became id 0, ``-1`` the
last id (numpy wraps a negative index), ``{}`` an empty list. Each of those restored
a state nobody saved. Every id list a restore reads goes through :func:`state_ids`
first, so a damaged one is refused by name before anything is changed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hotset.engine.arrays import IntArray
from hotset.errors import HotsetError

__all__ = ["state_ids"]


def state_ids(value: Any, n: int | None, what: str) -> IntArray:
    """``value`` as a 1-D int64 array of ids in ``[0, n)`` (``n`` None: any id >= 0).

    A list, tuple or 1-D integer array only: a dict, a set, a string, floats, bools
    or a nested list is a :class:`HotsetError` naming ``what`` and the bad value.
    """
    if not isinstance(value, list | tuple | np.ndarray):
        raise HotsetError(
            f"{what} must be a list of sample ids, got {type(value).__name__} {value!r:.60}"
        )
    if isinstance(value, np.ndarray):
        arr = value
    elif any(isinstance(v, bool) or not isinstance(v, int | np.integer) for v in value):
        bad = next(v for v in value if isinstance(v, bool) or not isinstance(v, int | np.integer))
        raise HotsetError(f"{what} must hold integer sample ids, got {bad!r:.60}")
    else:
        arr = np.asarray(value if value else np.zeros(0, np.int64))
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise HotsetError(
            f"{what} must be a 1-D list of integer sample ids, got shape {arr.shape} of {arr.dtype}"
        )
    if arr.size and arr.dtype.kind == "u" and int(arr.max()) > np.iinfo(np.int64).max:
        raise HotsetError(f"{what} holds id {int(arr.max())}, beyond any data set")
    ids = arr.astype(np.int64, copy=True)
    if ids.size and int(ids.min()) < 0:
        raise HotsetError(f"{what} holds the negative id {int(ids.min())}")
    if n is not None and ids.size and int(ids.max()) >= n:
        raise HotsetError(f"{what} holds id {int(ids.max())}, outside 0..{n - 1}")
    return ids
