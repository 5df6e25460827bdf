"""Packing shuffles by default (issue #27, item 2): the seed it records, the opt-out, old
layouts without the record, and telling a label-homogeneous layout from a shuffled one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import hotset
from cli_support import run_cli
from hotset.bench.workloads import PACK_CHUNK_SIZE, PACK_SHUFFLE_SEED
from hotset.data import ChunkLayout, Manifest, SynthConfig, make_synth, pack_dataset
from hotset.data.chunks import CHUNKS_JSON, DEFAULT_SHUFFLE_SEED, PACK_STREAM
from hotset.data.homogeneity import THRESHOLD, homogeneity_warning, label_purity
from packed_support import label_sorted_synth


def _synth(path: Path, n: int = 40) -> Path:
    make_synth(path, SynthConfig(n=n, image_size=8, classes=4, seed=2), workers=1)
    return path


def _contiguous(layout: ChunkLayout) -> bool:
    """Whether every chunk holds a run of consecutive ids (id order)."""
    return all(
        np.array_equal(np.sort(m), np.arange(m.min(), m.max() + 1))
        for m in (layout.members(c) for c in range(layout.n_chunks))
    )


def _recorded(path: Path) -> dict[str, object]:
    doc: dict[str, object] = json.loads((path / CHUNKS_JSON).read_text())
    return doc


def test_a_default_pack_is_a_seeded_shuffle_and_records_its_seed(tmp_path: Path) -> None:
    ds = _synth(tmp_path / "ds")
    layout = pack_dataset(ds, chunk_size=8)
    assert layout.shuffle_seed == DEFAULT_SHUFFLE_SEED == 0 and layout.shuffle == "seed 0"
    assert not _contiguous(layout)
    assert _recorded(ds)["shuffle_seed"] == 0
    perm = np.random.default_rng([0, PACK_STREAM]).permutation(40)
    assert layout.members(0).tolist() == perm[:8].tolist()
    assert hotset.open_dataset(ds).layout == layout


def test_the_default_pack_is_the_layout_the_benchmarks_measured(tmp_path: Path) -> None:
    """``hotset.bench.workloads.ensure_packed`` passes its seed: a default pack is the same
    layout, so committed numbers describe what a user's default pack gives."""
    ds = _synth(tmp_path / "ds", n=150)
    bench = pack_dataset(ds, chunk_size=PACK_CHUNK_SIZE, shuffle_seed=PACK_SHUFFLE_SEED)
    assert pack_dataset(ds) == bench


def test_cli_pack_shuffles_by_default_and_no_shuffle_keeps_id_order(tmp_path: Path) -> None:
    ds = _synth(tmp_path / "ds")
    code, out = run_cli("data", "pack", str(ds), "--chunk-size", "8", "-q")
    assert code == 0 and "(shuffled with seed 0)" in out
    default = ChunkLayout.load(ds)
    assert _recorded(ds)["shuffle_seed"] == 0 and not _contiguous(default)

    code, out = run_cli("data", "pack", str(ds), "--chunk-size", "8", "--no-shuffle", "-q")
    assert code == 0 and "(in id order)" in out
    ordered = ChunkLayout.load(ds)
    assert _recorded(ds)["shuffle_seed"] is None and ordered.shuffle == "none"
    assert [ordered.members(c).tolist() for c in range(5)] == [
        list(range(8 * c, 8 * c + 8)) for c in range(5)
    ]
    # re-packed alike: the same order again, not the default shuffle
    assert ordered.repack_command() == f"hotset data pack {ds} --chunk-size 8 --no-shuffle"

    code, out = run_cli("data", "pack", str(ds), "--chunk-size", "8", "--shuffle-seed", "5", "-q")
    assert code == 0 and "(shuffled with seed 5)" in out
    five = ChunkLayout.load(ds)
    assert _recorded(ds)["shuffle_seed"] == 5 and five != default
    assert (
        run_cli("data", "pack", str(ds), "--chunk-size", "8", "--shuffle-seed", "5", "-q")[0] == 0
    )
    assert ChunkLayout.load(ds) == five  # the same seed, the same layout
    assert run_cli("data", "pack", str(ds), "--chunk-size", "8", "-q")[0] == 0
    assert ChunkLayout.load(ds) == default


