"""Quiver §5.3 closed: the board's placement applied by a job, pure (no driver).

The board's records are inputs the policy records: the same inputs give the same
decisions, a job that gains nothing stops caching (and still trains each sample once
per epoch), ``chunks`` caps the job to two chunks, a re-probe measures again, and a
quiver without the new options decides exactly as before.

What another job's record can change is capped: a record out of range (a claim of
10**30 bytes, a non-finite or negative time, a million GPUs), or one of the job's
own data set that gives it another size, is not counted; a record's benefit weighs
at most ``MAX_BENEFIT``; a placement counts at most ``MAX_BOARD`` records and its
state keeps only those, cleaned of any other field. So on a namespace of one data
set no other record changes what the job decides, and 100,000 records cost its
state nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from hotset.engine.outcome import Outcome
from hotset.engine.planner import Planner
from hotset.errors import HotsetError
from hotset.policies.base import Budget
from hotset.policies.quiver import Quiver
from hotset.policies.quiver.placement import (
    MAX_BENEFIT,
    MAX_BOARD,
    DataSetSpace,
    ProbeResult,
    counted,
    from_record,
    place_job,
    saved_gpus,
)
from hotset.systems.base import System
from hotset.systems.registry import build_system
from layout_support import make_layout

N, BATCH = 2000, 32
SIZES = np.random.default_rng(1).integers(10, 60, N).astype(np.int64)
LAYOUT = make_layout(SIZES, 16, seed=2)
TOTAL = int(SIZES.sum())
#: ``quiver[probe=4]`` over 3 epochs at a 30% cache, as the code before the closed loop
#: decided (commit 7e82b15; see test_open_loop_decides_as_before)
OPEN_PROBE_SHA256 = "e5a9e6297091c002bb320128fa853771947f0fd02cc39404274de92af26b45b6"


def _system(spec: str = "quiver[probe=4,placement=true]", frac: float = 0.3) -> System:
    budget = Budget(capacity_bytes=int(frac * TOTAL), sizes=SIZES)
    return build_system(spec, n=N, budget=budget, seed=0, batch_size=BATCH, layout=LAYOUT)


def _policy(system: System) -> Quiver:
    assert isinstance(system.policy, Quiver)
    return system.policy


def _record(job: str, t_miss: float, t_hit: float, **kw: Any) -> dict[str, Any]:
    return {
        "job": job,
        "dataset": kw.get("dataset", "d"),
        "t_miss": t_miss,
        "t_hit": t_hit,
        "gpus": 1,
        "size_bytes": kw.get("size_bytes", TOTAL),
        "chunk_bytes": kw.get("chunk_bytes", TOTAL // 10),
    }


Hook = Callable[[int, System], None]


def _run(system: System, epochs: int = 3, before: Hook | None = None) -> dict[str, Any]:
    """Every decision's digest, what each epoch served, its outcomes and bytes held."""
    planner = Planner(system, n=N, batch_size=BATCH, lag=0, sizes=SIZES)
    digest = hashlib.sha256()
    out: dict[str, Any] = {"served": [], "outcomes": [], "admitted": [], "evicted": []}
    for epoch in range(epochs):
        if before is not None:
            before(epoch, system)
        planner.begin(epoch)
        served, outcomes, admitted, evicted = [], [], 0, 0
        for plan in planner.plans():
            for arr in (plan.served, plan.outcomes, plan.unit_reads, plan.deletes):
                digest.update(np.asarray(arr, dtype="<i8").tobytes())
            served += plan.served.tolist()
            outcomes += plan.outcomes.tolist()
            admitted += len(plan.admitted)
            evicted += len(plan.evicted)
        planner.finish(val_accuracy=None)
        out["served"].append(served)
        out["outcomes"].append(outcomes)
        out["admitted"].append(admitted)
        out["evicted"].append(evicted)
    out["digest"] = digest.hexdigest()
    return out


def _apply(own: dict[str, Any], board: list[dict[str, Any]]) -> Hook:
    """What the loader does before each epoch once the job's probe is timed (epoch 1's
    first batches are its second window, so the record exists from epoch 2 on)."""

    def hook(epoch: int, system: System) -> None:
        if epoch >= 1:
            _policy(system).apply_board(own, board, budget_bytes=int(0.3 * TOTAL), epoch=epoch)

    return hook


