"""A chunk set knows the manifest it was packed from, and ``hotset data verify`` checks it.

Issue #25, item 1: ``chunks.json`` now records the manifest's fingerprint, so a set
left stale by new data of the same sizes is refused at open with the command that
re-packs it; every member cut from a chunk can be checked against the manifest;
``hotset data verify`` re-reads the chunks too. Item 7: a ``chunks.json`` that is
not UTF-8, nested too deeply or holding huge integers is a HotsetError naming it.
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

import hotset
from cli_support import run_cli
from hotset.data import SynthConfig, load_layout, make_synth, open_dataset, pack_dataset
from hotset.data.chunks import CHUNKS_JSON, ChunkLayout, read_chunk
from hotset.data.manifest import Manifest
from hotset.errors import HotsetError, IntegrityError
from hotset.storage import open_store

N = 40


def _synth(path: Path, seed: int) -> Path:
    """Same-size .npy samples: other data of the same sizes is a seed away."""
    make_synth(path, SynthConfig(n=N, image_size=4, classes=3, seed=seed, format="npy"))
    return path


@pytest.fixture
def packed(tmp_path: Path) -> Path:
    path = _synth(tmp_path / "my data", seed=0)  # a space: the command must quote it
    pack_dataset(path, chunk_size=8, shuffle_seed=5)
    return path


def _edit(path: Path, edit: Any) -> None:
    doc = json.loads((path / CHUNKS_JSON).read_text())
    edit(doc)
    (path / CHUNKS_JSON).write_text(json.dumps(doc))


def _reverse_ids(doc: dict[str, Any]) -> None:
    for chunk in doc["chunks"]:
        chunk["ids"].reverse()


def _copy_over_new_data(path: Path, tmp_path: Path) -> None:
    newer = _synth(tmp_path / "newer", seed=4)
    for item in newer.iterdir():
        if item.is_dir():
            shutil.copytree(item, path / item.name, dirs_exist_ok=True)
        else:
            shutil.copy(item, path / item.name)


def test_pack_records_the_manifest_fingerprint(packed: Path) -> None:
    manifest = Manifest.load(packed)
    layout = ChunkLayout.load(packed)
    assert layout.manifest_identity == manifest.identity()
    assert json.loads((packed / CHUNKS_JSON).read_text())["manifest_identity"] == (
        manifest.identity()
    )
    assert ChunkLayout.from_json(layout.to_json()) == layout
    assert layout.repack_command() == f"hotset data pack '{packed}' --chunk-size 8 --shuffle-seed 5"


def test_new_data_of_the_same_sizes_is_a_stale_set_with_the_pack_command(
    packed: Path, tmp_path: Path
) -> None:
    _copy_over_new_data(packed, tmp_path)
    manifest = Manifest.load(packed)
    assert load_layout(packed) is not None  # unchecked, it parses
    with pytest.raises(HotsetError, match="packed from another manifest") as info:
        load_layout(packed, manifest=manifest)
    assert "stale" in str(info.value)
    assert f"`hotset data pack '{packed}' --chunk-size 8 --shuffle-seed 5`" in str(info.value)
    with pytest.raises(HotsetError, match="stale"):
        hotset.open_dataset(packed)
    pack_dataset(packed, chunk_size=8, shuffle_seed=5)  # what the message says
    assert load_layout(packed, manifest=manifest) is not None


def test_a_layout_from_before_the_fingerprint_is_accepted(packed: Path) -> None:
    """Old packed sets keep working; their members are checked when read (see the loader)."""
    _edit(packed, lambda doc: doc.pop("manifest_identity"))
    layout = load_layout(packed, manifest=Manifest.load(packed))
    assert layout is not None and layout.manifest_identity is None


def test_a_stale_set_behind_a_url_says_to_pack_it_there(packed: Path, tmp_path: Path) -> None:
    _copy_over_new_data(packed, tmp_path)
    url = f"memory://hotset-test-stale-{uuid.uuid4().hex}"
    store = open_store(url, create=True)
    try:
        for name in ("manifest.csv", "dataset.json", CHUNKS_JSON):
            store.write(name, (packed / name).read_bytes())
        with pytest.raises(HotsetError, match="re-pack it with") as info:
            load_layout(url, manifest=Manifest.load(packed))
        assert f"`hotset data pack {url} --chunk-size 8 --shuffle-seed 5`" in str(info.value)
    finally:
        store.fs.rm(store.root, recursive=True)  # type: ignore[attr-defined]


def test_read_chunk_checks_members_against_the_manifest(packed: Path) -> None:
    """Reversed ids keep every chunk's hash right: only the members' hashes tell."""
    _edit(packed, _reverse_ids)
    manifest, store = open_dataset(packed)
    layout = load_layout(packed, manifest=manifest)  # the fingerprint is still right
    assert layout is not None
    assert read_chunk(store, layout, 0, verify=True)  # the chunk file itself is fine
    first = int(layout.members(0)[0])
    with pytest.raises(IntegrityError) as info:
        read_chunk(store, layout, 0, verify=True, manifest=manifest)
    message = str(info.value)
    assert message.startswith(f"chunk 0 ('chunks/c000000.bin'): sample {first} ")
    assert repr(manifest.keys[first]) in message
    assert "hotset data pack" in message


def test_verify_chunks_names_each_bad_chunk_and_its_samples(packed: Path) -> None:
    from hotset.data.verify import verify_chunks

    manifest, store = open_dataset(packed)
    layout = ChunkLayout.load(packed)
    good = verify_chunks(manifest, store, layout)
    assert good.ok and good.checked == layout.n_chunks and good.bytes == layout.total_bytes
    assert good.summary() == f"verified {layout.n_chunks} chunks, {layout.total_bytes} bytes"
    (packed / layout.chunk_keys[1]).unlink()
    raw = bytearray((packed / layout.chunk_keys[3]).read_bytes())
    raw[5] ^= 0x01
    (packed / layout.chunk_keys[3]).write_bytes(bytes(raw))
    bad = verify_chunks(manifest, store, layout, workers=2)
    assert not bad.ok and bad.stale is None
    assert [(b.chunk, b.key) for b in bad.bad] == [
        (1, layout.chunk_keys[1]),
        (3, layout.chunk_keys[3]),
    ]
    assert "cannot be read" in bad.bad[0].problem
    assert "xxh3" in bad.bad[3 - 2].problem
    assert bad.bad[1].ids == (int(layout.members(3)[0]),)  # byte 5 lies in its first member
    assert bad.summary().startswith("FAILED: 2 of 5 chunks do not match (1 samples")


def test_cli_verify_checks_chunks(packed: Path, tmp_path: Path) -> None:
    code, out = run_cli("data", "verify", str(packed), "-q")
    assert code == 0, out
    assert (
        out.splitlines()[-1] == f"verified 5 chunks, {ChunkLayout.load(packed).total_bytes} bytes"
    )

    _edit(packed, _reverse_ids)
    code, out = run_cli("data", "verify", str(packed), "-q")
    lines = out.splitlines()
    assert code == 1
    assert lines[0].startswith(f"verified {N} samples")  # the sample files are fine
    assert lines[1].startswith("bad chunk chunks/c000000.bin: 8 samples do not match the manifest")
    assert "FAILED: 5 of 5 chunks do not match (40 samples" in out
    assert (
        lines[-1] == f"re-pack with `hotset data pack '{packed}' --chunk-size 8 --shuffle-seed 5`"
    )

    pack_dataset(packed, chunk_size=8, shuffle_seed=5)
    _copy_over_new_data(packed, tmp_path)
    code, out = run_cli("data", "verify", str(packed), "-q")
    assert code == 1
    assert "stale chunks: chunk layout was packed from another manifest" in out
    assert "the chunk set is stale" in out.splitlines()[-1]


def test_cli_verify_notes_a_layout_without_fingerprint_and_fails_an_unreadable_one(
    packed: Path,
) -> None:
    _edit(packed, lambda doc: doc.pop("manifest_identity"))
    code, out = run_cli("data", "verify", str(packed), "-q")
    assert code == 0, out
    assert "note: chunks.json records no manifest fingerprint" in out
    (packed / CHUNKS_JSON).write_bytes(b"\xff\xfe{}")
    code, out = run_cli("data", "verify", str(packed), "-q")
    assert code == 1
    assert "bad chunk layout: " in out and "is not UTF-8 text" in out


def _valid_doc() -> dict[str, Any]:
    """Three samples in two chunks (as tests/data/test_data_chunks.py's tiny layout)."""
    return {
        "format": "hotset-chunks",
        "version": 1,
        "n": 3,
        "chunk_size": 2,
        "shuffle_seed": None,
        "chunks": [
            {"key": "chunks/a.bin", "size": 5, "xxh3": "0" * 16, "ids": [0, 2]}
            | {"offsets": [0, 3], "lengths": [3, 2]},
            {"key": "chunks/b.bin", "size": 4, "xxh3": "1" * 16, "ids": [1]}
            | {"offsets": [0], "lengths": [4]},
        ],
    }


def _set(path: str, value: Any) -> Any:
    def edit(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = doc
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        if last.isdigit():
            target[int(last)] = value
        else:
            target[last] = value

    return edit


@pytest.mark.parametrize(
    ("text", "culprit"),
    [
        (b"\xff\xfe{}", r"not a chunk layout \(JSON\): byte 0xff at offset 0 is not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "not valid JSON: nested too deeply"),
        (b'{"n": 1' + b"0" * 5000 + b"}", "not valid JSON: Exceeds the limit"),
    ],
)
def test_chunks_json_that_is_no_layout_is_named(tmp_path: Path, text: bytes, culprit: str) -> None:
    (tmp_path / CHUNKS_JSON).write_bytes(text)
    with pytest.raises(HotsetError, match=culprit) as info:
        load_layout(tmp_path)
    assert str(info.value).startswith(f"{tmp_path / CHUNKS_JSON}: ")


@pytest.mark.parametrize(
    ("edit", "culprit"),
    [
        (_set("chunks.0.ids.1", 2**63), r"chunks\[0\].ids: 9223372036854775808 does not fit"),
        (_set("chunks.0.offsets.1", -(2**64)), r"chunks\[0\].offsets: -1844674407370955161"),
        (_set("chunks.1.size", 10**30), r"chunks\[1\].size: expected a 64-bit integer"),
        (_set("n", 10**15), r"id 3 is in no chunk \(n is 1000000000000000, the chunks hold 3"),
        (_set("n", 10**40), r"id 3 is in no chunk \(n is 10{23}\.\.\. \(41 characters\)"),
        # offset + length overflows int64: still past the chunk's end, not a wrap-around
        (_set("chunks.0.offsets.1", 2**62), r"offset\[2\] \+ length\[2\] = 4611686018427387906"),
        (_set("chunks.0.lengths.1", 2**63 - 1), r"offset\[2\] \+ length\[2\] = 922337203685477"),
        (_set("chunks.0.xxh3", "0" * 16 + "\n"), r"chunk_hashes\[0\]: '0000000000000000\\n'"),
        (_set("version", True), "version True is not supported"),
        (_set("n", 3.0), "n must be an integer >= 1, got 3.0"),
        (_set("chunk_size", 2.0), "chunk_size: must be an integer >= 1, got 2.0"),
        (_set("chunks.1.key", "chunks/\ud800.bin"), r"chunks\[1\].key: .* is not UTF-8 text"),
        (_set("manifest_identity", "xyz"), "manifest_identity: 'xyz' is not 16 lowercase hex"),
    ],
)
def test_bad_values_in_chunks_json_are_named(tmp_path: Path, edit: Any, culprit: str) -> None:
    doc = _valid_doc()
    assert ChunkLayout.from_json(json.dumps(doc)).n == 3  # the base document is valid
    edit(doc)
    (tmp_path / CHUNKS_JSON).write_text(json.dumps(doc))
    with pytest.raises(HotsetError, match=culprit):
        load_layout(tmp_path)
