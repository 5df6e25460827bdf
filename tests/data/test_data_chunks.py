"""Chunked storage: the layout's promises, packing real datasets, and what a chunk read costs."""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.data import ChunkLayout, load_layout, make_synth, open_dataset, pack_dataset
from hotset.data.chunks import CHUNKS_JSON, PACK_STREAM, chunk_key, layout_path, read_chunk
from hotset.data.manifest import Manifest, content_hash
from hotset.data.synth import SynthConfig
from hotset.errors import HotsetError, IntegrityError
from hotset.storage import LocalStore, ThrottledStore, open_store
from leftovers_support import blocked, fifo_sample, kill, start_pack, wait_for_leftover


def _synth(out: Path, n: int = 30, fmt: str = "png") -> Manifest:
    """PNG samples differ in size, so offsets are not multiples of one sample size."""
    return make_synth(out, SynthConfig(n=n, image_size=8, seed=1, format=fmt))


def _raw_dataset(out: Path, samples: list[bytes]) -> Manifest:
    """A dataset of arbitrary byte strings (zero-length ones included) with a valid manifest."""
    keys = [f"samples/{i:04d}.bin" for i in range(len(samples))]
    for key, data in zip(keys, samples, strict=True):
        (out / key).parent.mkdir(parents=True, exist_ok=True)
        (out / key).write_bytes(data)
    manifest = Manifest(
        range(len(samples)),
        keys,
        [len(s) for s in samples],
        [-1] * len(samples),
        [content_hash(s) for s in samples],
    )
    manifest.save(out)
    return manifest


def _tiny_layout(**changes: Any) -> ChunkLayout:
    """Three samples in two chunks: chunk 0 = ids 0 (3 B) then 2 (2 B); chunk 1 = id 1 (4 B)."""
    fields: dict[str, Any] = {
        "chunk_of": np.array([0, 1, 0]),
        "offset": np.array([0, 0, 3]),
        "length": np.array([3, 4, 2]),
        "chunk_keys": ("chunks/c000000.bin", "chunks/c000001.bin"),
        "chunk_sizes": np.array([5, 4]),
        "chunk_hashes": (content_hash(b"aaacc"), content_hash(b"bbbb")),
        "chunk_size": 2,
        "shuffle_seed": None,
    }
    fields.update(changes)
    return ChunkLayout(**fields)


def _check_packed(root: Path, manifest: Manifest, layout: ChunkLayout) -> None:
    """Every id in exactly one chunk, and every chunk file splits back into its samples."""
    store = LocalStore(root)
    members = np.concatenate([layout.members(c) for c in range(layout.n_chunks)])
    assert sorted(members.tolist()) == list(range(len(manifest)))
    for c in range(layout.n_chunks):
        blob = (root / layout.chunk_keys[c]).read_bytes()
        assert content_hash(blob) == layout.chunk_hashes[c]
        parts = read_chunk(store, layout, c, verify=True)
        assert list(parts) == layout.members(c).tolist()  # stored order
        for sid, data in parts.items():
            assert data == (root / manifest.keys[sid]).read_bytes()
            assert layout.locate(sid) == (c, layout.offset[sid], len(data))


# ---- the layout ----------------------------------------------------------------


def test_members_locate_split() -> None:
    layout = _tiny_layout()
    assert (layout.n, layout.n_chunks, layout.total_bytes) == (3, 2, 9)
    assert layout.members(0).tolist() == [0, 2]
    assert layout.members(1).tolist() == [1]
    assert layout.locate(2) == (0, 3, 2)
    assert layout.locate(np.int64(1)) == (1, 0, 4)
    assert layout.split(0, b"aaacc") == {0: b"aaa", 2: b"cc"}
    assert list(layout.split(0, b"aaacc")) == [0, 2]
    assert layout.split(1, b"bbbb") == {1: b"bbbb"}
    with pytest.raises(IntegrityError, match=r"chunk 0 .*got 4 bytes, layout says 5"):
        layout.split(0, b"aaac")
    with pytest.raises(HotsetError, match=r"chunk 2 is not in 0\.\.1"):
        layout.members(2)
    with pytest.raises(HotsetError, match=r"sample id 3 is not in 0\.\.2"):
        layout.locate(3)
    with pytest.raises(HotsetError, match="sample id: expected an integer"):
        layout.locate(1.0)  # type: ignore[arg-type]


