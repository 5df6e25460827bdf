"""Make a manifest for an existing folder of images.

Two layouts: ImageFolder (one sub-folder per class, labels by sorted class
name, as torchvision does) and flat (every image unlabeled, label -1). A split
tree (``ROOT/{train,val}/CLASS/*``, as ImageNet ships) is neither: ``auto``
refuses it here rather than make ``train`` and ``val`` two classes, and
:mod:`hotset.data.import_splits` imports it, one data set per split. Keys stay
relative to the imported folder, so the files never move; when the manifest is
written elsewhere, ``dataset.json`` records that folder as ``root``.

Symbolic links that lead outside the imported folder (to a file, or as a class
folder) are skipped, with a warning that counts and names them, and the count
is kept in ``dataset.json`` as ``skipped_links``: the data set's store reads only
files inside its root (see :class:`~hotset.storage.local.LocalStore`), so such a
key could never be read, and importing it would put a file from elsewhere into
training without anyone seeing it. Links that stay inside the folder are
followed as before. Skipping rather than refusing the whole import: one stray
link should not block a large folder, and the warning says what was left out.
"""

from __future__ import annotations

import os
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from hotset.data.decode import EXTENSIONS, decode
from hotset.data.manifest import Manifest, content_hash
from hotset.errors import HotsetError
from hotset.storage.local import LocalStore

LAYOUTS = ("auto", "imagefolder", "flat")
#: folder names read as a data set's splits, not classes (compared in lower case)
SPLIT_NAMES = frozenset({"train", "val", "valid", "validation", "test"})


def _is_sample(path: Path) -> bool:
    return path.is_file() and not path.name.startswith(".") and path.suffix.lower() in EXTENSIONS


