"""``hotset.torch.cursor``: the loop's position, its rules and its round trip."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotset.errors import HotsetError
from hotset.torch.cursor import EpochCursor


def _ids(*values: int) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def test_a_loss_is_owed_once_per_yield_and_refused_otherwise() -> None:
    cursor = EpochCursor(5)
    cursor.begin()
    cursor.served(_ids(1, 1, 3))
    cursor.answer(_ids(1, 3), epoch=0)
    assert cursor.outstanding.tolist() == [0, 1, 0, 0, 0] and cursor.updates == 1
    with pytest.raises(HotsetError, match=r"sample id 3 was not yielded .* epoch 0"):
        cursor.answer(_ids(3), epoch=0)
    with pytest.raises(HotsetError, match=r"sample id 5 is not in the dataset \(ids 0..4\)"):
        cursor.answer(_ids(5), epoch=0)
    assert cursor.updates == 1  # a refused answer changes nothing


def test_the_next_epoch_follows_the_last_unless_one_was_named() -> None:
    cursor = EpochCursor(3)
    cursor.begin()
    cursor.close(4)
    assert (cursor.status, cursor.next_epoch) == ("idle", 5)
    cursor.name_next(9)
    cursor.begin()  # beginning clears the name: it named this epoch
    assert not cursor.epoch_set
    cursor.name_next(2)
    cursor.close(9)
    assert cursor.next_epoch == 2


def test_a_resumed_epoch_is_timed_from_nothing() -> None:
    cursor = EpochCursor(3)
    cursor.begin()
    cursor.served(_ids(0))
    cursor.batch_seconds.append(0.1)
    assert cursor.timed_whole() == [0.1]
    state = cursor.state()
    again = EpochCursor(3)
    again.load_epoch(state, yielded=1, updates=0)
    again.served(_ids(1))
    again.batch_seconds.append(0.2)  # one batch timed of two yielded
    assert again.resumed and again.timed_whole() == []


def test_a_state_naming_more_batches_than_the_epoch_has_is_refused() -> None:
    cursor = EpochCursor(3)
    cursor.begin()
    state = {**cursor.state(), "yielded": 8}
    with pytest.raises(HotsetError, match="yielded=8 batches, but epoch 2 has 7"):
        EpochCursor.yielded_in(state, n_batches=7, epoch=2)


@given(
    st.lists(st.lists(st.integers(0, 9), min_size=1, max_size=6), max_size=8),
    st.booleans(),
    st.one_of(st.none(), st.floats(0, 1)),
)
def test_a_mid_epoch_state_round_trips(
    batches: list[list[int]], named: bool, val: float | None
) -> None:
    cursor = EpochCursor(10)
    cursor.begin()
    for batch in batches:
        cursor.served(np.asarray(batch, dtype=np.int64))
    if batches:
        cursor.answer(np.unique(np.asarray(batches[0], dtype=np.int64)), epoch=0)
    if named:
        cursor.name_next(7)
    cursor.pending_val = val
    state = cursor.state()
    back = EpochCursor(10)
    back.load_epoch(state, yielded=int(state["yielded"]), updates=int(state["updates"]))
    assert back.state().keys() == state.keys()
    for key, value in state.items():
        got = back.state()[key]
        assert np.array_equal(got, value) if key == "outstanding" else got == value
    assert back.resumed
