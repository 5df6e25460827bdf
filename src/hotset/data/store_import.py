"""Make a manifest for images already in an object store (``s3://bucket/prefix``).

The local importer (:mod:`hotset.data.importer`) walks a folder; here the keys
come from the store's listing, and the two layouts are read from the keys as
the local ones are from folders: ImageFolder (``CLASS/...`` under the prefix,
labels by sorted class name, files in path order) and flat (every image under
the prefix, label -1), so a tree imported from S3 gets the ids, labels and
hashes the same tree gets on disk. A split tree (``train/CLASS/...``,
``val/...``) is refused with the command that imports one split.

Where the manifest goes: beside the data (``manifest.csv`` and
``dataset.json`` written into the store under the prefix, ``root`` ``"."``),
so ``open_dataset("s3://bucket/prefix")`` finds it, as ``hotset data import
DIR`` writes into ``DIR``; or, with ``out``, into a local directory whose
``dataset.json`` records the URL as ``root`` (for a bucket this job may read
but not write: ``open_dataset(out)`` then reads the samples from the URL).

Every image is read once to hash it, ``workers`` reads in flight, each retried
on transient errors (:class:`~hotset.storage.retry.RetryingStore`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from hotset.data.decode import EXTENSIONS, decode
from hotset.data.importer import LAYOUTS, SPLIT_NAMES
from hotset.data.manifest import DATASET_JSON, MANIFEST_CSV, Manifest, content_hash
from hotset.errors import HotsetError
from hotset.storage.base import Store

__all__ = ["import_store", "scan_keys"]


def _is_sample(key: str) -> bool:
    parts = key.split("/")
    return not any(p.startswith(".") for p in parts) and Path(parts[-1]).suffix.lower() in (
        EXTENSIONS
    )


def _path_order(keys: Iterable[str]) -> list[str]:
    """Keys sorted part by part, the order the local importer gives the same files."""
    return sorted(keys, key=lambda k: k.split("/"))


def scan_keys(
    listed: Iterable[str], *, layout: str = "auto", where: str = "the store"
) -> tuple[list[str], list[int], list[str]]:
    """(keys, labels, class names) of the image keys among ``listed`` (see the module)."""
    if layout not in LAYOUTS:
        raise HotsetError(f"layout {layout!r} is not one of {', '.join(LAYOUTS)}")
    keys = _path_order(k for k in listed if _is_sample(k))
    if not keys:
        raise HotsetError(
            f"cannot import {where}: no image files ({', '.join(sorted(EXTENSIONS))}) found"
        )
    top = [k for k in keys if "/" not in k]
    folders = sorted({k.split("/", 1)[0] for k in keys if "/" in k})
    if layout == "auto":
        _refuse_splits(where, folders, top)
        if top and folders:
            raise HotsetError(
                f"cannot import {where}: it holds both image files and folders of images; "
                "pass --layout flat (all unlabeled) or --layout imagefolder"
            )
        layout = "flat" if top else "imagefolder"
    if layout == "flat":
        return keys, [-1] * len(keys), []
    if not folders:
        raise HotsetError(f"cannot import {where} as imagefolder: it has no class folders")
    label_of = {name: i for i, name in enumerate(folders)}
    chosen = [k for k in keys if "/" in k]
    by_class = sorted(chosen, key=lambda k: (label_of[k.split("/", 1)[0]], k.split("/")))
    return by_class, [label_of[k.split("/", 1)[0]] for k in by_class], folders


def _refuse_splits(where: str, folders: list[str], top: list[str]) -> None:
    splits = [f for f in folders if f.lower() in SPLIT_NAMES]
    if not splits or top:
        return
    raise HotsetError(
        f"cannot import {where} as one data set: it is split into {', '.join(splits)}; "
        f"import each split on its own (hotset data import {where.rstrip('/')}/{splits[0]}), "
        "or pass --layout imagefolder to make those folders classes"
    )


def import_store(
    url: str,
    *,
    out: str | os.PathLike[str] | None = None,
    layout: str = "auto",
    force: bool = False,
    progress: bool = False,
    workers: int = 8,
) -> Manifest:
    """Hash every image under ``url`` and write its manifest (see the module for where)."""
    from hotset.storage import open_store
    from hotset.storage.retry import RetryingStore

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise HotsetError(f"workers: must be an integer >= 1, got {workers!r}")
    store = open_store(url)
    where = url.rstrip("/")
    if out is None and not force and store.exists(MANIFEST_CSV):
        raise HotsetError(f"{where}/{MANIFEST_CSV} already exists (use --force to replace it)")
    if out is not None:
        csv_path, _ = Manifest.paths(out)
        if csv_path.exists() and not force:
            raise HotsetError(f"{str(csv_path)!r} already exists (use --force to replace it)")
    keys, labels, names = scan_keys(store.list_keys(), layout=layout, where=where)
    reader = RetryingStore(store)
    sizes, hashes = _measure(reader, keys, workers=workers, progress=progress)
    meta = _describe(reader, keys, names)
    meta["root"] = "." if out is None else where
    manifest = Manifest(np.arange(len(keys)), keys, sizes, labels, hashes, meta)
    if out is not None:
        manifest.save(out)
    else:  # dataset.json first, as Manifest.save does: the csv's row count is checked against it
        store.write(DATASET_JSON, manifest.meta_json().encode())
        store.write(MANIFEST_CSV, manifest.to_csv().encode())
    return manifest


def _measure(
    store: Store, keys: list[str], *, workers: int, progress: bool
) -> tuple[list[int], list[str]]:
    from tqdm import tqdm

    def measure(key: str) -> tuple[int, str]:
        data = store.read(key)
        return len(data), content_hash(data)

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hotset-import") as pool:
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
    return [s for s, _ in results], [h for _, h in results]


def _describe(store: Store, keys: list[str], names: list[str]) -> dict[str, Any]:
    """What the local importer records: format, class names, the first sample's shape."""
    formats = {EXTENSIONS[Path(k).suffix.lower()] for k in keys}
    meta: dict[str, Any] = {
        "format": formats.pop() if len(formats) == 1 else "mixed",
        "generator": "hotset.import",
        "num_classes": len(names),
    }
    if names:
        meta["class_names"] = names
    try:
        channels, height, width = decode(store.read(keys[0]), keys[0]).shape
    except HotsetError:
        return meta
    meta["channels"] = int(channels)
    meta["image_size"] = int(height) if height == width else [int(height), int(width)]
    return meta
