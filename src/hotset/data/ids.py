"""Sample ids a user names (a subset, a split): integers, distinct, in range, or an error.

A cast alone would truncate ``1.5`` to ``1`` and turn ``True`` into ``1``: a
silent wrong subset, trained or evaluated as if it were the one asked for. So
every value is checked to be an integer before it becomes an id, and the first
one that is not is named.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.errors import HotsetError


def _is_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def subset_ids(indices: Any, n: int) -> npt.NDArray[np.int64]:
    """``indices`` as distinct int64 ids in ``0..n-1``, refusing anything else by name.

    A list or tuple is checked element by element (numpy would promote
    ``[True, 4]`` to integers).
    """
    try:
        arr = np.asarray(indices).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise HotsetError(
            f"subset: indices must be integer ids, got {indices!r:.80} ({exc})"
        ) from None
    bad: Any = None
    if isinstance(indices, list | tuple):
        bad = next((v for v in indices if not _is_int(v)), None)
    if bad is None and arr.size and arr.dtype.kind not in "iu":
        bad = next(v for v in arr.tolist() if not _is_int(v))
    if bad is not None:
        raise HotsetError(
            f"subset: indices must be integer ids in 0..{n - 1}, got {bad!r:.40} "
            f"({type(bad).__name__}) in {indices!r:.80}"
        )
    if arr.size == 0:
        raise HotsetError("subset: no indices given")
    if arr.dtype.kind == "u" and arr.max() > np.iinfo(np.int64).max:
        raise HotsetError(f"subset: indices must be ids in 0..{n - 1}, got {arr.max()}")
    idx = arr.astype(np.int64)
    if idx.min() < 0 or idx.max() >= n or len(np.unique(idx)) != len(idx):
        raise HotsetError(f"subset: indices must be distinct ids in 0..{n - 1}")
    return idx
