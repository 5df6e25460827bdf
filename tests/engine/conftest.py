"""Fixtures for the engine tests: the test-only chunked systems, registered per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chunked_system import registered
from packed_support import packed_synth


@pytest.fixture(autouse=True)
def chunked_systems() -> Iterator[None]:
    """``chunk_lru``, ``chunk_lru_prefetch`` and ``split_lru`` exist for the test, and only for it."""
    with registered():
        yield


@pytest.fixture(scope="session")
def packed_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """200 small PNGs, packed 8 per chunk in a seeded shuffle."""
    return packed_synth(
        tmp_path_factory.mktemp("engineds") / "ds", n=200, seed=3, chunk_size=8, shuffle_seed=1
    )