def test_layout_is_frozen_and_read_only() -> None:
    layout = _tiny_layout(chunk_of=[0, 1, 0])
    assert layout.chunk_of.dtype == np.int64
    with pytest.raises(ValueError, match="read-only"):
        layout.members(0)[0] = 5
    with pytest.raises(ValueError, match="read-only"):
        layout.offset[0] = 1
    with pytest.raises(AttributeError):
        layout.chunk_size = 3  # type: ignore[misc]


def test_json_round_trip(tmp_path: Path) -> None:
    layout = _tiny_layout(shuffle_seed=7)
    again = ChunkLayout.from_json(layout.to_json())
    assert again == layout and again is not layout
    assert again != _tiny_layout()
    doc = json.loads(layout.to_json())
    assert doc["format"] == "hotset-chunks" and doc["version"] == 1 and doc["n"] == 3
    assert doc["chunks"][0] == {
        "key": "chunks/c000000.bin",
        "size": 5,
        "xxh3": content_hash(b"aaacc"),
        "ids": [0, 2],
        "offsets": [0, 3],
        "lengths": [3, 2],
    }
    assert not ChunkLayout.exists(tmp_path)
    assert load_layout(tmp_path) is None
    path = layout.save(tmp_path)
    assert path == tmp_path / CHUNKS_JSON == layout_path(tmp_path / "manifest.csv")
    assert ChunkLayout.exists(tmp_path)
    assert ChunkLayout.load(tmp_path) == layout
    assert load_layout(tmp_path) == layout
    assert not list(tmp_path.glob(".*"))  # the atomic write left no temporary


def test_load_without_layout_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(HotsetError, match="hotset data pack"):
        ChunkLayout.load(tmp_path)


@pytest.mark.parametrize(
    ("changes", "culprit"),
    [
        ({"offset": np.array([0, 0])}, "differ in length: 3, 2, 3"),
        ({"chunk_hashes": (content_hash(b""),)}, "chunk_hashes differ in length"),
        ({"chunk_of": np.array([0, 2, 0])}, r"chunk_of\[1\]: chunk 2 is not in 0..1"),
        ({"chunk_of": np.array([0.0, 1.0, 0.0])}, "chunk_of: expected integers"),
        ({"chunk_of": np.zeros((3, 1), dtype=int)}, "chunk_of: expected a 1-D array"),
        ({"offset": np.array([0, -1, 3])}, r"offset\[1\]: negative offset -1"),
        ({"length": np.array([3, 4, -2])}, r"length\[2\]: negative length -2"),
        ({"chunk_sizes": np.array([-5, 4])}, r"chunk_sizes\[0\]: negative size -5"),
        ({"offset": np.array([0, 1, 3])}, r"offset\[1\] \+ length\[1\] = 5 is past the end"),
        ({"offset": np.array([0, 0, 2])}, r"sample 2 at offset 2 overlaps sample 0"),
        ({"chunk_keys": ("c.bin", "c.bin")}, "duplicate key 'c.bin'"),
        ({"chunk_keys": ("../c.bin", "d.bin")}, "bad store key '../c.bin'"),
        ({"chunk_hashes": ("xyz", content_hash(b""))}, r"chunk_hashes\[0\]: 'xyz'"),
        ({"chunk_size": 0}, "chunk_size: must be an integer >= 1, got 0"),
        ({"chunk_size": True}, "chunk_size: .*True"),
        ({"shuffle_seed": -1}, "shuffle_seed: .*-1"),
        (
            {"chunk_of": np.array([], dtype=int), "offset": [], "length": []},
            "at least one sample",
        ),
    ],
)
def test_bad_layouts_name_the_bad_value(changes: dict[str, Any], culprit: str) -> None:
    with pytest.raises(HotsetError, match=culprit):
        _tiny_layout(**changes)


def test_gaps_between_members_are_allowed() -> None:
    layout = _tiny_layout(offset=np.array([0, 0, 4]), chunk_sizes=np.array([7, 4]))
    assert layout.split(0, b"aaa-cc-") == {0: b"aaa", 2: b"cc"}


def test_zero_length_members_sit_first_at_their_offset() -> None:
    layout = _tiny_layout(
        chunk_of=np.array([0, 0, 0]),
        offset=np.array([0, 0, 3]),
        length=np.array([3, 0, 0]),
        chunk_keys=("c.bin",),
        chunk_sizes=np.array([3]),
        chunk_hashes=(content_hash(b"abc"),),
    )
    assert layout.members(0).tolist() == [1, 0, 2]
    assert layout.split(0, b"abc") == {1: b"", 0: b"abc", 2: b""}


def _doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(_tiny_layout().to_json())
    return doc


