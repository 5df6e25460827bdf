"""verify: all good, a corrupted file, a deleted file."""

from __future__ import annotations

from pathlib import Path

import pytest

from hotset.data import make_digits, open_dataset, verify
from hotset.data.synth import SynthConfig, make_synth


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    make_synth(tmp_path / "d", SynthConfig(n=40, image_size=6, seed=2))
    return tmp_path / "d"


def test_clean_dataset_verifies(dataset: Path) -> None:
    m, store = open_dataset(dataset)
    result = verify(m, store)
    assert result.ok
    assert result.checked == 40 and result.bytes == m.total_bytes
    assert result.summary() == f"verified 40 samples, {m.total_bytes} bytes"
    assert store.stats().reads == 40


def test_corrupted_and_deleted_files_are_reported(dataset: Path) -> None:
    m, store = open_dataset(dataset)
    victim = dataset / m.keys[7]
    raw = bytearray(victim.read_bytes())
    raw[-5] ^= 0xFF
    victim.write_bytes(bytes(raw))
    (dataset / m.keys[30]).unlink()
    result = verify(m, store, workers=2)
    assert not result.ok
    assert [(x.id, x.key, x.expected) for x in result.mismatches] == [(7, m.keys[7], m.hashes[7])]
    assert result.mismatches[0].actual != m.hashes[7]
    assert result.missing == [m.keys[30]]
    assert result.checked == 40
    assert "1 mismatched and 1 missing of 40" in result.summary()


def test_same_size_different_bytes_is_caught(tmp_path: Path) -> None:
    m = make_digits(tmp_path / "g")
    _, store = open_dataset(tmp_path / "g")
    same_size = [
        i for i in range(1, len(m)) if m.sizes[i] == m.sizes[0] and m.hashes[i] != m.hashes[0]
    ]
    (tmp_path / "g" / m.keys[0]).write_bytes((tmp_path / "g" / m.keys[same_size[0]]).read_bytes())
    result = verify(m, store)
    assert [x.key for x in result.mismatches] == [m.keys[0]]
    assert result.mismatches[0].actual_size == result.mismatches[0].expected_size
