"""Datasets: manifests, decoding, generators (synthetic, sklearn digits), importers, chunks.

``open_dataset(path)`` is the one way the rest of hotset gets a dataset: the
validated :class:`Manifest` plus the :class:`~hotset.storage.base.Store` its
keys are relative to.
"""

from __future__ import annotations

from hotset.data.chunks import ChunkLayout, load_layout, pack_dataset, read_chunk
from hotset.data.decode import decode, decode_many, format_of
from hotset.data.digits import make_digits
from hotset.data.import_splits import import_splits
from hotset.data.importer import import_folder, scan
from hotset.data.manifest import DATASET_JSON, MANIFEST_CSV, Manifest, content_hash
from hotset.data.opener import dataset_root, open_dataset
from hotset.data.synth import SynthConfig, SynthTruth, make_synth
from hotset.data.verify import Mismatch, VerifyResult, verify

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
    "import_splits",
    "load_layout",
    "make_digits",
    "make_synth",
    "open_dataset",
    "pack_dataset",
    "read_chunk",
    "scan",
    "verify",
]
