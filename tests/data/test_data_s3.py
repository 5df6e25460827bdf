"""Data sets in S3: import, pack, upload and open against a real server (tests/s3_support.py).

Each S3 result is held against what the local code makes of the same files:
an import from S3 is the manifest a local import gives, a pack in S3 the layout
a local pack gives, byte for byte.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cli_support import run_cli
from hotset.data import import_folder, load_layout, open_dataset, pack_dataset
from hotset.data.chunks import CHUNKS_JSON
from hotset.data.manifest import Manifest
from hotset.data.store_import import scan_keys
from hotset.data.writer import encode_image
from hotset.errors import HotsetError
from s3_support import S3Bucket

CLASSES = {"cat": 5, "dog": 4, "emu": 3}


def _tree(root: Path, bucket: S3Bucket, prefix: str) -> dict[str, bytes]:
    """The same ImageFolder tree on disk under ``root`` and in S3 under ``prefix``."""
    files = {}
    rng = np.random.default_rng(0)
    for name, count in CLASSES.items():
        for i in range(count):
            pixels = rng.integers(0, 255, size=(6, 5, 3), dtype=np.uint8)
            files[f"{name}/img{i:02d}.png"] = encode_image(pixels, "png")
    files["cat/sub/deep.png"] = encode_image(np.zeros((6, 5, 3), np.uint8), "png")
    for key, data in files.items():
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        (root / key).write_bytes(data)
        bucket.put(f"{prefix}/{key}", data)
    bucket.put(f"{prefix}/cat/.hidden.png", b"not an image")
    bucket.put(f"{prefix}/README.txt", b"not an image")
    return files


def test_s3_import_writes_the_manifest_a_local_import_of_the_same_tree_writes(
    s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    files = _tree(tmp_path / "tree", s3_bucket, "imgs")
    local = import_folder(tmp_path / "tree")
    url = s3_bucket.url("imgs")
    code, out = run_cli("data", "import", url, "-q")
    assert code == 0, out
    assert f"imported {len(files)} samples" in out and f"{url}/manifest.csv" in out
    manifest, store = open_dataset(url)
    assert manifest.keys == local.keys and manifest.hashes == local.hashes
    assert manifest.labels.tolist() == local.labels.tolist()
    assert manifest.meta["class_names"] == ["cat", "dog", "emu"]
    assert manifest.meta["root"] == "." and manifest.meta["image_size"] == [6, 5]
    assert store.read(manifest.keys[0]) == files[manifest.keys[0]]
    code, out = run_cli("data", "import", url, "-q")
    assert code == 2 and "already exists (use --force" in out


def test_s3_import_into_a_local_out_reads_the_samples_from_the_url(
    s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    files = _tree(tmp_path / "tree", s3_bucket, "ro")
    url = s3_bucket.url("ro")
    code, out = run_cli("data", "import", url, "--out", str(tmp_path / "m"), "-q")
    assert code == 0, out
    assert not any(k.endswith("manifest.csv") for k in s3_bucket.listed())  # nothing written there
    manifest, store = open_dataset(tmp_path / "m")
    assert manifest.meta["root"] == url
    assert [store.read(k) for k in manifest.keys] == [files[k] for k in manifest.keys]
    with pytest.raises(HotsetError, match="the samples are in 's3://"):
        pack_dataset(tmp_path / "m")  # a local pack would write into no folder
    code, out = run_cli("data", "pack", str(tmp_path / "m"), "--chunk-size", "4", "-q")
    assert code == 0, out  # hotset data pack packs it in the store, chunks.json kept here
    assert (tmp_path / "m" / CHUNKS_JSON).is_file()
    assert sum(k.startswith("ro/chunks/") for k in s3_bucket.listed()) == 4


def test_s3_import_refuses_a_split_tree_naming_the_command(s3_bucket: S3Bucket) -> None:
    s3_bucket.put("s/train/a/x.png", b"x")
    s3_bucket.put("s/val/a/y.png", b"y")
    code, out = run_cli("data", "import", s3_bucket.url("s"), "-q")
    assert code == 2 and f"hotset data import {s3_bucket.url('s')}/train" in out
    with pytest.raises(HotsetError, match="both image files and folders"):
        scan_keys(["a.png", "c/b.png"], where="s3://b/p")


def test_s3_pack_in_the_store_is_the_local_pack_and_verifies(
    s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    _tree(tmp_path / "tree", s3_bucket, "p")
    import_folder(tmp_path / "tree")
    local = pack_dataset(tmp_path / "tree", chunk_size=3)
    url = s3_bucket.url("p")
    assert run_cli("data", "import", url, "-q")[0] == 0
    code, out = run_cli("data", "pack", url, "--chunk-size", "3", "-q")
    assert code == 0, out
    assert "packed 13 samples into 5 chunks (shuffled with seed 0)" in out
    assert s3_bucket.get(f"p/{CHUNKS_JSON}").decode() == local.to_json()
    assert (
        s3_bucket.get("p/chunks/c000000.bin") == (tmp_path / "tree/chunks/c000000.bin").read_bytes()
    )
    code, out = run_cli("data", "verify", url, "-q")
    assert code == 0 and "5 chunks" in out, out
    # a re-pack in bigger chunks removes the chunk objects it no longer lists
    assert run_cli("data", "pack", url, "--chunk-size", "7", "-q")[0] == 0
    chunks = [k for k in s3_bucket.listed() if k.startswith("p/chunks/")]
    assert chunks == ["p/chunks/c000000.bin", "p/chunks/c000001.bin"]
    layout = load_layout(url, manifest=open_dataset(url)[0])
    assert layout is not None and layout.n_chunks == 2
    assert layout.repack_command().startswith(f"hotset data pack {url}")


def test_s3_upload_copies_a_packed_data_set_that_opens_as_it_was(
    s3_bucket: S3Bucket, tmp_path: Path
) -> None:
    from hotset.data import SynthConfig, make_synth

    make_synth(tmp_path / "syn", SynthConfig(n=40, image_size=8, seed=1), workers=1)
    pack_dataset(tmp_path / "syn", chunk_size=16)
    url = s3_bucket.url("up/syn")
    code, out = run_cli("data", "upload", str(tmp_path / "syn"), url, "-q")
    assert code == 0 and f"-> {url}" in out, out
    manifest, store = open_dataset(url)
    local = Manifest.load(tmp_path / "syn")
    assert manifest.keys == local.keys and manifest.hashes == local.hashes
    assert manifest.meta["root"] == "."
    layout = load_layout(url, manifest=manifest)
    assert layout is not None and layout.n_chunks == 3
    assert (
        store.read(layout.chunk_keys[1]) == (tmp_path / "syn" / layout.chunk_keys[1]).read_bytes()
    )
    code, out = run_cli("data", "upload", str(tmp_path / "syn"), url, "-q")
    assert code == 2 and "already exists" in out
