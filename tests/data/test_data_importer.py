"""Importing folders: ImageFolder labels by sorted class name, flat folders unlabeled."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hotset.data import content_hash, import_folder, open_dataset
from hotset.data.manifest import Manifest
from hotset.data.writer import encode_image
from hotset.errors import HotsetError


def _img(path: Path, value: int, fmt: str = "png") -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = encode_image(np.full((5, 4, 3), value, dtype=np.uint8), fmt)
    path.write_bytes(data)
    return data


def test_imagefolder_tree(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    files = {
        "dog/b.png": _img(root / "dog/b.png", 1),
        "dog/nested/a.jpg": _img(root / "dog/nested/a.jpg", 2, "jpeg"),
        "cat/z.npy": _img(root / "cat/z.npy", 3, "npy"),
        "ant/x.PNG": _img(root / "ant/x.PNG", 4),
    }
    (root / "cat" / "notes.txt").write_text("not an image")
    (root / "cat" / ".hidden.png").write_bytes(b"junk")
    _img(root / ".cache" / "c.png", 9)
    m = import_folder(root)
    assert m.meta["class_names"] == ["ant", "cat", "dog"]
    assert dict(zip(m.keys, m.labels.tolist(), strict=True)) == {
        "ant/x.PNG": 0,
        "cat/z.npy": 1,
        "dog/b.png": 2,
        "dog/nested/a.jpg": 2,
    }
    assert m.meta["format"] == "mixed" and m.meta["root"] == "."
    assert m.meta["channels"] == 3 and m.meta["image_size"] == [5, 4]
    for key, h, size in zip(m.keys, m.hashes, m.sizes.tolist(), strict=True):
        assert h == content_hash(files[key]) and size == len(files[key])
    assert (root / "manifest.csv").is_file() and (root / "dataset.json").is_file()
    loaded, store = open_dataset(root)
    assert loaded == m
    assert store.read("dog/b.png") == files["dog/b.png"]
    # a second import sees the same images (manifest files are not samples) and needs --force
    with pytest.raises(HotsetError, match="already exists"):
        import_folder(root)
    assert import_folder(root, force=True) == m


def test_flat_folder_is_unlabeled(tmp_path: Path) -> None:
    for i in range(3):
        _img(tmp_path / f"{i}.png", i)
    _img(tmp_path / "sub" / "deeper.png", 7)
    m = import_folder(tmp_path, layout="flat")
    assert m.keys == ["0.png", "1.png", "2.png", "sub/deeper.png"]
    assert (m.labels == -1).all()
    assert m.num_classes == 0
    assert m.meta["format"] == "png" and m.meta["image_size"] == [5, 4]


def test_auto_detects_flat_and_refuses_a_mix(tmp_path: Path) -> None:
    _img(tmp_path / "a.png", 1)
    assert import_folder(tmp_path).labels.tolist() == [-1]
    _img(tmp_path / "cls" / "b.png", 2)
    with pytest.raises(HotsetError, match="both image files and sub-folders"):
        import_folder(tmp_path, force=True)


def test_manifest_elsewhere_records_the_root(tmp_path: Path) -> None:
    root = tmp_path / "data"
    data = _img(root / "c0" / "a.png", 5)
    m = import_folder(root, out=tmp_path / "meta" / "m.csv")
    assert not (root / "manifest.csv").exists()
    assert m.meta["root"] == str(root.resolve())
    loaded, store = open_dataset(tmp_path / "meta" / "m.csv")
    assert loaded.keys == ["c0/a.png"]
    assert store.read("c0/a.png") == data
    assert Manifest.load(tmp_path / "meta" / "m.csv") == m


def test_empty_inputs_are_errors(tmp_path: Path) -> None:
    with pytest.raises(HotsetError, match="no image files"):
        import_folder(tmp_path)
    (tmp_path / "cls").mkdir()
    (tmp_path / "cls" / "readme.txt").write_text("x")
    with pytest.raises(HotsetError, match="class folder 'cls' has no images"):
        import_folder(tmp_path, layout="imagefolder")
    with pytest.raises(HotsetError, match="not a directory"):
        import_folder(tmp_path / "missing")
    with pytest.raises(HotsetError, match="layout 'tree'"):
        import_folder(tmp_path, layout="tree")


def test_links_leading_out_of_the_tree_are_skipped_counted_and_named(tmp_path: Path) -> None:
    """Issue #25 item 7: an import never follows a symbolic link out of the tree it imports."""
    root, outside = tmp_path / "tree", tmp_path / "outside"
    data = {
        "cat/a.png": _img(root / "cat" / "a.png", 1),
        "dog/b.png": _img(root / "dog" / "b.png", 2),
    }
    _img(outside / "secret.png", 3)
    _img(outside / "klass" / "x.png", 4)
    (root / "cat" / "secret.png").symlink_to(outside / "secret.png")  # a file link out
    (root / "klass").symlink_to(outside / "klass", target_is_directory=True)  # a class out
    (root / "dog" / "deeper").symlink_to(outside / "klass", target_is_directory=True)
    (root / "dog" / "same.png").symlink_to("b.png")  # stays inside: imported
    with pytest.warns(RuntimeWarning, match="skipped 3 symbolic link") as caught:
        m = import_folder(root)
    message = str(caught[0].message)
    for name in ("'klass'", "'cat/secret.png'", "'dog/deeper'"):
        assert name in message
    assert m.keys == ["cat/a.png", "dog/b.png", "dog/same.png"]
    assert m.meta["class_names"] == ["cat", "dog"] and m.meta["skipped_links"] == 3
    loaded, store = open_dataset(root)
    assert loaded == m and store.read("dog/same.png") == data["dog/b.png"]


def test_flat_import_skips_links_out_too(tmp_path: Path) -> None:
    _img(tmp_path / "tree" / "a.png", 1)
    _img(tmp_path / "secret.png", 2)
    (tmp_path / "tree" / "z.png").symlink_to(tmp_path / "secret.png")
    with pytest.warns(RuntimeWarning, match=r"skipped 1 symbolic link.*'z.png'"):
        m = import_folder(tmp_path / "tree")
    assert m.keys == ["a.png"] and m.meta["skipped_links"] == 1
