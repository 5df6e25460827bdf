"""Fixtures for the vision tests: a few photo-like JPEGs generated once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from hotset.data.photos import PhotoConfig, make_photos


@pytest.fixture(scope="session")
def photo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """24 JPEGs of 160x120 (a quarter portrait), made as the pipeline benchmark makes its."""
    path = tmp_path_factory.mktemp("photos") / "ds"
    make_photos(path, PhotoConfig(n=24, width=160, height=120, portrait=0.25, classes=4), workers=1)
    return path


@pytest.fixture(scope="session")
def photo_blobs(photo_dir: Path) -> list[bytes]:
    """Every photo's bytes, in id order, read from its file."""
    import hotset

    data = hotset.open_dataset(photo_dir, decode="bytes")
    return [(photo_dir / key).read_bytes() for key in data.manifest.keys]
