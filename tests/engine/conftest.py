"""Fixtures for the engine tests: the test-only chunked systems, registered per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hotset.data import SynthConfig, make_synth
from hotset.data.chunks import pack_dataset
from hotset.systems import registry


@pytest.fixture(autouse=True)
def chunked_systems() -> Iterator[None]:
    """``chunk_lru`` and ``chunk_lru_prefetch`` exist for the test, and only for it."""
    from chunked_system import MODULE

    before = list(registry._MODULES)
    registry.register_module(MODULE)
    try:
        yield
    finally:
        registry._MODULES[:] = before


@pytest.fixture(scope="session")
def packed_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """200 small PNGs, packed 8 per chunk in a seeded shuffle."""
    path = tmp_path_factory.mktemp("engineds") / "ds"
    make_synth(path, SynthConfig(n=200, image_size=8, classes=4, seed=3), workers=1)
    pack_dataset(path, chunk_size=8, shuffle_seed=1)
    return path
