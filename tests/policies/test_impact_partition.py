"""ImPACT's set S split between data-parallel ranks (§III-E), driven in one process:
each rank buffers and re-evaluates ``sorted(S)[rank::world]``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from budget_support import check_budget
from hotset.engine.budget import Budget
from hotset.engine.planner import Planner
from hotset.errors import HotsetError
from hotset.importance.merge import RankFeedback, merge_rank_feedback
from hotset.policies.impact import ImpactCache
from hotset.systems.base import System
from hotset.systems.registry import build_system

N, SIZE, BATCH, EPOCHS = 400, 10, 16, 9


def _system() -> System:
    sizes = np.full(N, SIZE, dtype=np.int64)
    budget = Budget(capacity_bytes=int(0.2 * N * SIZE), sizes=sizes)
    return build_system("impact", n=N, budget=budget, seed=4, batch_size=BATCH, window=64)


def _loss(ids: np.ndarray, epoch: int) -> np.ndarray:
    """Mostly stable difficulty; a tenth of the ids swing from epoch to epoch."""
    base = ((ids * 7919) % 101) / 100.0 + 0.05
    return base + (ids % 10 == 0) * ((ids * 31 + epoch * 17) % 7) / 3.0


def _eval_loss(ids: np.ndarray, epoch: int) -> np.ndarray:
    return 3.0 + ((ids * 13 + epoch) % 11) / 10.0


def _drive(world: int) -> list[dict[str, Any]]:
    """``world`` ranks in lockstep, sharing re-evaluations and feedback as the loader does."""
    systems = [_system() for _ in range(world)]
    planners = [Planner(s, n=N, batch_size=BATCH, lag=0) for s in systems]
    rows: list[dict[str, Any]] = []
    for epoch in range(EPOCHS):
        parts = []  # what each rank re-evaluates: its part of S
        for rank, system in enumerate(systems):
            system.policy.bind_rank(rank, world)
            ids = system.policy.to_evaluate()
            parts.append((ids, _eval_loss(ids, epoch)))
        for rank, planner in enumerate(planners):
            planner.evaluate(
                epoch,
                lambda ids, e=epoch: _eval_loss(ids, e),
                rank=rank,
                world_size=world,
                share=lambda _i, _l, got=parts: got,
            )
        starts = [s.table.state_dict() for s in systems]
        for rank, planner in enumerate(planners):
            planner.begin(epoch, rank=rank, world_size=world)
            for plan in planner.plans():
                check_budget(planner.system.policy)
                planner.give(plan.index, plan.served, _loss(plan.served, epoch))
            planner.feedback.apply(None, epoch=epoch, at=planner.planned)
        logs: list[RankFeedback] = [
            {
                "ids": [f.ids for f in p.feedback.log],
                "losses": [f.losses for f in p.feedback.log],
                "val": None,
            }
            for p in planners
        ]
        for rank, planner in enumerate(planners):
            planner.finish(
                val_accuracy=None,
                share=lambda _log, _v, r=rank, got=logs, at=starts, e=epoch: merge_rank_feedback(
                    systems[r], got, start_table=at[r], epoch=e
                ),
            )
        rows.append(
            {
                "evaluated": [p[0].tolist() for p in parts],
                "orders": [p.order.tolist() for p in planners],
                "losses": [s.table.snapshot().losses for s in systems],
                "s": [
                    None if s.policy.tracker.s_ids is None else s.policy.tracker.s_ids.tolist()
                    for s in systems
                ],  # type: ignore[attr-defined]
                "rooms": [s.policy.full_total - s.policy.total for s in systems],  # type: ignore[attr-defined]
            }
        )
    return rows


@pytest.mark.parametrize("world", [2, 4])
def test_ranks_re_evaluate_disjoint_parts_whose_union_is_s(world: int) -> None:
    rows = _drive(world)
    single = _drive(1)
    one = single[-1]["s"][0]
    assert one, "the warm-up must end on this workload"
    assert single[-1]["evaluated"][0] == one  # one rank: all of S, as before
    s = rows[-1]["s"][0]
    assert all(row["s"] == [s] * world for row in rows[-3:])  # one S, on every rank
    # S sized per node as the paper sizes it: every rank's part is s_share of its own
    # cache (what one rank's whole S is), so S is world times one rank's (it was one
    # rank's S split world ways before #43)
    assert len(s) == world * len(one)
    filled = 0
    for row in rows:
        parts = [set(p) for p in row["evaluated"]]
        for rank, part in enumerate(parts):
            assert part <= set(s[rank::world])
        assert sum(len(p) for p in parts) == len(set().union(*parts))  # disjoint
        filled += set().union(*parts) == set(s)
        # one table, one global order: every rank's table and shard agree
        for other in row["losses"][1:]:
            np.testing.assert_array_equal(other, row["losses"][0])
    assert filled >= 2
    # each rank's buffer holds its part, s_share of its cache as one rank's does, and
    # what its warm-up cache held of other ranks' parts
    for rank, room in enumerate(rows[-1]["rooms"]):
        assert len(s[rank::world]) == len(one)
        assert single[-1]["rooms"][0] == SIZE * len(one) <= room


def test_the_partition_is_deterministic() -> None:
    first, again = _drive(2), _drive(2)
    for a, b in zip(first, again, strict=True):
        assert a["evaluated"] == b["evaluated"] and a["orders"] == b["orders"]


def test_bind_rank_names_a_bad_rank() -> None:
    policy = _system().policy
    assert isinstance(policy, ImpactCache)
    with pytest.raises(HotsetError, match="rank 2 of world_size 2"):
        policy.bind_rank(2, 2)
    with pytest.raises(HotsetError, match="world_size must be an int"):
        policy.bind_rank(0, 2.0)  # type: ignore[arg-type]
