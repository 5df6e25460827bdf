"""ImPACT's warm-up rule: rank variance, S' filling 25% of the cache, stop at 80% overlap."""

from __future__ import annotations

import numpy as np
import pytest

from hotset.errors import HotsetError
from hotset.importance.rank_variance import MAX_WARM_UP, OVERLAP, S_SHARE, RankTracker


def test_the_papers_constants_are_pinned() -> None:
    assert (S_SHARE, OVERLAP) == (0.25, 0.8)
    assert MAX_WARM_UP >= 3


def test_ranks_put_the_largest_loss_first_and_unknown_last() -> None:
    tracker = RankTracker(np.ones(4, np.int64), s_bytes=1)
    assert tracker.ranks(np.array([0.1, 0.9, np.nan, 0.5])).tolist() == [2, 0, 3, 1]


def test_variance_is_the_sample_variance_of_each_ids_ranks() -> None:
    rng = np.random.default_rng(0)
    tracker = RankTracker(np.ones(20, np.int64), s_bytes=5, overlap=1.0, max_epochs=50)
    history = []
    for epoch in range(4):
        losses = rng.random(20)
        history.append(tracker.ranks(losses))
        tracker.observe(epoch, losses, full_epoch=epoch + 1)
    assert not tracker.done  # every epoch was observed
    assert np.allclose(tracker.variance(), np.var(np.stack(history), axis=0, ddof=1))


def test_s_is_the_most_unstable_ids_filling_its_bytes() -> None:
    sizes = np.array([10, 10, 30, 10, 10, 10], dtype=np.int64)
    tracker = RankTracker(sizes, s_bytes=40, max_epochs=50)
    stable = np.array([6.0, 5.0, 4.0, 3.0, 2.0, 1.0])
    swing = stable.copy()
    swing[[2, 4]] = swing[[4, 2]]  # ids 2 and 4 trade places; the rest keep their rank
    tracker.observe(0, stable, full_epoch=1)
    tracker.observe(1, swing, full_epoch=2)
    unstable = tracker.most_unstable()
    assert set(unstable.tolist()) == {2, 4}  # 30 + 10 bytes: the next id would not fit
    # the same swings again: the next S' is the same set, overlap 1.0: warm-up over
    tracker.observe(2, stable, full_epoch=3)
    assert tracker.done and tracker.k == 3 and tracker.overlaps == [1.0]
    assert tracker.s_ids is not None and tracker.s_ids.tolist() == [2, 4]
    tracker.observe(3, swing, full_epoch=4)  # after the warm-up: no change
    assert tracker.count == 3


def test_an_unsettled_ranking_stops_at_the_users_limit() -> None:
    rng = np.random.default_rng(1)
    tracker = RankTracker(np.ones(200, np.int64), s_bytes=10, max_epochs=5)
    for epoch in range(10):
        tracker.observe(epoch, rng.random(200), full_epoch=epoch + 1)
        if tracker.done:
            break
    assert tracker.done and tracker.count == 5 and tracker.k == 5
    assert all(o < OVERLAP for o in tracker.overlaps)  # it stopped for the limit only


def test_observing_an_epoch_twice_changes_nothing_and_state_round_trips() -> None:
    rng = np.random.default_rng(2)
    tracker = RankTracker(np.ones(30, np.int64), s_bytes=6, max_epochs=50)
    losses = [rng.random(30) for _ in range(3)]
    for epoch, values in enumerate(losses):
        tracker.observe(epoch, values, full_epoch=epoch + 1)
        tracker.observe(epoch, rng.random(30), full_epoch=epoch + 1)  # a repeat: ignored
    twin = RankTracker(np.ones(30, np.int64), s_bytes=6, max_epochs=50)
    twin.load_state(tracker.state())
    assert np.array_equal(twin.variance(), tracker.variance())
    assert twin.overlaps == tracker.overlaps and twin.done == tracker.done


@pytest.mark.parametrize(
    ("kwargs", "bad"),
    [
        ({"overlap": 0}, "overlap"),
        ({"overlap": 1.5}, "overlap"),
        ({"max_epochs": 1}, "max_warm_up"),
    ],
)
def test_bad_options_name_the_value(kwargs: dict[str, object], bad: str) -> None:
    with pytest.raises(HotsetError, match=bad):
        RankTracker(np.ones(3, np.int64), s_bytes=1, **kwargs)  # type: ignore[arg-type]
