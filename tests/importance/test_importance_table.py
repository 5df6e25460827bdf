"""ImportanceTable: keyed by id, all-or-nothing updates, bounded histories, round trip."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.errors import HotsetError
from hotset.importance.table import DEFAULT_SCORE, ImportanceTable


def _state(table: ImportanceTable) -> tuple:
    snap = table.snapshot()
    return (
        snap.version,
        snap.scores.tobytes(),
        snap.losses.tobytes(),
        snap.counts.tobytes(),
        snap.last_epoch.tobytes(),
        table.recent_losses().tobytes(),
        tuple(table.history_of(i).tobytes() for i in range(table.n)),
    )


def test_fresh_table_defaults() -> None:
    table = ImportanceTable(4)
    snap = table.snapshot()
    assert snap.version == 0
    assert np.isnan(snap.losses).all()
    assert (snap.scores == DEFAULT_SCORE).all() and DEFAULT_SCORE == 1.0
    assert (snap.counts == 0).all()
    assert (snap.last_epoch == -1).all()
    assert snap.scores.dtype == np.float64 and len(snap.scores) == 4
    assert table.recent_losses().size == 0
    assert table.history_of(2).size == 0


@pytest.mark.parametrize(
    "kwargs", [{"n": 0}, {"n": -3}, {"n": 4, "history": 0}, {"n": 4, "per_sample_history": -1}]
)
def test_bad_construction(kwargs: dict) -> None:
    n = kwargs.pop("n")
    with pytest.raises(HotsetError):
        ImportanceTable(n, **kwargs)


def test_update_lands_on_ids_not_positions() -> None:
    table = ImportanceTable(10)
    table.update([7, 2, 5], [0.7, 0.2, 0.5], epoch=3, scores=[17.0, 12.0, 15.0])
    snap = table.snapshot()
    assert snap.losses[7] == 0.7 and snap.losses[2] == 0.2 and snap.losses[5] == 0.5
    assert snap.scores[7] == 17.0 and snap.scores[2] == 12.0 and snap.scores[5] == 15.0
    assert snap.counts.tolist() == [0, 0, 1, 0, 0, 1, 0, 1, 0, 0]
    assert snap.last_epoch[[2, 5, 7]].tolist() == [3, 3, 3]
    assert snap.last_epoch[0] == -1
    assert np.isnan(snap.losses[[0, 1, 3, 4, 6, 8, 9]]).all()
    assert snap.version == 1


def test_duplicates_apply_in_order() -> None:
    table = ImportanceTable(3, per_sample_history=3)
    table.update([1, 0, 1, 1], [1.0, 9.0, 2.0, 3.0], epoch=0, scores=[10.0, 90.0, 20.0, 30.0])
    snap = table.snapshot()
    assert snap.losses[1] == 3.0 and snap.scores[1] == 30.0
    assert snap.counts[1] == 3 and snap.counts[0] == 1
    assert table.history_of(1).tolist() == [1.0, 2.0, 3.0]
    assert table.recent_losses().tolist() == [1.0, 9.0, 2.0, 3.0]


def test_scores_untouched_without_scores() -> None:
    table = ImportanceTable(3)
    table.update([0], [4.0], epoch=0, scores=[8.0])
    table.update([0, 1], [5.0, 6.0], epoch=1)
    snap = table.snapshot()
    assert snap.scores.tolist() == [8.0, DEFAULT_SCORE, DEFAULT_SCORE]
    assert snap.losses[:2].tolist() == [5.0, 6.0]
    assert snap.version == 2


def test_histories_are_bounded_and_ordered() -> None:
    table = ImportanceTable(2, history=5, per_sample_history=2)
    for step in range(7):
        table.update([0], [float(step)], epoch=0)
    assert table.history_of(0).tolist() == [5.0, 6.0]
    assert table.recent_losses().tolist() == [2.0, 3.0, 4.0, 5.0, 6.0]
    # one batch longer than the window keeps its tail
    table.update([1] * 8, [float(10 + i) for i in range(8)], epoch=1)
    assert table.recent_losses().tolist() == [13.0, 14.0, 15.0, 16.0, 17.0]
    assert table.history_of(1).tolist() == [16.0, 17.0]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, 5), st.floats(0, 100, allow_nan=False)), max_size=12),
        max_size=8,
    ),
    st.integers(1, 6),
    st.integers(0, 4),
)
def test_matches_a_plain_python_model(batches: list, history: int, per_sample: int) -> None:
    table = ImportanceTable(6, history=history, per_sample_history=per_sample)
    losses: dict[int, float] = {}
    scores: dict[int, float] = {}
    counts = [0] * 6
    last = [-1] * 6
    hist: dict[int, list[float]] = {i: [] for i in range(6)}
    window: list[float] = []
    for epoch, batch in enumerate(batches):
        ids = [sid for sid, _ in batch]
        vals = [loss for _, loss in batch]
        sc = [v * 2 + 1 for v in vals]
        table.update(np.array(ids, dtype=np.int64), vals, epoch=epoch, scores=sc)
        for sid, v, s in zip(ids, vals, sc, strict=True):
            losses[sid], scores[sid] = v, s
            counts[sid] += 1
            last[sid] = epoch
            hist[sid].append(v)
            window.append(v)
    snap = table.snapshot()
    assert snap.version == len(batches)
    for sid in range(6):
        if sid in losses:
            assert snap.losses[sid] == losses[sid] and snap.scores[sid] == scores[sid]
        else:
            assert math.isnan(snap.losses[sid]) and snap.scores[sid] == DEFAULT_SCORE
        assert snap.counts[sid] == counts[sid] and snap.last_epoch[sid] == last[sid]
        expected = hist[sid][-per_sample:] if per_sample else []
        assert table.history_of(sid).tolist() == expected
    assert table.recent_losses().tolist() == window[-history:]


@pytest.mark.parametrize(
    ("ids", "losses", "scores", "message"),
    [
        ([0, 1], [0.5], None, "got 1 values for 2 ids"),
        ([0, 1], [0.5, 0.6, 0.7], None, "got 3 values for 2 ids"),
        ([0, 9], [0.5, 0.6], None, "unknown sample id 9"),
        ([-1, 2], [0.5, 0.6], None, "unknown sample id -1"),
        ([0, 3], [0.5, float("nan")], None, "sample id 3"),
        ([0, 4], [float("inf"), 0.6], None, "sample id 0"),
        ([0, 1], [0.5, 0.6], [1.0], "got 1 values for 2 ids"),
        ([0, 2], [0.5, 0.6], [1.0, float("nan")], "sample id 2"),
        ([0.0, 1.0], [0.5, 0.6], None, "integers"),
        ([[0, 1]], [[0.5, 0.6]], None, "1-D"),
        ([0, 1], ["a", "b"], None, "numbers"),
    ],
)
def test_bad_updates_leave_table_unchanged(
    ids: list, losses: list, scores: list | None, message: str
) -> None:
    table = ImportanceTable(5, history=4, per_sample_history=2)
    table.update([1, 2, 3], [0.1, 0.2, 0.3], epoch=0, scores=[11.0, 12.0, 13.0])
    before = _state(table)
    with pytest.raises(HotsetError, match=message):
        table.update(ids, losses, epoch=1, scores=scores)
    assert _state(table) == before


@pytest.mark.parametrize("epoch", [-1, 1.5, True, "3"])
def test_bad_epoch(epoch: object) -> None:
    table = ImportanceTable(3)
    before = _state(table)
    with pytest.raises(HotsetError, match="epoch"):
        table.update([0], [1.0], epoch=epoch)  # type: ignore[arg-type]
    assert _state(table) == before


def test_accepts_torch_tensors_with_grad() -> None:
    table = ImportanceTable(4)
    losses = torch.tensor([0.25, 0.75], requires_grad=True) * 2
    table.update(torch.tensor([3, 1]), losses, epoch=0, scores=torch.tensor([5.0, 6.0]))
    snap = table.snapshot()
    assert snap.losses[3] == 0.5 and snap.losses[1] == 1.5
    assert snap.scores[[3, 1]].tolist() == [5.0, 6.0]


def test_empty_update_counts_as_a_version() -> None:
    table = ImportanceTable(3)
    table.update([], [], epoch=0)
    assert table.snapshot().version == 1
    assert (table.snapshot().counts == 0).all()


def test_snapshot_is_a_read_only_copy() -> None:
    table = ImportanceTable(3)
    table.update([0], [1.0], epoch=0, scores=[5.0])
    snap = table.snapshot()
    with pytest.raises(ValueError):
        snap.scores[0] = 9.0
    table.update([0], [2.0], epoch=0, scores=[6.0])
    assert snap.scores[0] == 5.0 and snap.losses[0] == 1.0 and snap.version == 1


def test_history_of_rejects_unknown_ids() -> None:
    table = ImportanceTable(3)
    with pytest.raises(HotsetError, match="unknown sample id 3"):
        table.history_of(3)


def test_state_dict_round_trip() -> None:
    rng = np.random.default_rng(0)
    table = ImportanceTable(20, history=16, per_sample_history=3)
    for epoch in range(5):
        ids = rng.integers(0, 20, size=9)
        table.update(ids, rng.random(9), epoch=epoch, scores=rng.random(9) + 2)
    restored = ImportanceTable(20, history=16, per_sample_history=3)
    restored.load_state_dict(table.state_dict())
    assert _state(restored) == _state(table)
    # and they stay equal as training goes on
    ids = rng.integers(0, 20, size=9)
    losses = rng.random(9)
    table.update(ids, losses, epoch=5)
    restored.update(ids, losses, epoch=5)
    assert _state(restored) == _state(table)


def test_state_dict_shape_mismatch() -> None:
    state = ImportanceTable(5).state_dict()
    with pytest.raises(HotsetError, match="n=5"):
        ImportanceTable(6).load_state_dict(state)
    broken = dict(state)
    broken["scores"] = np.zeros(4)
    with pytest.raises(HotsetError, match="scores"):
        ImportanceTable(5).load_state_dict(broken)


def _raw(table: ImportanceTable) -> tuple[bytes, ...]:
    """Every array of the table, bit for bit (what a resume must give back)."""
    return tuple(
        getattr(table, f"_{k}").tobytes()
        for k in ("losses", "scores", "counts", "last_epoch", "ring", "ring_writes", "window")
    )


@settings(max_examples=60, deadline=None, database=None)
@given(
    per_sample=st.integers(min_value=0, max_value=4),
    steps=st.lists(st.lists(st.integers(min_value=0, max_value=11), max_size=15), max_size=12),
)
def test_state_dict_leaves_out_what_it_repeats_and_restores_every_bit(
    per_sample: int, steps: list[list[int]]
) -> None:
    """Counts double as ring writes, untrained losses are NaN and each id's newest ring
    slot is its loss: none of it is stored, all of it comes back (duplicates, wraps)."""
    rng = np.random.default_rng(len(steps))
    table = ImportanceTable(12, history=8, per_sample_history=per_sample)
    for epoch, ids in enumerate(steps):
        table.update(ids, rng.random(len(ids)), epoch=epoch, scores=rng.random(len(ids)))
    state = table.state_dict()
    counts = table.snapshot().counts
    assert state["ring_writes"] is None and "ring" not in state and "losses" not in state
    assert len(state["trained_losses"]) == int((counts > 0).sum())
    kept = np.maximum(np.minimum(counts, per_sample) - 1, 0)
    assert len(state["ring_older"]) == int(kept.sum())
    restored = ImportanceTable(12, history=8, per_sample_history=per_sample)
    restored.load_state_dict(state)
    assert _raw(restored) == _raw(table)


def test_a_table_breaking_those_rules_is_stored_whole_and_restored_exactly() -> None:
    """A table loaded from an odd state (a loss without a count, a value in a ring slot
    not yet written, writes apart from counts) keeps every array as it is."""
    table = ImportanceTable(5, per_sample_history=3)
    table.update([0, 1, 1], [0.5, 0.25, 0.75], epoch=0)
    table._losses[4] = 2.0  # no count
    table._ring[0, 2] = 9.0  # id 0 was written once: slot 2 is not yet written
    table._ring_writes[3] = 7
    state = table.state_dict()
    assert {"losses", "ring"} <= set(state) and state["ring_writes"] is not None
    restored = ImportanceTable(5, per_sample_history=3)
    restored.load_state_dict(state)
    assert _raw(restored) == _raw(table)


def test_a_state_in_the_old_form_of_whole_arrays_still_loads() -> None:
    """Version 1 checkpoints hold the table as it was stored before: every array whole."""
    table = ImportanceTable(6, per_sample_history=2)
    for epoch in range(3):
        table.update([0, 2, 2, 5], [0.1 + epoch, 0.2, 0.3, 0.4], epoch=epoch)
    old = {
        "n": 6,
        "history": table.history,
        "per_sample_history": 2,
        "version": table.version,
        "window_writes": table._window_writes,
        **{k: getattr(table, f"_{k}").copy() for k in ("losses", "scores", "counts")},
        **{k: getattr(table, f"_{k}").copy() for k in ("last_epoch", "ring", "ring_writes")},
        "window": table._window.copy(),
    }
    restored = ImportanceTable(6, per_sample_history=2)
    restored.load_state_dict(old)
    assert _raw(restored) == _raw(table)


def test_a_compact_state_of_the_wrong_length_is_named() -> None:
    table = ImportanceTable(4, per_sample_history=2)
    table.update([0, 1, 1], [0.5, 0.25, 0.75], epoch=0)
    state = table.state_dict()
    with pytest.raises(HotsetError, match=r"ring_older has shape \(0,\), expected \(1,\)"):
        ImportanceTable(4, per_sample_history=2).load_state_dict({**state, "ring_older": []})
    with pytest.raises(HotsetError, match=r"trained_losses has shape \(3,\), expected \(2,\)"):
        ImportanceTable(4, per_sample_history=2).load_state_dict(
            {**state, "trained_losses": [1.0, 2.0, 3.0]}
        )


def test_a_default_table_keeps_no_ring_and_restores_one_saved_with_a_ring() -> None:
    """Nothing decides on a sample's past losses, so a default table keeps none (a
    ring of 8 was most of a checkpoint); a state saved with a ring (the old default)
    restores with it, history and all."""
    plain = ImportanceTable(6)
    assert plain.per_sample_history == 0
    ringed = ImportanceTable(6, per_sample_history=8)
    for epoch in range(3):
        ringed.update(np.array([1, 2, 3]), np.array([1.0, 2.0, 3.0]) + epoch, epoch=epoch)
    plain.load_state_dict(ringed.state_dict())
    assert plain.per_sample_history == 8
    assert plain.history_of(1).tolist() == [1.0, 2.0, 3.0]
    assert plain.state_dict().keys() == ringed.state_dict().keys()
    with pytest.raises(HotsetError, match="per_sample_history must be an integer >= 0"):
        plain.load_state_dict({**ringed.state_dict(), "per_sample_history": -1})