@pytest.mark.parametrize(
    ("edit", "culprit"),
    [
        (lambda d: d["chunks"][1]["ids"].__setitem__(0, 0), r"chunks\[1\].ids: id 0 is already"),
        (lambda d: d["chunks"][0]["ids"].__setitem__(1, 0), r"chunks\[0\].ids: id 0 is already"),
        (lambda d: d["chunks"][1]["ids"].__setitem__(0, 9), "id 9 is not in 0..2"),
        (lambda d: d.__setitem__("n", 4), "id 3 is in no chunk"),
        (lambda d: d.__setitem__("format", "zip"), "format must be 'hotset-chunks'"),
        (lambda d: d.__setitem__("version", 2), "version 2 is not supported"),
        (lambda d: d["chunks"][0].__setitem__("size", "5"), r"chunks\[0\].size"),
        (lambda d: d["chunks"][0]["lengths"].pop(), r"chunks\[0\]: ids, offsets and lengths"),
        (lambda d: d["chunks"][0].__setitem__("offsets", [0, 3.0]), r"chunks\[0\].offsets"),
        (lambda d: d.__setitem__("chunks", []), "chunks must be a non-empty list"),
        (lambda d: d.__setitem__("chunk_size", None), "chunk_size"),
    ],
)
def test_bad_json_names_the_field(edit: Any, culprit: str) -> None:
    doc = _doc()
    edit(doc)
    with pytest.raises(HotsetError, match=culprit) as info:
        ChunkLayout.from_json(json.dumps(doc), source="x/chunks.json")
    assert str(info.value).startswith("x/chunks.json: ")


def test_json_that_is_not_json() -> None:
    with pytest.raises(HotsetError, match=r"chunks\.json: not valid JSON"):
        ChunkLayout.from_json("{")


# ---- packing ---------------------------------------------------------------------


def test_pack_in_id_order(tmp_path: Path) -> None:
    manifest = _synth(tmp_path / "d", n=30)
    layout = pack_dataset(tmp_path / "d", chunk_size=8, shuffle_seed=None)  # the opt-out
    assert (layout.n, layout.n_chunks, layout.chunk_size, layout.shuffle_seed) == (30, 4, 8, None)
    assert (
        layout.chunk_keys
        == tuple(chunk_key(c) for c in range(4))
        == (
            "chunks/c000000.bin",
            "chunks/c000001.bin",
            "chunks/c000002.bin",
            "chunks/c000003.bin",
        )
    )
    for c in range(4):
        assert layout.members(c).tolist() == list(range(8 * c, min(8 * c + 8, 30)))
    assert layout.total_bytes == manifest.total_bytes
    np.testing.assert_array_equal(layout.length, manifest.sizes)
    _check_packed(tmp_path / "d", manifest, layout)
    assert ChunkLayout.load(tmp_path / "d") == layout
    assert load_layout(tmp_path / "d" / "manifest.csv", manifest=manifest) == layout
    assert not [p.name for p in (tmp_path / "d").iterdir() if p.name.startswith(".")]


def test_pack_shuffled_is_a_seeded_permutation(tmp_path: Path) -> None:
    manifest = _synth(tmp_path / "d", n=30)
    layout = pack_dataset(tmp_path / "d", chunk_size=7, shuffle_seed=5)
    perm = np.random.default_rng([5, PACK_STREAM]).permutation(30)  # never an epoch's draw
    assert layout.n_chunks == 5 and layout.shuffle_seed == 5
    for c in range(5):
        assert layout.members(c).tolist() == perm[7 * c : 7 * c + 7].tolist()
    _check_packed(tmp_path / "d", manifest, layout)
    assert pack_dataset(tmp_path / "d", chunk_size=7, shuffle_seed=5) == layout  # same seed
    other = pack_dataset(tmp_path / "d", chunk_size=7, shuffle_seed=6)
    assert other.chunk_hashes != layout.chunk_hashes
    _check_packed(tmp_path / "d", manifest, other)


def test_repack_replaces_stale_chunk_files(tmp_path: Path) -> None:
    manifest = _synth(tmp_path / "d", n=30)
    pack_dataset(tmp_path / "d", chunk_size=4)
    assert len(list((tmp_path / "d" / "chunks").iterdir())) == 8
    layout = pack_dataset(tmp_path / "d", chunk_size=16, shuffle_seed=0)
    assert sorted(p.name for p in (tmp_path / "d" / "chunks").iterdir()) == [
        "c000000.bin",
        "c000001.bin",
    ]
    assert ChunkLayout.load(tmp_path / "d") == layout
    _check_packed(tmp_path / "d", manifest, layout)
    assert not [p.name for p in (tmp_path / "d").iterdir() if p.name.startswith(".")]


