"""A split tree (ImageNet's ``ROOT/{train,val}/CLASS/*``) imports one data set per split.

It used to import as one ImageFolder of two classes, ``train`` and ``val`` (issue #28).
Real JPEG files written with PIL; the command runs through ``hotset.cli.main``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hotset.cli import main
from hotset.data import Manifest, import_folder, import_splits, open_dataset, scan
from hotset.errors import HotsetError

#: val lacks "eel", as a small hold-out may
TREE = {"train": ("cat", "dog", "eel"), "val": ("cat", "dog")}


def _jpeg(path: Path, value: int) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((6, 6, 3), value, dtype=np.uint8)).save(path, format="JPEG")


def _tree(root: Path, tree: dict[str, tuple[str, ...]] = TREE) -> Path:
    for split, classes in tree.items():
        for c, name in enumerate(classes):
            for i in range(2):
                _jpeg(root / split / name / f"{split}_{i}.JPEG", 40 * c + i)
    return root


def _exit_code(argv: list[str]) -> int:
    try:
        main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def test_each_split_is_a_data_set_with_labels_that_agree(tmp_path: Path) -> None:
    root = _tree(tmp_path / "imagenet")
    with pytest.warns(RuntimeWarning, match=r"split 'val' has no folder for 1 of the 3 .*\(eel\)"):
        manifests = import_splits(root)
    assert sorted(manifests) == ["train", "val"]
    train, val = open_dataset(root / "train")[0], open_dataset(root / "val")[0]
    for m in (train, val):
        assert m.meta["class_names"] == ["cat", "dog", "eel"] and m.num_classes == 3
    assert train.meta["split"] == "train" and val.meta["split"] == "val"
    by_class = {
        key.split("/")[0]: int(label) for key, label in zip(train.keys, train.labels, strict=True)
    }
    assert by_class == {"cat": 0, "dog": 1, "eel": 2}
    assert [k.split("/")[0] for k in val.keys] == ["cat", "cat", "dog", "dog"]
    assert val.labels.tolist() == [0, 0, 1, 1]  # the same numbers as in train
    assert all(k.endswith(".JPEG") and not k.startswith(("train", "val")) for k in train.keys)


def test_a_class_only_in_val_is_numbered_for_train_too(tmp_path: Path) -> None:
    root = _tree(tmp_path / "t", {"train": ("b", "c"), "val": ("a", "c")})
    with pytest.warns(RuntimeWarning):
        manifests = import_splits(root, out=tmp_path / "out")
    assert manifests["train"].labels.tolist() == [1, 1, 2, 2]
    assert manifests["val"].labels.tolist() == [0, 0, 2, 2]
    assert Manifest.load(tmp_path / "out" / "val").meta["root"] == str((root / "val").resolve())


def test_auto_never_makes_split_folders_classes(tmp_path: Path) -> None:
    root = _tree(tmp_path / "t")
    with pytest.raises(HotsetError, match=r"it is split into train, val; import each split"):
        import_folder(root)
    with pytest.raises(HotsetError, match="split into train, val"):
        scan(root)
    # asked for explicitly, the folders are classes, as before
    assert scan(root, layout="imagefolder")[2] == ["train", "val"]


def test_ambiguous_trees_are_refused(tmp_path: Path) -> None:
    mixed = _tree(tmp_path / "mixed")
    _jpeg(mixed / "other" / "x.JPEG", 1)
    with pytest.raises(HotsetError, match=r"split folders \(train, val\) beside other folders"):
        import_folder(mixed)
    flat_val = _tree(tmp_path / "flat", {"train": ("cat", "dog")})
    _jpeg(flat_val / "val" / "ILSVRC2012_val_00000001.JPEG", 3)
    with pytest.raises(HotsetError, match=r"split 'val' .* outside class folders .*--layout flat"):
        import_splits(flat_val)
    assert not (flat_val / "train" / "manifest.csv").exists()  # all or nothing
    # the sorted split alone imports
    assert len(import_splits(flat_val, splits=["train"])["train"]) == 4
    with pytest.raises(
        HotsetError, match=r"split 'test' is not a split of .* \(it has train, val\)"
    ):
        import_splits(flat_val, splits=["test"])
    with pytest.raises(HotsetError, match="it is no split tree"):
        import_splits(flat_val / "train")


def test_the_command_imports_each_split_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _tree(tmp_path / "imagenet")
    out = tmp_path / "out"
    assert _exit_code(["data", "import", str(root), "-q", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0] == (
        f"{root} is split into train, val: one data set per split, 3 classes numbered over "
        "every split's class folders"
    )
    assert lines[1].startswith("imported train: 6 samples") and lines[1].endswith(
        f"3 classes -> {out / 'train' / 'manifest.csv'}"
    )
    assert lines[2].startswith("imported val: 4 samples")
    assert "hotset: warning: split 'val' has no folder for 1 of the 3 classes" in captured.err
    assert _exit_code(["data", "verify", str(out / "val"), "-q"]) == 0
    assert _exit_code(["data", "import", str(root), "-q", "--out", str(out)]) == 2
    assert "already exists (use --force" in capsys.readouterr().err
    argv = ["data", "import", str(root), "-q", "--out", str(tmp_path / "v"), "--split", "val"]
    assert _exit_code(argv) == 0
    assert not (tmp_path / "v" / "train").exists()
    assert Manifest.load(tmp_path / "v" / "val").labels.tolist() == [0, 0, 1, 1]
    capsys.readouterr()
    assert _exit_code(["data", "import", str(root / "train"), "--split", "val"]) == 2
    assert "--split val needs a split tree" in capsys.readouterr().err
