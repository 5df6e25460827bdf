"""Quiver's join of a shared chunk cycle (FAST'20 Algorithm 1, ``getCurrentChunk``), pure.

Where the cycle starts is an input (the step the namespace's jobs load now, read by
the loader), saved with the policy's state: a job alone decides exactly as before,
a job that joins loads the chunk of that step first, in the same unit order the
jobs already there use, and still trains every sample once per epoch.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pytest

from hotset.engine.planner import Planner
from hotset.errors import HotsetError
from hotset.policies.base import Budget
from hotset.policies.quiver import Quiver
from hotset.systems.base import System
from hotset.systems.registry import build_system
from layout_support import make_layout

N, BATCH = 2000, 32
#: a lone job's decisions over 3 epochs (served, outcomes, unit reads, deletes), as the
#: code before joining existed made them (commit eaf834e)
LONE_JOB_SHA256 = "0f146eacf3e361a787792b2b8995d68a6e36424de00d33e4b1bfbdd6dbec77c3"


def _system(seed: int = 0, **options: Any) -> System:
    sizes = np.random.default_rng(1).integers(10, 60, N).astype(np.int64)
    layout = make_layout(sizes, 16, seed=2)
    budget = Budget(capacity_bytes=int(0.1 * sizes.sum()), sizes=sizes)
    return build_system(
        "quiver", n=N, budget=budget, seed=seed, batch_size=BATCH, layout=layout, **options
    )


def _policy(system: System) -> Quiver:
    assert isinstance(system.policy, Quiver)
    return system.policy


def _run(system: System, epochs: int = 3) -> tuple[str, list[list[int]], list[int]]:
    """(digest of every decision, ids served per epoch, units read in order)."""
    sizes = system.policy.budget.sizes
    planner = Planner(system, n=N, batch_size=BATCH, lag=0, sizes=sizes)
    digest = hashlib.sha256()
    served: list[list[int]] = []
    units: list[int] = []
    for epoch in range(epochs):
        planner.begin(epoch)
        mine: list[int] = []
        for plan in planner.plans():
            for arr in (plan.served, plan.outcomes, plan.unit_reads, plan.deletes):
                digest.update(np.asarray(arr, dtype="<i8").tobytes())
            mine += plan.served.tolist()
            units += plan.unit_reads.tolist()
        planner.finish(val_accuracy=None)
        served.append(mine)
    return digest.hexdigest(), served, units


def test_a_job_alone_decides_as_before() -> None:
    """Told nothing is loaded (the first job on a namespace), or never asked with the
    paper's fixed stripes (``fresh_order=false``): the decisions of the code before
    joining existed. Never asked with the default, a job alone deals its chunks afresh
    each round (issue #40), so it decides otherwise."""
    assert _run(_system(fresh_order=False))[0] == LONE_JOB_SHA256
    system = _system()
    assert _policy(system).awaits_join()
    _policy(system).join_cycle(None)
    assert not _policy(system).awaits_join() and _policy(system).joined == 0
    assert _run(system)[0] == LONE_JOB_SHA256
    assert _run(_system())[0] != LONE_JOB_SHA256


def test_a_joining_job_starts_at_the_shared_step_and_trains_each_sample_once() -> None:
    lead = _system(seed=0)
    _policy(lead).join_cycle(None)  # the first job on the namespace
    lead_units = _run(lead, epochs=1)[2]
    chunks = _policy(lead).chunks
    assert chunks is not None and chunks.k > 8
    joiner = _system(seed=1)
    _policy(joiner).join_cycle(7)
    _, served, units = _run(joiner)
    for epoch, ids in enumerate(served):
        assert sorted(ids) == list(range(N)), f"epoch {epoch}: not exactly once"
    # its first loads are chunk 7's (the lead's eighth chunk), not chunk 0's
    first_chunks = list(dict.fromkeys(int(chunks.chunk_of_unit[u]) for u in units))
    assert first_chunks[:3] == [7 % chunks.k, 8 % chunks.k, 9 % chunks.k]
    # the steps count from one origin: the joiner's chunk 7 is the lead's step 7, loaded
    # in the same seeded unit order from the joiner's own place in it (co-operative loads)
    lead_7 = [u for u in lead_units if chunks.chunk_of_unit[u] == 7]
    join_7 = [u for u in units if chunks.chunk_of_unit[u] == 7][: len(lead_7)]
    assert sorted(lead_7) == sorted(join_7) and lead_7 != join_7
    rotation = join_7.index(lead_7[0])
    assert join_7[rotation:] == lead_7[: len(lead_7) - rotation]
    assert _policy(joiner).summary()["joined_step"] == 7


def test_the_joined_step_is_state_a_resume_does_not_ask_again() -> None:
    system = _system(seed=2)
    _policy(system).join_cycle(5)
    state: dict[str, Any] = _policy(system).state_dict()
    assert state["joined"] == 5
    again = _system(seed=2)
    _policy(again).load_state_dict(state)
    assert not _policy(again).awaits_join()
    assert _run(again) == _run(system)
    # a state saved before joining existed started its cycle at 0, and does again
    old = dict(state)
    del old["joined"]
    old_style = _system(seed=2)
    _policy(old_style).load_state_dict(old)
    assert _policy(old_style).joined == 0 and not _policy(old_style).awaits_join()


def test_cycle_step_says_which_chunk_the_job_loads() -> None:
    system = _system()
    policy = _policy(system)
    assert policy.cycle_step() is None  # nothing started
    policy.join_cycle(11)
    planner = Planner(system, n=N, batch_size=BATCH, lag=0, sizes=policy.budget.sizes)
    planner.begin(0)
    assert policy.cycle_step() == 11
    steps = set()
    for _ in planner.plans():
        step = policy.cycle_step()
        assert step is not None
        steps.add(step)
    assert min(steps) == 11 and max(steps) > 11


def test_a_bad_step_or_a_late_join_is_refused() -> None:
    policy = _policy(_system())
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(HotsetError, match="int >= 0"):
            policy.join_cycle(bad)  # type: ignore[arg-type]
    system = _system()
    Planner(system, n=N, batch_size=BATCH, lag=0, sizes=system.policy.budget.sizes).begin(0)
    assert not _policy(system).awaits_join()
    with pytest.raises(HotsetError, match="after the chunk cycle started"):
        _policy(system).join_cycle(3)