def test_corrupted_sample_fails_the_pack_and_keeps_the_old_layout(tmp_path: Path) -> None:
    manifest = _synth(tmp_path / "d", n=20, fmt="npy")
    old = pack_dataset(tmp_path / "d", chunk_size=8)
    before = {p.name: p.read_bytes() for p in (tmp_path / "d" / "chunks").iterdir()}
    sample = tmp_path / "d" / manifest.keys[13]
    data = sample.read_bytes()
    sample.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # same size, other bytes
    with pytest.raises(IntegrityError, match=rf"sample 13 \('{manifest.keys[13]}'\)"):
        pack_dataset(tmp_path / "d", chunk_size=4)
    assert ChunkLayout.load(tmp_path / "d") == old
    assert {p.name: p.read_bytes() for p in (tmp_path / "d" / "chunks").iterdir()} == before
    assert not [p.name for p in (tmp_path / "d").iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("chunk_size", [0, -3, True, 2.5, "8"])
def test_bad_chunk_size_is_named(tmp_path: Path, chunk_size: object) -> None:
    _synth(tmp_path / "d", n=5)
    with pytest.raises(HotsetError, match=f"chunk_size: .*{chunk_size!r}"):
        pack_dataset(tmp_path / "d", chunk_size=chunk_size)  # type: ignore[arg-type]
    assert not ChunkLayout.exists(tmp_path / "d")


def test_bad_shuffle_seed_is_named(tmp_path: Path) -> None:
    _synth(tmp_path / "d", n=5)
    with pytest.raises(HotsetError, match=r"shuffle_seed: .*-1"):
        pack_dataset(tmp_path / "d", shuffle_seed=-1)


def test_pack_refuses_urls_and_sample_keys_inside_chunks(tmp_path: Path) -> None:
    with pytest.raises(HotsetError, match=r"writes local files; .*packs it in its store"):
        pack_dataset("memory://somewhere")
    manifest = Manifest(
        [0], ["chunks/x.bin"], [1], [-1], [content_hash(b"x")], {"root": "."}
    )  # a sample the chunks/ swap would delete
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "chunks").mkdir()
    (tmp_path / "other" / "chunks" / "x.bin").write_bytes(b"x")
    manifest.save(tmp_path / "other")
    with pytest.raises(HotsetError, match=r"sample key 'chunks/x\.bin' lies in chunks/"):
        pack_dataset(tmp_path / "other")
    assert (tmp_path / "other" / "chunks" / "x.bin").read_bytes() == b"x"


def test_layout_that_does_not_fit_the_manifest_is_refused(tmp_path: Path) -> None:
    manifest = _raw_dataset(tmp_path, [b"ab", b"cde", b"f"])
    pack_dataset(tmp_path, chunk_size=2)
    assert load_layout(tmp_path, manifest=manifest) is not None
    smaller = Manifest([0, 1], manifest.keys[:2], [2, 3], [-1, -1], manifest.hashes[:2])
    with pytest.raises(HotsetError, match="layout has 3 samples but the manifest has 2"):
        load_layout(tmp_path, manifest=smaller)
    resized = Manifest([0, 1, 2], manifest.keys, [2, 4, 1], [-1] * 3, manifest.hashes)
    with pytest.raises(HotsetError, match="sample 1 has 3 bytes but the manifest says 4"):
        load_layout(tmp_path, manifest=resized)


def test_chunks_of_a_dataset_with_another_root_go_to_the_root(tmp_path: Path) -> None:
    """The manifest lives in one folder, the samples (the store) in another."""
    data = tmp_path / "data"
    data.mkdir()
    manifest = _raw_dataset(data, [b"one", b"two", b"three"])
    meta_dir = tmp_path / "meta"
    Manifest(
        manifest.ids,
        manifest.keys,
        manifest.sizes,
        manifest.labels,
        manifest.hashes,
        {"root": "../data"},
    ).save(meta_dir)
    layout = pack_dataset(meta_dir, chunk_size=2, shuffle_seed=None)  # id 2 alone in chunk 1
    assert (meta_dir / CHUNKS_JSON).is_file() and not (data / CHUNKS_JSON).exists()
    _, store = open_dataset(meta_dir)
    assert read_chunk(store, layout, 1) == {2: b"three"}
    assert (data / "chunks" / "c000001.bin").read_bytes() == b"three"