def test_cli_pack_refuses_a_seed_with_no_shuffle(tmp_path: Path) -> None:
    ds = _synth(tmp_path / "ds", n=10)
    code, out = run_cli("data", "pack", str(ds), "--no-shuffle", "--shuffle-seed", "3", "-q")
    assert code == 2 and "--no-shuffle and --shuffle-seed 3" in out
    assert not (ds / CHUNKS_JSON).exists()


def test_a_chunks_json_without_the_shuffle_record_opens_as_unknown(tmp_path: Path) -> None:
    """A layout written before (or without) the record still opens; its order is unknown."""
    ds = _synth(tmp_path / "ds")
    pack_dataset(ds, chunk_size=8, shuffle_seed=3)
    doc = _recorded(ds)
    del doc["shuffle_seed"]
    (ds / CHUNKS_JSON).write_text(json.dumps(doc))

    data = hotset.open_dataset(ds, decode="bytes")
    assert data.layout is not None
    assert data.layout.shuffle == "unknown" and data.layout.shuffle_seed is None
    assert "shuffle_seed" not in json.loads(data.layout.to_json())  # not made up on save
    assert data.layout.repack_command() == f"hotset data pack {ds} --chunk-size 8"
    with hotset.loader(data, system="brand", cache=0.3, batch_size=8) as loader:
        ids = [i for _, _, batch, _ in loader for i in batch.tolist()]
    assert sorted(ids) == list(range(40))


def test_label_purity_tells_a_label_sorted_layout_from_shuffled_ones(tmp_path: Path) -> None:
    ds = label_sorted_synth(tmp_path / "ds", n=200, seed=3)
    labels = Manifest.load(ds).labels
    ordered = pack_dataset(ds, chunk_size=8, shuffle_seed=None)
    found = label_purity(ordered, labels)
    assert found is not None and found.homogeneous and found.excess > 0.9
    for seed in range(4):
        shuffled = pack_dataset(ds, chunk_size=8, shuffle_seed=seed)
        found = label_purity(shuffled, labels)
        assert found is not None and not found.homogeneous
        assert abs(found.excess) < THRESHOLD / 2  # far from the threshold, either way
    # nothing to judge: one label, or no labels at all
    assert label_purity(shuffled, np.zeros(200, dtype=np.int64)) is None
    assert label_purity(shuffled, np.full(200, -1)) is None


def test_label_sorted_no_shuffle_pack_warns_with_the_repack_command(tmp_path: Path) -> None:
    ds = label_sorted_synth(tmp_path / "ds", n=120, seed=4)
    code, out = run_cli("data", "pack", str(ds), "--chunk-size", "8", "--no-shuffle", "-q")
    assert code == 0
    assert "label-homogeneous" in out
    assert f"`hotset data pack {ds} --chunk-size 8 --shuffle-seed 0`" in out
    warning = homogeneity_warning(ChunkLayout.load(ds), Manifest.load(ds).labels)
    assert warning is not None and warning in out

    code, out = run_cli("data", "pack", str(ds), "--chunk-size", "8", "-q")  # the default
    assert code == 0 and "label-homogeneous" not in out
    assert homogeneity_warning(ChunkLayout.load(ds), Manifest.load(ds).labels) is None


@pytest.mark.parametrize("seed", [None, 7])
def test_the_record_survives_a_round_trip(tmp_path: Path, seed: int | None) -> None:
    ds = _synth(tmp_path / "ds", n=20)
    layout = pack_dataset(ds, chunk_size=4, shuffle_seed=seed)
    back = ChunkLayout.from_json(layout.to_json())
    assert back == layout and back.shuffle == ("none" if seed is None else f"seed {seed}")