def test_open_loop_decides_as_before() -> None:
    """No new option: the decisions of the code before the loop was closed; the new
    options off give the same, and the state is the one it was."""
    # the paper's fixed stripes (fresh_order=false): a job alone deals its chunks afresh
    # by default now, which changes its decisions (issue #40), not the loop's
    digest = _run(_system("quiver[probe=4,fresh_order=false]"))["digest"]
    assert digest == OPEN_PROBE_SHA256
    same = "quiver[probe=4,placement=false,reprobe_epochs=0,fresh_order=false]"
    assert _run(_system(same))["digest"] == digest
    assert "loop" not in _policy(_system("quiver[probe=4]")).state_dict()


def test_a_job_that_gains_nothing_stops_caching_and_trains_each_sample_once() -> None:
    system = _system()
    own = _record("b", t_miss=1.0, t_hit=0.99)  # compute hides its I/O
    board = [_record("a", t_miss=3.0, t_hit=1.0)]  # another job on the data set gains 3x
    run = _run(system, epochs=4, before=_apply(own, board))
    for ids in run["served"]:
        assert sorted(ids) == list(range(N))
    # epoch 1 is the probe's second window: it runs with the cache as it is
    assert run["admitted"][0] > 0 and run["admitted"][1] > 0
    # epoch 2 on: nothing admitted, every request a read of the id asked for, in order
    assert run["admitted"][2] == run["admitted"][3] == 0
    assert set(run["outcomes"][2]) == {int(Outcome.MISS)}
    # what it held leaves with the first plan of epoch 2 (another job may need the room)
    assert run["evicted"][2] > 0 and not _policy(system).resident()
    summary = _policy(system).summary()
    assert summary["caching"] is False and summary["placement"] == "chunks"


def test_a_data_set_nobody_gains_from_gets_no_space() -> None:
    system = _system()
    own = _record("a", t_miss=1.0, t_hit=1.0)
    run = _run(system, before=_apply(own, [_record("b", 1.05, 1.0)]))
    assert run["admitted"][2] == 0 and _policy(system).summary()["placement"] == "none"


def test_chunks_caps_the_job_to_two_chunks_and_full_changes_nothing() -> None:
    gains = _record("a", t_miss=3.0, t_hit=1.0)
    capped = _system()
    _run(capped, before=_apply(gains, []))  # 30% of the data set: no room for it whole
    chunks = _policy(capped).chunks
    assert chunks is not None and chunks.static_bytes == 0
    assert _policy(capped).used_bytes <= 2 * (TOTAL // 10)
    free = _system()
    full = _apply(_record("a", 3.0, 1.0, size_bytes=int(0.25 * TOTAL)), [])
    assert _run(free, before=full)["digest"] == _run(_system())["digest"]


def test_a_reprobe_measures_again_and_a_job_turned_off_caches_for_it() -> None:
    system = _system("quiver[probe=4,placement=true,reprobe_epochs=3]")
    own = _record("b", t_miss=1.0, t_hit=1.0)
    policy = _policy(system)
    hook = _apply(own, [])
    windows: list[str | None] = []
    planner = Planner(system, n=N, batch_size=BATCH, lag=0, sizes=SIZES)
    admitted = []
    for epoch in range(6):
        hook(epoch, system)
        planner.begin(epoch)
        window = policy.probe_window()
        windows.append(None if window is None else window[0])
        plans = list(planner.plans())
        admitted.append(sum(len(p.admitted) for p in plans))
        miss = [set(p.outcomes.tolist()) == {int(Outcome.MISS)} for p in plans[:4]]
        assert all(miss) == (windows[-1] == "miss" or admitted[-1] == 0)
        planner.finish(val_accuracy=None)
    assert windows == ["miss", "hit", None, "miss", "hit", None]
    # off from epoch 2; the re-probe (epoch 3) caches through its two windows; off again
    assert admitted[2] == 0 and admitted[3] > 0 and admitted[4] > 0 and admitted[5] == 0
    assert policy.summary()["probe_epoch"] == 3


def test_the_probe_record_is_published_once_both_windows_are_timed() -> None:
    system = _system()
    policy = _policy(system)
    planner = Planner(system, n=N, batch_size=BATCH, lag=0, sizes=SIZES)
    planner.begin(0)
    assert policy.probe_window() == ("miss", 4)
    times = [5.0, 0.3, 0.3, 0.3, 5.0, 0.1, 0.1]  # the miss window's, then the hit one's
    assert policy.probe_record("j", "d", times) is None
    record = policy.probe_record("j", "d", [*times, 0.1])
    assert record is not None
    assert record["t_miss"] == pytest.approx(0.3) and record["t_hit"] == pytest.approx(0.1)
    # the data set's 10% chunk, even where the job's budget would hold it all
    assert record["size_bytes"] == TOTAL and 0 < int(record["chunk_bytes"]) <= 0.1 * TOTAL + 1000
    whole = _policy(_system(frac=1.0)).probe_record("j", "d", [*times, 0.1])
    assert whole is not None and 0.05 * TOTAL < int(whole["chunk_bytes"]) <= 0.1 * TOTAL + 1000


def test_a_resume_applies_what_the_state_recorded_without_the_board() -> None:
    own = _record("b", t_miss=1.0, t_hit=1.0)
    board = [_record("a", t_miss=4.0, t_hit=1.0)]
    spec = "quiver[probe=4,placement=true,reprobe_epochs=3]"
    system = _system(spec)
    first = _run(system, epochs=3, before=_apply(own, board))
    state = _policy(system).state_dict()
    assert state["loop"]["applied"]["board"] == board
    again = _system(spec)
    _policy(again).load_state_dict(state)
    _policy(system).load_state_dict(state)
    # the rest runs from the recorded inputs alone: no apply_board after the resume
    assert _run(again, epochs=2)["digest"] == _run(system, epochs=2)["digest"]
    assert first["admitted"][2] == 0
    # own=None (a resumed loader has no record of its own yet) places by the recorded one
    gone = _system(spec)
    _policy(gone).load_state_dict(state)
    _policy(gone).apply_board(None, [], budget_bytes=int(0.3 * TOTAL), epoch=5)
    assert _policy(gone).summary()["placement"] == "none"  # alone, it gains nothing


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("quiver[reprobe_epochs=2]", "needs placement=true"),
        ("quiver[placement=true]", "probe >= 2"),
        ("quiver[probe=4,placement=true,min_benefit=0.5]", "min_benefit"),
        ("quiver[probe=4,placement=true,reprobe_epochs=-1]", "reprobe_epochs"),
        ("quiver[probe=4,placement=true,reprobe_epochs=1]", "two"),
    ],
)
def test_bad_options_are_refused_by_name(spec: str, match: str) -> None:
    with pytest.raises(HotsetError, match=match):
        _system(spec)