def test_layout_is_read_through_a_url_store() -> None:
    url = f"memory://hotset-test-chunks-{uuid.uuid4().hex}"
    store = open_store(url, create=True)
    try:
        assert load_layout(url) is None
        layout = _tiny_layout()
        store.write(CHUNKS_JSON, layout.to_json().encode())
        store.write(layout.chunk_keys[0], b"aaacc")
        assert load_layout(url) == layout
        assert read_chunk(store, layout, 0, verify=True) == {0: b"aaa", 2: b"cc"}
        store.write(layout.chunk_keys[0], b"aaadd")  # same size, other bytes
        assert read_chunk(store, layout, 0) == {0: b"aaa", 2: b"dd"}
        with pytest.raises(IntegrityError, match="xxh3"):
            read_chunk(store, layout, 0, verify=True)
    finally:
        store.fs.rm(store.root, recursive=True)  # type: ignore[attr-defined]


@settings(max_examples=40, deadline=None)
@given(
    samples=st.lists(st.binary(max_size=40), min_size=1, max_size=30),
    chunk_size=st.integers(min_value=1, max_value=35),
    seed=st.none() | st.integers(min_value=0, max_value=2**32),
)
def test_every_id_in_one_chunk_and_chunks_split_back(
    samples: list[bytes], chunk_size: int, seed: int | None
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        manifest = _raw_dataset(root, samples)
        layout = pack_dataset(root, chunk_size=chunk_size, shuffle_seed=seed)
        assert layout.n_chunks == -(-len(samples) // chunk_size)
        counts = np.bincount(layout.chunk_of, minlength=layout.n_chunks)
        assert counts[:-1].tolist() == [chunk_size] * (layout.n_chunks - 1)
        _check_packed(root, manifest, layout)
        assert ChunkLayout.from_json(layout.to_json()) == layout


# ---- what a chunk read costs ----------------------------------------------------


def test_a_chunk_costs_one_request_and_single_reads_cost_one_each(tmp_path: Path) -> None:
    manifest = _synth(tmp_path / "d", n=64)
    layout = pack_dataset(tmp_path / "d", chunk_size=64)
    assert layout.n_chunks == 1
    total = manifest.total_bytes
    latency_s, bytes_per_s = 0.002, 5e6  # 5 MB/s: the transfer term is visible

    def throttled() -> ThrottledStore:
        return ThrottledStore(
            LocalStore(tmp_path / "d"), clock="virtual", latency_ms=2, bandwidth_mb_s=5
        )

    store = throttled()
    parts = read_chunk(store, layout, 0)
    assert len(parts) == 64
    stats = store.stats()
    assert stats.reads == 1 and stats.bytes_read == total
    assert store.modeled_seconds == pytest.approx(latency_s + total / bytes_per_s)

    store = throttled()
    singles = {sid: store.read(manifest.keys[sid]) for sid in range(64)}
    assert singles == parts
    stats = store.stats()
    assert stats.reads == 64 and stats.bytes_read == total
    assert store.modeled_seconds == pytest.approx(64 * latency_s + total / bytes_per_s)


# -- leftovers of killed packs (issue #25, item 9) --------------------------------------


def test_a_killed_pack_leaves_a_folder_the_next_pack_removes_and_a_live_ones_stays(
    tmp_path: Path,
) -> None:
    ds = tmp_path / "ds"
    _synth(ds, n=30)
    older = ds / ".chunks.abcd1234.tmp"  # an older hotset's: no owner recorded
    older.mkdir()
    with fifo_sample(ds, 13) as fifo:  # a pack stops at sample 13
        killed = start_pack(ds, "--chunk-size", "4")
        held = blocked(fifo, killed)
        dead_dir = Path(wait_for_leftover(ds, killed, "chunks").path)
        kill(killed)
        os.close(held)
        assert any(dead_dir.iterdir())  # what a kill leaves: the chunks written so far
        live = start_pack(ds, "--chunk-size", "4")
        held = blocked(fifo, live)
    try:
        live_dir = Path(wait_for_leftover(ds, live, "chunks").path)
        layout = pack_dataset(ds, chunk_size=4)  # the re-pack
        assert not dead_dir.exists()  # its owner is dead: removed
        assert live_dir.is_dir()  # its owner still packs: kept
        assert older.is_dir()  # no owner recorded: not this pack's to judge
        assert load_layout(ds) == layout
    finally:
        kill(live)
        os.close(held)
    pack_dataset(ds, chunk_size=4)
    assert not live_dir.exists()  # dead now
    assert sorted(p.name for p in ds.iterdir() if p.name.startswith(".chunks.")) == [older.name]
