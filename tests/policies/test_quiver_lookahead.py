"""``quiver[lookahead=N]``: substitutes only from the next N batches of unused planned ids
(FAST'20 Algorithm 1 looks up 10 x a batch); the default, every pending id, is unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from hotset.engine.planner import Planner
from hotset.errors import HotsetError
from hotset.policies.base import Budget, Outcome
from hotset.policies.quiver import Quiver
from hotset.policies.quiver.window import UnusedPositions
from hotset.systems.base import System
from hotset.systems.registry import build_system
from layout_support import make_layout

N, BATCH = 1500, 16


def _system(**options: object) -> System:
    sizes = np.random.default_rng(5).integers(10, 60, N).astype(np.int64)
    layout = make_layout(sizes, 8, seed=6)
    budget = Budget(capacity_bytes=int(0.12 * sizes.sum()), sizes=sizes)
    return build_system(
        "quiver", n=N, budget=budget, seed=3, batch_size=BATCH, layout=layout, **options
    )


def test_the_window_finds_the_end_of_the_next_unused_positions() -> None:
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 64, 300):
        tree, used = UnusedPositions(n), np.zeros(n, dtype=bool)
        for pos in rng.permutation(n).tolist():
            for count in (1, 3, n):
                unused = np.flatnonzero(~used)
                want = int(unused[count - 1]) if count <= len(unused) else n - 1
                assert tree.end_of(count) == want, (n, count)
            tree.mark_used(pos)
            used[pos] = True


def test_substitutes_come_from_the_window_and_each_sample_is_trained_once() -> None:
    lookahead = 2
    system = _system(lookahead=lookahead)
    policy = system.policy
    assert isinstance(policy, Quiver)
    planner = Planner(system, n=N, batch_size=BATCH, lag=0, sizes=policy.budget.sizes)
    subs = 0
    for epoch in range(3):
        planner.begin(epoch)
        pending = list(planner.order.tolist())  # unused planned ids, in planned order
        served_all: list[int] = []
        for plan in planner.plans():
            for outcome, served in zip(plan.outcomes.tolist(), plan.served.tolist(), strict=True):
                if outcome == Outcome.SUBSTITUTION:
                    assert served in pending[: lookahead * BATCH]
                    subs += 1
                pending.remove(served)
                served_all.append(served)
        planner.finish(val_accuracy=None)
        assert sorted(served_all) == list(range(N)), f"epoch {epoch}"
    assert subs > 0


def _storage_requests(system: System) -> int:
    planner = Planner(system, n=N, batch_size=BATCH, lag=0, sizes=system.policy.budget.sizes)
    total = 0
    for epoch in range(3):
        planner.begin(epoch)
        total += sum(plan.storage_requests for plan in planner.plans())
        planner.finish(val_accuracy=None)
    return total


def test_a_narrower_window_reads_more_and_the_default_looks_at_everything() -> None:
    assert _system().policy.lookahead is None  # type: ignore[attr-defined]
    whole = _storage_requests(_system())
    assert _storage_requests(_system(lookahead=10_000)) == whole  # a window past the epoch
    assert _storage_requests(_system(lookahead=1)) > whole


def test_bad_lookaheads_are_named() -> None:
    for bad in (0, -2, True, 2.5):
        with pytest.raises(HotsetError, match="lookahead"):
            _system(lookahead=bad)
