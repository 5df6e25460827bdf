"""Quiver's failure masking (§4.8) as the policy sees it: reported losses are inputs.

The driver reports the cache entries a batch failed to read
(``Planner.cache_lost``); the policy then plans no hit on a lost entry or its
unit-mates, keeps them pending, and loads their units back with the chunk cycle.
Every planned id is still served exactly once per epoch, and the same reports at
the same points give the same decisions (no clock, no randomness).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from budget_support import check_budget
from hotset.engine.budget import Budget
from hotset.engine.outcome import Outcome
from hotset.engine.planner import Planner
from hotset.errors import HotsetError
from hotset.policies.quiver import Quiver
from hotset.systems.registry import build_system
from layout_support import make_layout

N, BATCH, CHUNK = 600, 16, 8


def _planner(mask: bool) -> tuple[Planner, Quiver, np.ndarray, Any]:
    sizes = np.random.default_rng(1).integers(10, 60, N).astype(np.int64)
    layout = make_layout(sizes, CHUNK, seed=2)
    budget = Budget(capacity_bytes=int(0.25 * sizes.sum()), sizes=sizes)
    system = build_system(
        f"quiver[mask_failures={mask}]",
        n=N,
        budget=budget,
        seed=3,
        batch_size=BATCH,
        layout=layout,
    )
    policy = system.policy
    assert isinstance(policy, Quiver)
    return Planner(system, n=N, batch_size=BATCH, lag=0, sizes=sizes), policy, sizes, layout


def _epochs(mask: bool) -> tuple[list[list[tuple[int, int, int]]], Quiver, int]:
    """Three epochs; in epoch 1, after batch 5, half of what the cache holds is
    reported lost one batch at a time (as batches that read it would). The decisions
    (requested, outcome, served) per epoch, the policy, and the hits planned on
    entries already reported lost."""
    planner, policy, sizes, layout = _planner(mask)
    decisions: list[list[tuple[int, int, int]]] = []
    gone: set[int] = set()
    hits_on_gone = 0
    for epoch in range(3):
        planner.begin(epoch)
        rows: list[tuple[int, int, int]] = []
        for plan in planner.plans():
            cached = set(plan.served[plan.outcomes <= Outcome.SUBSTITUTION].tolist())
            for u in plan.unit_reads.tolist():  # served from the unit read in the batch
                cached.difference_update(layout.members(u).tolist())
            hits_on_gone += len(gone & cached)
            gone.difference_update(plan.admitted.tolist())  # loaded back: there again
            rows += zip(
                plan.requested.tolist(), plan.outcomes.tolist(), plan.served.tolist(), strict=True
            )
            check_budget(policy)
            assert policy.used_bytes == int(sizes[list(policy.resident())].sum())
            if epoch == 1 and plan.index == 5:
                lost = sorted(policy.resident())[::2]
                gone.update(lost)
                planner.cache_lost(lost, False)
                if mask:  # the lost ids and their unit-mates are no longer held
                    assert not gone & policy.resident()
        assert sorted(s for _, _, s in rows) == list(range(N)), f"epoch {epoch}: not once"
        decisions.append(rows)
        planner.finish(val_accuracy=None)
    return decisions, policy, hits_on_gone


def test_lost_entries_are_substituted_not_planned_as_hits_and_every_id_served_once() -> None:
    masked, policy, hits_masked = _epochs(True)
    plain, _, hits_plain = _epochs(False)
    assert hits_plain > 0, "without masking, lost entries are planned as cache reads"
    assert hits_masked == 0, hits_masked
    assert policy.summary()["masked_losses"] > 0
    assert masked[0] == plain[0], "the healthy epoch is decided alike"
    assert _epochs(True)[0] == masked, "the same reports give the same decisions"


def test_an_unreachable_cache_changes_nothing() -> None:
    """A cache that does not answer leaves nothing to substitute from or load into."""
    planner, policy, _, _ = _planner(True)
    planner.begin(0)
    next(planner.plans())
    held = policy.resident()
    planner.cache_lost(sorted(held), True)
    assert policy.resident() == held


def test_mask_failures_must_be_a_bool() -> None:
    sizes = np.full(10, 10, dtype=np.int64)
    with pytest.raises(HotsetError, match="mask_failures"):
        Quiver(Budget(capacity_bytes=50, sizes=sizes), mask_failures=1)  # type: ignore[arg-type]