class _Tree:
    """The folder being imported, where it really is, and the links found leading out."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.real = os.path.realpath(base)
        #: paths (relative to ``base``) of symbolic links that lead outside it, skipped
        #: (a dict: ordered, and a link met by two walks is counted once)
        self.found: dict[str, None] = {}

    @property
    def skipped(self) -> list[str]:
        return list(self.found)

    def leads_out(self, path: Path) -> bool:
        """Whether ``path`` is a link resolving outside the tree (then it is recorded)."""
        if not path.is_symlink():
            return False
        real = os.path.realpath(path)
        if os.path.commonpath([real, self.real]) == self.real:
            return False
        self.found[path.relative_to(self.base).as_posix()] = None
        return True

    def images_under(self, folder: Path) -> list[Path]:
        """Sample files below ``folder`` (recursive, hidden skipped, links kept in), sorted."""
        found = []
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in dirnames:  # os.walk does not follow them; say so for those leading out
                self.leads_out(Path(dirpath) / name)
            for name in filenames:
                path = Path(dirpath) / name
                if _is_sample(path) and not self.leads_out(path):
                    found.append(path)
        return sorted(found)


def scan(
    root: str | os.PathLike[str], *, layout: str = "auto", skipped: list[str] | None = None
) -> tuple[list[str], list[int], list[str]]:
    """(keys relative to ``root``, labels, class names) in a deterministic order.

    ``auto`` picks ImageFolder when ``root`` holds only class sub-folders and
    flat when it holds only image files; a mix is refused as ambiguous.
    Symbolic links leading outside ``root`` are left out (see the module) and
    their paths appended to ``skipped``; without a list, a warning names them.
    """
    base = Path(root)
    if layout not in LAYOUTS:
        raise HotsetError(f"layout {layout!r} is not one of {', '.join(LAYOUTS)}")
    if not base.is_dir():
        raise HotsetError(f"cannot import {str(base)!r}: not a directory")
    tree = _Tree(base)
    entries = sorted(p for p in base.iterdir() if not tree.leads_out(p))
    top_files = [p for p in entries if _is_sample(p)]
    class_dirs = [p for p in entries if p.is_dir() and not p.name.startswith(".")]
    if layout == "auto":
        _refuse_splits(base, class_dirs, top_files)
        if top_files and any(tree.images_under(d) for d in class_dirs):
            raise HotsetError(
                f"cannot import {str(base)!r}: it holds both image files and sub-folders of "
                "images; pass --layout flat (all unlabeled) or --layout imagefolder"
            )
        layout = "flat" if top_files else "imagefolder"
    keys, labels, names = _collect(tree, layout, class_dirs)
    if skipped is not None:
        skipped.extend(tree.skipped)
    elif tree.skipped:
        warnings.warn(_skipped_message(base, tree.skipped), RuntimeWarning, stacklevel=2)
    return keys, labels, names


def split_names(root: str | os.PathLike[str]) -> list[str]:
    """The split folders of ``root`` when it is a split tree (``ROOT/{train,val}``), else [].

    A split tree holds no image files at its top and only folders named as
    splits (:data:`SPLIT_NAMES`, in any case), as ImageNet's ``train/`` and
    ``val/`` do; each is then a data set of its own (see
    :mod:`hotset.data.import_splits`), never a class.
    """
    base = Path(root)
    if not base.is_dir():
        return []
    entries = [p for p in base.iterdir() if not p.name.startswith(".")]
    dirs = [p for p in entries if p.is_dir()]
    if any(_is_sample(p) for p in entries) or not dirs:
        return []
    if all(p.name.lower() in SPLIT_NAMES for p in dirs):
        return sorted(p.name for p in dirs)
    return []


def _refuse_splits(base: Path, dirs: list[Path], top_files: list[Path]) -> None:
    """``auto`` never makes split folders classes (``train`` and ``val`` were two classes)."""
    splits = [p.name for p in dirs if p.name.lower() in SPLIT_NAMES]
    if not splits or top_files:
        return
    others = [p.name for p in dirs if p.name.lower() not in SPLIT_NAMES]
    if not others:
        raise HotsetError(
            f"cannot import {str(base)!r} as one data set: it is split into "
            f"{', '.join(splits)}; import each split with hotset.data.import_splits "
            "(`hotset data import` does), or pass layout='imagefolder' to make "
            "those folders classes"
        )
    shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
    raise HotsetError(
        f"cannot import {str(base)!r}: it holds split folders ({', '.join(splits)}) beside "
        f"other folders ({shown}), so it is neither a split tree nor one class per folder; "
        "import a split folder itself (e.g. ROOT/train), or pass --layout imagefolder to "
        "make every folder a class"
    )


def _collect(
    tree: _Tree, layout: str, class_dirs: list[Path]
) -> tuple[list[str], list[int], list[str]]:
    base = tree.base
    keys: list[str] = []
    labels: list[int] = []
    names: list[str] = []
    if layout == "flat":
        for path in tree.images_under(base):
            keys.append(path.relative_to(base).as_posix())
            labels.append(-1)
    else:
        for label, folder in enumerate(class_dirs):
            files = tree.images_under(folder)
            if not files:
                raise HotsetError(
                    f"cannot import {str(base)!r}: class folder {folder.name!r} has no images "
                    f"({', '.join(sorted(EXTENSIONS))})"
                )
            names.append(folder.name)
            for path in files:
                keys.append(path.relative_to(base).as_posix())
                labels.append(label)
    if not keys:
        raise HotsetError(
            f"cannot import {str(base)!r}: no image files ({', '.join(sorted(EXTENSIONS))}) found"
        )
    return keys, labels, names


def _skipped_message(base: Path, skipped: list[str]) -> str:
    shown = ", ".join(map(repr, skipped[:5])) + (", ..." if len(skipped) > 5 else "")
    return (
        f"skipped {len(skipped)} symbolic link(s) in {str(base)!r} that lead outside it: "
        f"{shown} (a data set reads only files inside its root; copy them in to import them)"
    )


def import_folder(
    root: str | os.PathLike[str],
    *,
    out: str | os.PathLike[str] | None = None,
    layout: str = "auto",
    force: bool = False,
    progress: bool = False,
    workers: int = 4,
) -> Manifest:
    """Hash every image under ``root`` and write the manifest into ``out`` (default: ``root``).

    Refuses to replace an existing manifest unless ``force``.
    """
    base = Path(root)
    skipped: list[str] = []
    keys, labels, names = scan(base, layout=layout, skipped=skipped)
    if skipped:
        warnings.warn(_skipped_message(base, skipped), RuntimeWarning, stacklevel=2)
    return write_manifest(
        base,
        keys,
        labels,
        names,
        out=out,
        force=force,
        progress=progress,
        workers=workers,
        meta={"skipped_links": len(skipped)} if skipped else None,
    )


def write_manifest(
    base: Path,
    keys: list[str],
    labels: list[int],
    names: list[str],
    *,
    out: str | os.PathLike[str] | None,
    force: bool,
    progress: bool,
    workers: int,
    meta: dict[str, Any] | None = None,
) -> Manifest:
    """Hash the files ``keys`` (relative to ``base``) and save their manifest in ``out``.

    ``meta`` is added to what is described from the files (format, classes, shape).
    """
    target = Path(out) if out is not None else base
    csv_path, _ = Manifest.paths(target)
    if csv_path.exists() and not force:
        raise HotsetError(f"{str(csv_path)!r} already exists (use --force to replace it)")

    from tqdm import tqdm

    store = LocalStore(base)  # reads refuse a key that leads outside, should one appear now

    def measure(key: str) -> tuple[int, str]:
        data = store.read(key)
        return len(data), content_hash(data)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(
            tqdm(
                pool.map(measure, keys),
                total=len(keys),
                desc="hashing",
                unit="file",
                file=sys.stderr,
                disable=not progress,
            )
        )
    sizes = [s for s, _ in results]
    hashes = [h for _, h in results]
    described = _describe(store, keys, names)
    described["root"] = _root_for(base, csv_path.parent)
    described.update(meta or {})
    manifest = Manifest(np.arange(len(keys)), keys, sizes, labels, hashes, described)
    try:
        manifest.save(target)
    except OSError as exc:
        raise HotsetError(f"cannot write the manifest to {str(target)!r}: {exc}") from None
    return manifest


def _root_for(base: Path, manifest_dir: Path) -> str:
    """'.' when the manifest sits in the imported folder, else its absolute path."""
    if base.resolve() == manifest_dir.resolve():
        return "."
    return str(base.resolve())


def _describe(store: LocalStore, keys: list[str], names: list[str]) -> dict[str, Any]:
    formats = {EXTENSIONS[Path(k).suffix.lower()] for k in keys}
    meta: dict[str, Any] = {
        "format": formats.pop() if len(formats) == 1 else "mixed",
        "generator": "hotset.import",
    }
    if names:
        meta["num_classes"] = len(names)
        meta["class_names"] = names
    else:
        meta["num_classes"] = 0
    # shape of the first sample, so model builders need not decode one themselves
    try:
        first = decode(store.read(keys[0]), keys[0])
    except HotsetError:
        return meta
    channels, height, width = first.shape
    meta["channels"] = int(channels)
    meta["image_size"] = int(height) if height == width else [int(height), int(width)]
    return meta


__all__ = ["LAYOUTS", "SPLIT_NAMES", "import_folder", "scan", "split_names", "write_manifest"]