def test_a_bad_board_record_is_refused_by_name() -> None:
    policy = _policy(_system())
    with pytest.raises(HotsetError, match="lacks t_miss, t_hit"):
        policy.apply_board({"job": "a", "dataset": "d"}, [], budget_bytes=10, epoch=2)
    with pytest.raises(HotsetError, match="finite"):
        policy.apply_board(_record("a", float("inf"), 1.0), [], budget_bytes=10, epoch=2)
    with pytest.raises(HotsetError, match="placement=true"):
        _policy(_system("quiver")).apply_board(_record("a", 1.0, 1.0), [], budget_bytes=10, epoch=2)


def test_a_job_is_placed_again_when_another_job_leaves_the_board() -> None:
    """The board is read before every epoch, not only after a probe: a job that lost
    the namespace to a job gaining more gets it back once that job's record is gone."""
    system = _system()
    policy = _policy(system)
    own = _record("a", t_miss=1.5, t_hit=1.0)  # gains, less than b per byte
    rival = _record("b", 3.0, 1.0, dataset="e", size_bytes=TOTAL // 4)
    boards = {2: [rival], 3: []}  # b leaves after epoch 2 (withdrawn, or its lease ended)

    def hook(epoch: int, system: System) -> None:
        if epoch >= 1:
            board = boards.get(epoch, [])
            policy.apply_board(own, board, budget_bytes=int(0.3 * TOTAL), epoch=epoch)

    run = _run(system, epochs=4, before=hook)
    assert run["admitted"][2] == 0 and run["admitted"][3] > 0
    assert policy.summary()["caching"] is True and policy.summary()["placement"] == "chunks"


# -- what another job's record can change: its caps ---------------------------------
BUDGET = int(0.3 * TOTAL)


def _hostile() -> list[dict[str, Any]]:
    """Records of the job's own data set ``d``, each bad in one field (or in its size)."""
    good = _record("x", 3.0, 0.1)
    return [
        good | {"job": "x1", "size_bytes": 10**30},
        good | {"job": "x2", "chunk_bytes": 10**30},
        good | {"job": "x3", "chunk_bytes": TOTAL + 1},  # a chunk larger than the data set
        good | {"job": "x4", "t_hit": float("nan")},
        good | {"job": "x5", "t_miss": float("inf")},
        good | {"job": "x6", "t_hit": -1.0},
        good | {"job": "x7", "gpus": 10**6},
        good | {"job": "x8", "gpus": True},
        good | {"job": "x9" * 200},
        good | {"job": "x10", "size_bytes": TOTAL * 2},  # in range, not this data set's size
        {"job": "x11"},
        [1, 2],  # type: ignore[list-item]
    ]


@pytest.mark.parametrize("own_t_hit", [0.5, 1.0])  # the job gains 2x, or nothing
def test_no_hostile_record_of_the_jobs_data_set_changes_its_placement(own_t_hit: float) -> None:
    own = _record("me", 1.0, own_t_hit)
    alone = place_job(own, [], budget_bytes=BUDGET)
    assert counted(own, _hostile()) == []
    assert place_job(own, _hostile(), budget_bytes=BUDGET) == alone
    # a well-formed record of the same data set (another job on it) changes nothing
    # either: the data set's space is the job's own, and its switch its own benefit
    other = _record("x", 900.0, 0.001, chunk_bytes=TOTAL)
    assert place_job(own, [other], budget_bytes=BUDGET).caching == alone.caching
    assert place_job(own, [other], budget_bytes=BUDGET).cap_bytes == alone.cap_bytes


def test_a_records_benefit_weighs_at_most_max_benefit() -> None:
    huge = ProbeResult("x", "e", t_miss=3600.0, t_hit=1e-300)
    assert saved_gpus([huge]) == {"e": MAX_BENEFIT - 1.0}
    with pytest.raises(HotsetError, match=r"size_bytes must be an integer in 0\.\.2"):
        from_record(_record("x", 1.0, 1.0, size_bytes=10**30))


def test_the_state_keeps_at_most_max_board_cleaned_records() -> None:
    own = _record("me", 1.0, 0.5)

    def applied(board: list[Any]) -> dict[str, Any]:
        system = _system()
        _policy(system).apply_board(own, board, budget_bytes=BUDGET, epoch=2)
        return _policy(system).state_dict()["loop"]["applied"]

    control = applied([])
    bad = applied(_hostile() * 10_000)  # 120,000 records, none counted
    assert bad["board"] == [] and bad["skipped"] == 120_000
    assert len(json.dumps(bad)) - len(json.dumps(control)) == len("120000") - len("0")
    padded = [_record(f"j{i:06d}", 2.0, 1.0) | {"pad": "x" * 1000} for i in range(100_000)]
    many = applied(padded)
    assert len(many["board"]) == MAX_BOARD and many["skipped"] == 100_000 - MAX_BOARD
    assert all("pad" not in r for r in many["board"])  # what is kept is the record alone
    assert len(json.dumps(many)) < 250 * MAX_BOARD


def test_a_resume_counts_the_records_its_state_kept_as_the_run_did() -> None:
    own = _record("me", 1.0, 0.5)
    system = _system()
    board = [*_hostile(), _record("x", 3.0, 1.0)]

    def hook(epoch: int, system: Any) -> None:
        if epoch >= 1:
            _policy(system).apply_board(own, board, budget_bytes=BUDGET, epoch=epoch)

    _run(system, epochs=3, before=hook)
    keys = ("board_jobs", "board_skipped", "caching", "placement", "cap_bytes")
    summary = {k: _policy(system).summary()[k] for k in keys}
    assert summary["board_jobs"] == 1 and summary["board_skipped"] == len(_hostile())
    state = json.loads(json.dumps(_policy(system).state_dict()))
    again = _system()
    _policy(again).load_state_dict(state)
    assert {k: _policy(again).summary()[k] for k in keys} == summary


def test_another_data_sets_record_competes_as_the_paper_places_it() -> None:
    """On a content-addressed namespace (several data sets) another data set's record
    is a competitor: it takes space by its benefit per byte, within the budget."""
    own = _record("me", 1.5, 1.0)
    rival = _record("x", 3.0, 1.0, dataset="e", size_bytes=TOTAL // 4)
    assert place_job(own, [], budget_bytes=BUDGET).caching is True
    assert place_job(own, [rival], budget_bytes=BUDGET).caching is False
    space = DataSetSpace(TOTAL, TOTAL // 10)
    assert space.cost("chunks") <= BUDGET
