"""Make a manifest for an existing folder of images.

Two layouts: ImageFolder (one sub-folder per class, labels by sorted class
name, as torchvision does) and flat (every image unlabeled, label -1). Keys stay
relative to the imported folder, so the files never move; when the manifest is
written elsewhere, ``dataset.json`` records that folder as ``root``.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from hotset.data.decode import EXTENSIONS, decode
from hotset.data.manifest import Manifest, content_hash
from hotset.errors import HotsetError

LAYOUTS = ("auto", "imagefolder", "flat")


def _is_sample(path: Path) -> bool:
    return path.is_file() and not path.name.startswith(".") and path.suffix.lower() in EXTENSIONS


def _images_under(folder: Path) -> list[Path]:
    """Sample files below ``folder`` (recursive, hidden files and folders skipped), sorted."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            path = Path(dirpath) / name
            if _is_sample(path):
                found.append(path)
    return sorted(found)


def scan(
    root: str | os.PathLike[str], *, layout: str = "auto"
) -> tuple[list[str], list[int], list[str]]:
    """(keys relative to ``root``, labels, class names) in a deterministic order.

    ``auto`` picks ImageFolder when ``root`` holds only class sub-folders and
    flat when it holds only image files; a mix is refused as ambiguous.
    """
    base = Path(root)
    if layout not in LAYOUTS:
        raise HotsetError(f"layout {layout!r} is not one of {', '.join(LAYOUTS)}")
    if not base.is_dir():
        raise HotsetError(f"cannot import {str(base)!r}: not a directory")
    top_files = sorted(p for p in base.iterdir() if _is_sample(p))
    class_dirs = sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))
    if layout == "auto":
        if top_files and any(_images_under(d) for d in class_dirs):
            raise HotsetError(
                f"cannot import {str(base)!r}: it holds both image files and sub-folders of "
                "images; pass --layout flat (all unlabeled) or --layout imagefolder"
            )
        layout = "flat" if top_files else "imagefolder"
    keys: list[str] = []
    labels: list[int] = []
    names: list[str] = []
    if layout == "flat":
        for path in _images_under(base):
            keys.append(path.relative_to(base).as_posix())
            labels.append(-1)
    else:
        for label, folder in enumerate(class_dirs):
            files = _images_under(folder)
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
    keys, labels, names = scan(base, layout=layout)
    target = Path(out) if out is not None else base
    csv_path, _ = Manifest.paths(target)
    if csv_path.exists() and not force:
        raise HotsetError(f"{str(csv_path)!r} already exists (use --force to replace it)")

    from tqdm import tqdm

    def measure(key: str) -> tuple[int, str]:
        data = (base / key).read_bytes()
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
    meta = _describe(base, keys, labels, names)
    meta["root"] = _root_for(base, csv_path.parent)
    manifest = Manifest(np.arange(len(keys)), keys, sizes, labels, hashes, meta)
    manifest.save(target)
    return manifest


def _root_for(base: Path, manifest_dir: Path) -> str:
    """'.' when the manifest sits in the imported folder, else its absolute path."""
    if base.resolve() == manifest_dir.resolve():
        return "."
    return str(base.resolve())


def _describe(base: Path, keys: list[str], labels: list[int], names: list[str]) -> dict[str, Any]:
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
        first = decode((base / keys[0]).read_bytes(), keys[0])
    except HotsetError:
        return meta
    channels, height, width = first.shape
    meta["channels"] = int(channels)
    meta["image_size"] = int(height) if height == width else [int(height), int(width)]
    return meta


__all__ = ["LAYOUTS", "import_folder", "scan"]
