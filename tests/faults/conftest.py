"""Fixtures of the fault suite: victims killed at teardown, whatever a test left running."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from victim_support import Victim


@pytest.fixture
def victims() -> Iterator[list[Victim]]:
    started: list[Victim] = []
    yield started
    for victim in started:
        victim.cleanup()
    if started:  # what the dead victims held in /dev/shm goes with them
        from hotset.cachestore.shm_gc import reclaim_stale_segments

        reclaim_stale_segments()
