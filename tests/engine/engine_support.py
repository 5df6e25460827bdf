"""The one round-trip helper every registered policy and system is held to (no pytest here).

Like torchdata's ``test/nodes/utils.py``: a new policy or system is covered the
day it is registered, because the contract tests parametrise over the
registries and call these helpers.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from budget_support import check_budget
from hotset.engine.planner import Planner
from hotset.policies.base import Budget, Policy
from hotset.systems.base import System
from hotset.systems.registry import build_system
from layout_support import make_layout


def loss_of(ids: Any, epoch: int) -> np.ndarray:
    """A deterministic stand-in for per-sample losses: a hash of (id, epoch) in [0.1, 1.1)."""
    arr = np.asarray(ids, dtype=np.int64)
    return ((arr * 2654435761 + epoch * 40503) % 1000) / 1000.0 + 0.1


def build(
    name: str, *, n: int, sizes: np.ndarray, frac: float, seed: int, batch_size: int
) -> System:
    capacity = max(int(frac * sizes.sum()), int(sizes.max()) * 8)
    return build_system(
        name,
        n=n,
        budget=Budget(capacity_bytes=capacity, sizes=sizes),
        seed=seed,
        batch_size=batch_size,
        layout=make_layout(sizes, 8),
    )


def checked(policy: Policy) -> None:
    """Make every access of ``policy`` check the budget invariants right after it."""
    access = policy.access

    def access_and_check(sid: int) -> Any:
        decision = access(sid)
        check_budget(policy)
        return decision

    policy.access = access_and_check  # type: ignore[method-assign]


def run_epochs(
    system: System,
    planner: Planner,
    epochs: range,
    *,
    feedback: bool = True,
    first_batch: int = 0,
) -> list[tuple[int, int, int, bool, tuple[int, ...]]]:
    """Plan ``epochs`` (the first from batch ``first_batch``, already begun if > 0); every row."""
    rows: list[tuple[int, int, int, bool, tuple[int, ...]]] = []
    for epoch in epochs:
        if not (epoch == epochs[0] and first_batch):
            planner.begin(epoch)
        start = len(planner.log.rows())
        for plan in planner.plans():
            if feedback and system.capabilities.learns:
                planner.give(plan.index, plan.served, loss_of(plan.served, epoch))
        rows += planner.log.rows()[start:]
        planner.finish(val_accuracy=None)
    return rows


def json_round_trip(state: Any) -> Any:
    """A state through JSON text and back (numpy arrays become lists, as a checkpoint would)."""

    def default(value: Any) -> Any:
        if isinstance(value, np.ndarray):
            return value.tolist()
        if isinstance(value, np.integer | np.floating | np.bool_):
            return value.item()
        raise TypeError(f"not JSON-serialisable: {type(value).__name__}")

    return json.loads(json.dumps(state, default=default))
