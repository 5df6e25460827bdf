"""Partial unit reads (``Decision.group``): how the planner gathers, costs and checks them."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from hotset.engine.capabilities import Capabilities
from hotset.engine.planner import Planner
from hotset.errors import HotsetError
from hotset.importance.table import ImportanceTable
from hotset.policies.base import Budget, Decision, Outcome, Policy
from hotset.samplers.random import RandomSampler
from hotset.systems.base import System
from layout_support import make_layout

N = 32


class _Grouping(Policy):
    """Reads each miss with the next ``extra`` ids of ``unit_of(sid)`` in one request."""

    name: ClassVar[str] = "grouping"
    capabilities: ClassVar[Capabilities] = Capabilities(reads_units=True)

    def __init__(self, budget: Budget, *, extra: int, wrong: str = "") -> None:
        super().__init__(budget)
        self.extra, self.wrong = extra, wrong
        self.held: set[int] = set()

    def access(self, sid: int) -> Decision:
        assert self.layout is not None
        c = int(self.layout.chunk_of[sid])
        if sid in self.held:
            if self.wrong == "hit":
                return Decision(sid, Outcome.HIT, sid, group=c)
            return Decision(sid, Outcome.HIT, sid)
        mates = [int(m) for m in self.layout.members(c) if m != sid and m not in self.held]
        more = tuple(mates[: self.extra])
        if self.wrong == "outside":
            more = (*more, (sid + 8) % N)  # another chunk's id
        self.held.update(more)
        self.used_items += len(more)
        return Decision(sid, Outcome.MISS, sid, also_admitted=more, group=c)

    def __contains__(self, sid: object) -> bool:
        return sid in self.held

    def resident(self) -> frozenset[int]:
        return frozenset(self.held)


def _planner(policy: Policy) -> Planner:
    sizes = np.arange(10, 10 + N, dtype=np.int64)
    policy.attach_layout(make_layout(sizes, 8))
    system = System(
        name="grouping", sampler=RandomSampler(N, seed=1), policy=policy, table=ImportanceTable(N)
    )
    return Planner(system, n=N, batch_size=8, lag=0, sizes=sizes)


def test_a_group_is_one_request_for_all_its_ids_and_only_their_bytes() -> None:
    sizes = np.arange(10, 10 + N, dtype=np.int64)
    planner = _planner(_Grouping(Budget(capacity_items=N), extra=7))
    planner.begin(0)
    requests = 0
    for plan in planner.plans():
        assert set(np.concatenate([*plan.read_groups.values(), np.zeros(0, np.int64)])) == set(
            plan.reads.tolist()
        )
        assert plan.storage_requests == len(plan.read_groups)
        assert plan.storage_bytes == int(sizes[plan.reads].sum())
        assert set(plan.puts.tolist()) == set(plan.admitted.tolist())
        requests += plan.storage_requests
    assert requests == 4  # one request per chunk of 8: every member came with the first


@pytest.mark.parametrize(
    ("wrong", "match"),
    [("hit", "only a miss of the sample alone"), ("outside", "does not hold them")],
)
def test_a_group_the_engine_cannot_carry_out_is_refused(wrong: str, match: str) -> None:
    planner = _planner(_Grouping(Budget(capacity_items=N), extra=2, wrong=wrong))
    planner.begin(0)
    with pytest.raises(HotsetError, match=match):
        for _ in planner.plans():
            pass
