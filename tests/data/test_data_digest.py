"""`hotset data digest`: BLAKE2b-256 capabilities per sample, written, read back, checked."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from cli_support import run_cli
from hotset.data import Manifest, SynthConfig, make_synth
from hotset.data.chunks import ChunkLayout
from hotset.data.digest import (
    DIGEST_JSON,
    Digest,
    capability_of,
    digest_for_job,
    load_digest,
    write_digest,
)
from hotset.errors import HotsetError


def _blake(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=32).hexdigest()


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("digest") / "ds"
    make_synth(path, SynthConfig(n=40, image_size=8, classes=4, seed=11), workers=1)
    return path


@pytest.fixture(scope="module")
def digest_file(synth_dir: Path) -> Path:
    code, out = run_cli("data", "digest", str(synth_dir), "--quiet")
    assert code == 0, out
    path = synth_dir / DIGEST_JSON
    assert f"digest of 40 samples -> {path}" in out
    return path


def test_cli_writes_the_blake2b_of_every_file(synth_dir: Path, digest_file: Path) -> None:
    manifest = Manifest.load(synth_dir)
    doc = json.loads(digest_file.read_text())
    assert doc["format"] == "hotset-digest"
    assert doc["version"] == 1
    assert doc["hash"] == "blake2b-256"
    assert doc["count"] == 40 and doc["units"] == 0
    assert doc["dataset"] == manifest.identity()
    files = [(synth_dir / key).read_bytes() for key in manifest.keys]
    assert doc["blake2b"] == [_blake(f) for f in files]
    assert doc["xxh3"] == list(manifest.hashes)
    assert len(set(doc["blake2b"])) == 40  # synth samples are all different


def test_round_trip(synth_dir: Path, digest_file: Path, tmp_path: Path) -> None:
    manifest = Manifest.load(synth_dir)
    loaded = load_digest(digest_file, expected_count=40)
    assert len(loaded) == 40 and loaded.count == 40 and loaded.units == 0
    assert loaded.source == str(digest_file)
    for sid in range(40):
        data = (synth_dir / manifest.keys[sid]).read_bytes()
        assert loaded.capability(sid) == _blake(data) == capability_of(data)
        assert loaded.capability_for(sid, manifest.hashes[sid]) == _blake(data)
    loaded.check_matches(manifest)
    again = load_digest(write_digest(loaded, tmp_path / "copy.json"))
    assert (again.caps, again.xxh3s, again.count, again.dataset) == (
        loaded.caps,
        loaded.xxh3s,
        loaded.count,
        loaded.dataset,
    )


def test_cli_out_option_and_url_needs_out(synth_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "elsewhere" / "d.json"
    code, text = run_cli("data", "digest", str(synth_dir), "--out", str(out), "-q")
    assert code == 0, text
    assert load_digest(out).caps == load_digest(synth_dir / DIGEST_JSON).caps
    code, text = run_cli("data", "digest", "memory://nowhere", "-q")
    assert code == 2
    assert "--out" in text


def test_no_capability_for_other_bytes_or_ids(digest_file: Path, synth_dir: Path) -> None:
    digest = load_digest(digest_file)
    manifest = Manifest.load(synth_dir)
    assert digest.capability_for(0, "0" * 16) is None  # xxh3 other than the digest's
    assert digest.capability_for(40, manifest.hashes[0]) is None  # beyond the digest
    assert digest.capability_for(-1, manifest.hashes[0]) is None
    assert digest.capability_for(0, "not hex at all!!") is None


def test_a_changed_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ds"
    make_synth(path, SynthConfig(n=10, image_size=8, classes=2, seed=1), workers=1)
    manifest = Manifest.load(path)
    victim = path / manifest.keys[3]
    victim.write_bytes(victim.read_bytes()[::-1])
    code, text = run_cli("data", "digest", str(path), "-q")
    assert code == 2
    assert manifest.keys[3] in text and "sample 3" in text
    assert not (path / DIGEST_JSON).exists()


def test_packed_data_set_digests_its_chunks(tmp_path: Path) -> None:
    path = tmp_path / "ds"
    make_synth(path, SynthConfig(n=20, image_size=8, classes=2, seed=2), workers=1)
    assert run_cli("data", "pack", str(path), "--chunk-size", "8", "-q")[0] == 0
    code, text = run_cli("data", "digest", str(path), "-q")
    assert code == 0, text
    assert "20 samples and 3 chunks" in text
    digest = load_digest(path / DIGEST_JSON, expected_count=20)
    layout = ChunkLayout.load(path)
    assert digest.units == layout.n_chunks == 3
    for c in range(3):
        chunk = (path / layout.chunk_keys[c]).read_bytes()
        assert digest.capability(20 + c) == _blake(chunk)
    manifest = Manifest.load(path)
    digest.check_matches(manifest, unit_hashes=layout.chunk_hashes)
    digest_for_job(digest, manifest, unit_hashes=layout.chunk_hashes, reads_units=True)
    with pytest.raises(HotsetError, match="chunk"):
        digest.check_matches(manifest, unit_hashes=layout.chunk_hashes[::-1])


def _write(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc))
    return path


def _good_doc(digest_file: Path) -> dict[str, object]:
    doc = json.loads(digest_file.read_text())
    assert isinstance(doc, dict)
    return doc


@pytest.mark.parametrize(
    ("mutate", "problem"),
    [
        (lambda d: d.update(version=2), "version 2 is not supported"),
        (lambda d: d.update(format="other"), "format is 'other'"),
        (lambda d: d.update(hash="sha1"), "hash 'sha1'"),
        (lambda d: d.update(count=-1), "count must be an integer >= 0"),
        (lambda d: d.update(count="40"), "count must be an integer >= 0"),
        (lambda d: d.update(dataset=7), "dataset must be a string"),
        (lambda d: d["blake2b"].pop(), "blake2b has 39 entries but count + units is 40"),
        (lambda d: d.update(xxh3="x"), "xxh3 must be a list"),
        (lambda d: d["blake2b"].__setitem__(5, "AB" * 32), "blake2b entry 5"),
        (lambda d: d["blake2b"].__setitem__(6, "ab" * 31), "blake2b entry 6"),
        (lambda d: d["xxh3"].__setitem__(7, 12), "xxh3 entry 7"),
        (lambda d: d.update(count=41), "count + units is 41"),
    ],
)
def test_malformed_digest_is_a_named_error(
    digest_file: Path, tmp_path: Path, mutate: object, problem: str
) -> None:
    doc = _good_doc(digest_file)
    assert callable(mutate)
    mutate(doc)
    bad = _write(tmp_path / "bad.json", doc)
    with pytest.raises(HotsetError) as info:
        load_digest(bad)
    assert str(bad) in str(info.value)
    assert problem in str(info.value)


def test_truncated_missing_and_not_an_object(digest_file: Path, tmp_path: Path) -> None:
    text = digest_file.read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    with pytest.raises(HotsetError, match=r"cut\.json is not valid JSON \(truncated\?\)"):
        load_digest(cut)
    with pytest.raises(HotsetError, match=r"cannot read digest .*absent\.json"):
        load_digest(tmp_path / "absent.json")
    listed = _write(tmp_path / "list.json", [1, 2])
    with pytest.raises(HotsetError, match=r"list\.json: expected a JSON object, got list"):
        load_digest(listed)


def test_count_must_match_the_data_set(digest_file: Path, tmp_path: Path) -> None:
    with pytest.raises(HotsetError) as info:
        load_digest(digest_file, expected_count=41)
    assert str(digest_file) in str(info.value)
    assert "holds 40 samples but the data set has 41" in str(info.value)
    other = tmp_path / "other"
    make_synth(other, SynthConfig(n=40, image_size=8, classes=4, seed=12), workers=1)
    digest = load_digest(digest_file, expected_count=40)  # same count, other bytes
    with pytest.raises(HotsetError, match=r"made from other bytes: sample 0 "):
        digest.check_matches(Manifest.load(other))
    with pytest.raises(HotsetError, match="made from other bytes"):
        digest_for_job(digest_file, Manifest.load(other), unit_hashes=(), reads_units=False)
    with pytest.raises(HotsetError, match=r"digest must be a digest file's path .* got 42"):
        digest_for_job(42, Manifest.load(other), unit_hashes=(), reads_units=False)


def test_a_digest_without_chunks_is_refused_for_a_job_reading_chunks(
    digest_file: Path, synth_dir: Path
) -> None:
    digest = load_digest(digest_file)
    manifest = Manifest.load(synth_dir)
    with pytest.raises(HotsetError, match=r"holds 0 chunk capabilities .* packed into 2"):
        digest_for_job(digest, manifest, unit_hashes=("0" * 16, "1" * 16), reads_units=True)
    assert isinstance(digest_for_job(digest, manifest, unit_hashes=(), reads_units=False), Digest)
