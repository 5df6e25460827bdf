"""Import a split tree (``ROOT/train/CLASS/*``, ``ROOT/val/CLASS/*``) as one data set per split.

Why. ImageNet and most published image sets ship as ``train/`` and ``val/``,
each one folder per class. Imported as one ImageFolder, such a tree used to
become a data set of two classes, ``train`` and ``val``, without a word. Here
each split becomes a data set of its own (its manifest in ``OUT/<split>``, or in
``ROOT/<split>`` itself by default, so ``open_dataset("ROOT/train")`` works), and
the classes are numbered **once, over the class folders of every split**
(sorted by name, as torchvision numbers ``ImageFolder``'s), so label 3 is the
same class in ``train`` and in ``val`` even when a split lacks a class; each
split's ``dataset.json`` records all the names. A split missing some classes is
warned about, naming them; a split holding image files outside class folders
(ImageNet's ``val`` as downloaded is flat, its labels in a separate file) is
refused, since its labels cannot be known.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path

from hotset.data.importer import (
    _is_sample,
    _skipped_message,
    _Tree,
    split_names,
    write_manifest,
)
from hotset.data.manifest import Manifest
from hotset.errors import HotsetError

__all__ = ["import_splits"]


def import_splits(
    root: str | os.PathLike[str],
    *,
    out: str | os.PathLike[str] | None = None,
    splits: Sequence[str] | None = None,
    force: bool = False,
    progress: bool = False,
    workers: int = 4,
) -> dict[str, Manifest]:
    """Each split of ``root`` (or those named in ``splits``) as a data set: name -> manifest.

    The manifest of split ``S`` goes to ``out/S`` (default ``root/S``); keys are
    relative to ``root/S``. Nothing is written unless every split can be imported
    and no manifest would be replaced without ``force``.
    """
    base = Path(root)
    found = split_names(base)
    if not found:
        raise HotsetError(
            f"cannot import {str(base)!r} by split: it is no split tree (only folders named "
            "train, val, valid, validation or test, and no image files beside them)"
        )
    chosen = _chosen(found, splits, base)
    trees = {name: _Tree(base / name) for name in found}
    # every split's class folders number the classes, the splits not imported too, so a
    # split imported later gets the same labels; only an imported split must be sorted
    per_split = {
        name: _class_dirs(base, name, tree, strict=name in chosen) for name, tree in trees.items()
    }
    classes = sorted({d.name for dirs in per_split.values() for d in dirs})
    collected = {name: _collect(base, trees[name], per_split[name], classes) for name in chosen}
    targets = {name: Path(out) / name if out is not None else base / name for name in chosen}
    for name in chosen:  # before hashing anything: all or nothing
        csv_path, _ = Manifest.paths(targets[name])
        if csv_path.exists() and not force:
            raise HotsetError(f"{str(csv_path)!r} already exists (use --force to replace it)")
    for name in chosen:
        _warn_missing(name, {d.name for d in per_split[name]}, classes)
    manifests = {}
    for name in chosen:
        keys, labels, skipped = collected[name]
        meta: dict[str, object] = {"split": name}
        if skipped:
            warnings.warn(_skipped_message(base / name, skipped), RuntimeWarning, stacklevel=2)
            meta["skipped_links"] = len(skipped)
        manifests[name] = write_manifest(
            base / name,
            keys,
            labels,
            classes,
            out=targets[name],
            force=force,
            progress=progress,
            workers=workers,
            meta=meta,
        )
    return manifests


def _chosen(found: list[str], splits: Sequence[str] | None, base: Path) -> list[str]:
    if splits is None or len(splits) == 0:
        return found
    if isinstance(splits, str):
        splits = [splits]
    unknown = [s for s in splits if s not in found]
    if unknown:
        raise HotsetError(
            f"split {unknown[0]!r} is not a split of {str(base)!r} (it has {', '.join(found)})"
        )
    return list(dict.fromkeys(splits))


def _class_dirs(base: Path, name: str, tree: _Tree, *, strict: bool) -> list[Path]:
    """The class folders of split ``name``; where ``strict``, image files beside them
    (labels unknown) or no class folder at all are refused."""
    entries = sorted(p for p in tree.base.iterdir() if not p.name.startswith("."))
    dirs = [p for p in entries if p.is_dir() and not tree.leads_out(p)]
    if not strict:
        return dirs
    loose = [p.name for p in entries if _is_sample(p) and not tree.leads_out(p)]
    if loose:
        raise HotsetError(
            f"cannot import split {name!r} of {str(base)!r}: it holds {len(loose)} image "
            f"file(s) outside class folders (e.g. {loose[0]!r}), so their labels are unknown; "
            "sort them into one folder per class (as ImageNet's val/ is usually sorted), "
            "import the other splits alone (--split), or this folder unlabeled: "
            f"hotset data import {str(base / name)!r} --layout flat"
        )
    if not dirs:
        raise HotsetError(f"cannot import split {name!r} of {str(base)!r}: it has no class folders")
    return dirs


def _collect(
    base: Path, tree: _Tree, dirs: list[Path], classes: list[str]
) -> tuple[list[str], list[int], list[str]]:
    """(keys relative to the split, labels numbered over ``classes``, links skipped)."""
    keys: list[str] = []
    labels: list[int] = []
    for folder in dirs:
        files = tree.images_under(folder)
        if not files:
            raise HotsetError(
                f"cannot import {str(base)!r}: class folder "
                f"{folder.relative_to(base).as_posix()!r} has no images"
            )
        label = classes.index(folder.name)
        for path in files:
            keys.append(path.relative_to(tree.base).as_posix())
            labels.append(label)
    return keys, labels, tree.skipped


def _warn_missing(name: str, present: set[str], classes: list[str]) -> None:
    missing = [c for c in classes if c not in present]
    if missing:
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        warnings.warn(
            f"split {name!r} has no folder for {len(missing)} of the {len(classes)} classes "
            f"({shown}): it has no samples of them; labels still agree across splits",
            RuntimeWarning,
            stacklevel=3,
        )
