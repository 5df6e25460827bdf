"""Quiver's fresh order (issue #40): a job alone deals its chunks afresh each round, at the
same reads per epoch as the paper's fixed stripes, every sample once, resumed exactly."""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import pytest
from scipy.stats import spearmanr

from hotset.engine.planner import Planner
from hotset.policies.base import Budget
from hotset.policies.quiver import Quiver
from hotset.systems.base import System
from hotset.systems.registry import build_system
from hotset.torch.loader import load_system_state, system_state
from layout_support import make_layout

N, BATCH = 2000, 32


def _system(frac: float, seed: int = 0, **options: object) -> System:
    sizes = np.random.default_rng(1).integers(10, 60, N).astype(np.int64)
    layout = make_layout(sizes, 16, seed=2)
    budget = Budget(capacity_bytes=int(frac * sizes.sum()), sizes=sizes)
    return build_system(
        "quiver", n=N, budget=budget, seed=seed, batch_size=BATCH, layout=layout, **options
    )


def _epochs(system: System, epochs: range, planner: Planner | None = None) -> tuple:
    """(per epoch: ids served, units read; a digest of every decision; the planner)."""
    planner = planner or Planner(
        system, n=N, batch_size=BATCH, lag=0, sizes=system.policy.budget.sizes
    )
    digest = hashlib.sha256()
    served, units = [], []
    for epoch in epochs:
        planner.begin(epoch)
        ids, reads = [], 0
        for plan in planner.plans():
            for arr in (plan.served, plan.outcomes, plan.unit_reads, plan.deletes):
                digest.update(np.asarray(arr, dtype="<i8").tobytes())
            ids += plan.served.tolist()
            reads += len(plan.unit_reads) + len(plan.reads)
        planner.finish(val_accuracy=None)
        served.append(ids)
        units.append(reads)
    return served, units, digest.hexdigest(), planner


@pytest.mark.parametrize("frac", [0.05, 0.1, 0.2, 0.4])
def test_the_same_reads_as_fixed_stripes_every_sample_once_and_a_new_order(frac: float) -> None:
    fresh_served, fresh_reads, _, _ = _epochs(_system(frac), range(5))
    fixed_served, fixed_reads, _, _ = _epochs(_system(frac, fresh_order=False), range(5))
    for ids in fresh_served:
        assert sorted(ids) == list(range(N))  # exactly once per epoch
    # the chunk economics: after the first epoch each load unit is read once an epoch,
    # as with the fixed stripes (a few more at most where a chunk leaves early)
    assert sum(fresh_reads[1:]) <= 1.02 * sum(fixed_reads[1:]), (fresh_reads, fixed_reads)
    pos = [np.argsort(ids) for ids in fresh_served]
    fresh_rho = [spearmanr(a, b)[0] for a, b in itertools.pairwise(pos)]
    pos = [np.argsort(ids) for ids in fixed_served]
    fixed_rho = [spearmanr(a, b)[0] for a, b in itertools.pairwise(pos)]
    assert np.mean(fixed_rho) > 0.8 > 0.3 > abs(np.mean(fresh_rho)), (fixed_rho, fresh_rho)


def test_the_deal_is_even_and_stratified_and_the_static_set_stays() -> None:
    system = _system(0.4)
    _epochs(system, range(3))
    policy = system.policy
    assert isinstance(policy, Quiver)
    chunks = policy.chunks
    assert chunks is not None and chunks.static_units  # a large cache keeps some for good
    static = set(chunks.static_units)
    cycling = [u for u in range(len(chunks.members)) if u not in static]
    assert all(int(chunks.chunk_of_unit[u]) < chunks.k for u in cycling)
    assert all(int(chunks.chunk_of_unit[u]) == chunks.k for u in static)
    k = chunks.k
    parts = chunks.deal(cycling, k, np.random.default_rng(0))
    assert sorted(u for part in parts for u in part) == sorted(cycling)
    counts = [len(part) for part in parts]
    assert max(counts) - min(counts) <= 1  # even to within one unit
    # stratified as the stripes are: each block of k consecutive units, one per chunk
    where = {u: j for j, part in enumerate(parts) for u in part}
    ordered = sorted(cycling)
    for start in range(0, len(ordered) - k + 1, k):
        assert len({where[u] for u in ordered[start : start + k]}) == k
    again = chunks.deal(cycling, k, np.random.default_rng(1))
    assert again != parts  # a new draw each round


def test_a_resume_from_an_epoch_start_state_decides_the_same() -> None:
    straight = _system(0.2, seed=3)
    _, _, _, planner = _epochs(straight, range(2))
    saved = system_state(straight)
    ahead = planner.ahead.ids()
    want = _epochs(straight, range(2, 4), planner)[2]
    resumed = _system(0.2, seed=3)
    load_system_state(resumed, saved)
    again = Planner(resumed, n=N, batch_size=BATCH, lag=0, sizes=resumed.policy.budget.sizes)
    again.ahead.load(ahead)
    assert _epochs(resumed, range(2, 4), again)[2] == want
    # a state of the fixed stripes cannot be taken for a fresh deal's, nor the reverse
    fixed = _system(0.2, seed=3, fresh_order=False)
    _epochs(fixed, range(2))
    assert "assignment" not in system_state(fixed)["policy"]["cycle"]
