"""``hotset.cachestore.shm_segment``: a segment is checked against what is mapped."""

from __future__ import annotations

import pytest

from hotset.cachestore.shm_segment import Segment, create_segment, open_untracked
from hotset.errors import HotsetError


def test_an_attach_that_read_the_size_before_the_creator_set_it_still_maps_the_tables() -> None:
    """SharedMemory reads the size (fstat), then maps: a creator that sizes the segment
    between the two leaves ``shm.size`` at 0 over a whole mapping. A rank joining a
    node's cache then failed as "truncated: 0 bytes" (seen under torchrun)."""
    seg = create_segment(20_000, 16, None, 0.0)
    attached = open_untracked(seg.name, create=False)
    attached._size = 0  # type: ignore[attr-defined]  # what the race leaves
    other = Segment(attached, owner=False)
    try:
        other.map_tables()
        assert other.size == seg.size and other.n_slots == 16
    finally:
        other.release()
        seg.release()


def test_a_mapping_shorter_than_its_header_says_is_truncated() -> None:
    seg = create_segment(20_000, 16, None, 0.0)
    attached = open_untracked(seg.name, create=False)
    other = Segment(attached, owner=False)
    try:
        other.size = 100  # what a mapping of a truncated file holds
        with pytest.raises(HotsetError, match=r"is truncated: \d+ bytes, layout needs \d+"):
            other.map_tables()
    finally:
        other.release()
        seg.release()
