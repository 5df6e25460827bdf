"""Datasets: manifests, decoding, generators (synthetic, sklearn digits), importers, chunks.

``open_dataset(path)`` is the one way the rest of hotset gets a dataset: the
validated :class:`Manifest` plus the :class:`~hotset.storage.base.Store` its
keys are relative to.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from hotset.data.chunks import ChunkLayout, load_layout, pack_dataset, read_chunk
from hotset.data.decode import decode, decode_many, format_of
from hotset.data.digits import make_digits
from hotset.data.importer import import_folder, scan
from hotset.data.manifest import DATASET_JSON, MANIFEST_CSV, Manifest, content_hash, parse_meta
from hotset.data.synth import SynthConfig, SynthTruth, make_synth
from hotset.data.verify import Mismatch, VerifyResult, verify
from hotset.errors import HotsetError
from hotset.storage.base import Store
from hotset.storage.local import LocalStore


def dataset_root(path: str | os.PathLike[str], manifest: Manifest) -> Path:
    """Where a local manifest's keys live: its ``meta["root"]`` (relative to the csv's folder)."""
    csv_path, _ = Manifest.paths(path)
    root = manifest.meta.get("root", ".")
    if not isinstance(root, str):
        raise HotsetError(
            f"{str(csv_path)!r}: dataset metadata root must be a string, got {root!r}"
        )
    return csv_path.parent / root


def open_dataset(dir_or_url: str | os.PathLike[str]) -> tuple[Manifest, Store]:
    """(validated manifest, store holding its keys) for a dataset directory, csv or URL.

    A local path gets a :class:`LocalStore` on the dataset root. Other URL
    schemes are handed to ``hotset.storage.open_store`` when that exists, and
    the manifest is read through the store (its two reads are then reset from
    the store's counters so they only count sample traffic).
    """
    text = os.fspath(dir_or_url)
    if "://" in text and not text.startswith("file://"):
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
    return manifest, LocalStore(dataset_root(path, manifest))


__all__ = [
    "DATASET_JSON",
    "MANIFEST_CSV",
    "ChunkLayout",
    "Manifest",
    "Mismatch",
    "SynthConfig",
    "SynthTruth",
    "VerifyResult",
    "content_hash",
    "dataset_root",
    "decode",
    "decode_many",
    "format_of",
    "import_folder",
    "load_layout",
    "make_digits",
    "make_synth",
    "open_dataset",
    "pack_dataset",
    "read_chunk",
    "scan",
    "verify",
]
