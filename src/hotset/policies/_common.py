"""Small pieces every classic policy shares.

Turning a :class:`~hotset.policies.base.Budget` into two plain integer limits and
validating ids once per trace (instead of once per access) keeps the replay
loops of each policy tight.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.outcome import Outcome
from hotset.errors import HotsetError

#: stands for "no limit" in the integer comparisons of the fast loops
UNBOUNDED = sys.maxsize

_HIT = int(Outcome.HIT)
_MISS = int(Outcome.MISS)


def budget_limits(budget: Budget) -> tuple[int, int]:
    """``(capacity_bytes, capacity_items)`` with a missing limit as :data:`UNBOUNDED`."""
    cap_b = UNBOUNDED if budget.capacity_bytes is None else int(budget.capacity_bytes)
    cap_i = UNBOUNDED if budget.capacity_items is None else int(budget.capacity_items)
    return cap_b, cap_i


def size_list(budget: Budget) -> list[int] | None:
    """The per-id sizes as a Python list (list indexing is the fastest lookup in a loop)."""
    if budget.sizes is None:
        return None
    return [int(s) for s in np.asarray(budget.sizes).tolist()]


def check_id(sid: object, sizes: list[int] | None) -> int:
    """One access's id as an int, rejecting what would silently index the wrong size."""
    if isinstance(sid, bool) or not isinstance(sid, int | np.integer):
        raise HotsetError(f"sample id must be an integer, got {sid!r}")
    value = int(sid)
    if value < 0:
        raise HotsetError(f"sample id must be non-negative, got {value}")
    if sizes is not None and value >= len(sizes):
        raise HotsetError(f"sample id {value} has no size (sizes cover ids 0..{len(sizes) - 1})")
    return value


def validate_trace(trace: object, sizes: list[int] | None) -> IntArray:
    """A whole trace as a 1-D int64 array, validated once (the fast loops trust it)."""
    arr = np.asarray(trace)
    if arr.ndim != 1:
        raise HotsetError(f"trace must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        return np.empty(0, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise HotsetError(f"trace ids must be integers, got dtype {arr.dtype}")
    low, high = int(arr.min()), int(arr.max())
    if low < 0:
        raise HotsetError(f"sample id must be non-negative, got {low}")
    if sizes is not None and high >= len(sizes):
        raise HotsetError(f"sample id {high} has no size (sizes cover ids 0..{len(sizes) - 1})")
    return arr.astype(np.int64, copy=False)


def check_trace(trace: object, sizes: list[int] | None) -> list[int]:
    """:func:`validate_trace` as a list of ints (list iteration is what the loops want)."""
    ids: list[int] = validate_trace(trace, sizes).tolist()
    return ids


def outcomes(buf: bytearray) -> npt.NDArray[np.int8]:
    """A replay's outcome buffer as the int8 array :meth:`Policy.replay` returns."""
    return np.frombuffer(buf, dtype=np.int8)


def check_state_name(state: Mapping[str, Any], name: str) -> None:
    if state.get("policy") != name:
        raise HotsetError(f"state is for policy {state.get('policy')!r}, not {name!r}")
