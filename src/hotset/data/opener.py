"""Opening a data set: its validated manifest, and the store its keys are relative to.

``open_dataset(path)`` is the one way the rest of hotset gets a data set; it is
re-exported as :func:`hotset.data.open_dataset`. It lives in a module of its own
(not in the package's ``__init__``) so that the modules it is built on top of,
such as :mod:`hotset.data.chunks` when packing, can call it without importing
their own package back.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from hotset.data.manifest import DATASET_JSON, MANIFEST_CSV, Manifest, parse_meta
from hotset.errors import HotsetError
from hotset.storage.base import Store
from hotset.storage.local import LocalStore

__all__ = ["dataset_root", "is_url", "open_dataset"]


def is_url(text: str) -> bool:
    """Whether ``text`` names a store by URL (``s3://...``), not a local path."""
    return "://" in text and not text.startswith("file://")


def _root_of(path: str | os.PathLike[str], manifest: Manifest) -> str:
    root = manifest.meta.get("root", ".")
    if not isinstance(root, str):
        csv_path, _ = Manifest.paths(path)
        raise HotsetError(
            f"{str(csv_path)!r}: dataset metadata root must be a string, got {root!r}"
        )
    return root


def dataset_root(path: str | os.PathLike[str], manifest: Manifest) -> Path:
    """Where a local manifest's keys live: its ``meta["root"]`` (relative to the csv's folder).

    A root that is a URL (a manifest kept locally for data in S3, as ``hotset data
    import s3://... --out DIR`` writes) is no folder: a :class:`HotsetError` says so.
    """
    csv_path, _ = Manifest.paths(path)
    root = _root_of(path, manifest)
    if is_url(root):
        raise HotsetError(
            f"{str(csv_path)!r}: the samples are in {root!r}, not in a local folder "
            "(open it with open_dataset, pack it with `hotset data pack`)"
        )
    return csv_path.parent / root


def open_dataset(dir_or_url: str | os.PathLike[str]) -> tuple[Manifest, Store]:
    """(validated manifest, store holding its keys) for a dataset directory, csv or URL.

    A local path gets a :class:`LocalStore` on the dataset root, or, when its
    ``dataset.json`` records a URL as ``root`` (a manifest kept here for data in
    S3), the store of that URL. Other URL schemes are handed to
    ``hotset.storage.open_store`` when that exists, and the manifest is read
    through the store (its reads are then reset from the store's counters so
    they only count sample traffic).
    """
    text = os.fspath(dir_or_url)
    if is_url(text):
        opener = getattr(importlib.import_module("hotset.storage"), "open_store", None)
        if opener is None:
            raise HotsetError(f"cannot open {text!r}: no store for URLs is available")
        store = opener(text)
        meta = {}
        if store.exists(DATASET_JSON):
            # raw bytes: a file that is not UTF-8 is reported as not being metadata
            meta = parse_meta(store.read(DATASET_JSON), source=f"{text}/{DATASET_JSON}")
        if not store.exists(MANIFEST_CSV):
            raise HotsetError(f"no manifest at {text!r}: expected {MANIFEST_CSV}")
        manifest = Manifest.parse(store.read(MANIFEST_CSV), meta, source=f"{text}/{MANIFEST_CSV}")
        store.reset_stats()
        return manifest, store
    path = Path(text.removeprefix("file://"))
    manifest = Manifest.load(path)
    root = _root_of(path, manifest)
    if is_url(root):
        from hotset.storage import open_store

        return manifest, open_store(root)
    return manifest, LocalStore(dataset_root(path, manifest))
