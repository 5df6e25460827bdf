"""Chunked storage: samples stored together and read in ONE storage request.

Brand, Quiver and iCACHE do not read a sample at a time: they read a *chunk* (a
read unit) of samples stored side by side, paying one request latency for many
samples, and then serve, substitute or cache its members. A :class:`ChunkLayout`
is the map that makes this possible, the way mosaicml/streaming's spanner maps a
sample to (shard, index): sample id -> (chunk, byte offset, byte length), plus
each chunk's store key, size and content hash.

Why one file per chunk
----------------------
Each chunk is its own file, ``chunks/cNNNNNN.bin`` under the dataset root, so a
chunk read is a plain ``store.read(chunk_key)``:

* it is exactly one request: one latency, and its bytes cross the link at link
  bandwidth in :class:`~hotset.storage.throttled.ThrottledStore`'s cost model,
  with no range-read support needed from any store;
* it works unchanged on every store (local directory, ``memory://`` and other
  fsspec stores, S3), because every store can read a whole key;
* a chunk is cached, hashed and verified as one object, by its own key.

One big pack file read with byte ranges would need range reads in the Store
protocol and in the cost model; many small files per chunk would not be one
request. Chunk files *duplicate* the sample files (the per-sample files stay, so
single-sample reads and ``hotset data verify`` keep working).

File format
-----------
* ``ROOT/chunks/cNNNNNN.bin`` (``ROOT`` is the store root: the dataset directory
  unless ``dataset.json`` records another ``root``): the plain concatenation of
  its members' bytes in stored order, no header, no padding. Chunk ``c`` holds
  the ``c``-th run of ``chunk_size`` ids in a seeded permutation of the ids
  (``shuffle_seed``; packing shuffles by default, see "Why shuffle by default")
  or in id order, so the last chunk may be shorter.
* ``DIR/chunks.json`` beside ``manifest.csv``: ``{"format": "hotset-chunks",
  "version": 1, "n", "chunk_size", "shuffle_seed", "manifest_identity",
  "chunks": [{"key", "size", "xxh3", "ids", "offsets", "lengths"}, ...]}`` with
  each chunk's members in stored (offset) order. Readers accept gaps between
  members (a later format may align them) but never overlaps or bytes past the
  chunk's end. ``shuffle_seed`` is the seed, or ``null`` for id order; a file
  without the field (hand-made, another tool) still opens, its order unknown
  (:attr:`ChunkLayout.shuffle`).

Why shuffle by default
----------------------
A chunk is read, cached and served as a whole, so a system that reads chunks
(Brand, Quiver) sees the samples of a batch come a chunk at a time. A data set
whose ids follow its classes (an ImageFolder tree imported class by class) cut
in id order gives chunks of one class each: batches of one or two classes and
epochs that barely change their order -- Quiver then reached 30 % top-1 where
a plain loader reached 55 % (issue #27). Brand §3.2 makes its chunks from a
seeded shuffle of the ids for this reason, so :func:`pack_dataset` does too
unless told otherwise (``shuffle_seed=None``, ``hotset data pack
--no-shuffle``). :data:`DEFAULT_SHUFFLE_SEED` is the benchmarks' seed
(:data:`hotset.bench.workloads.PACK_SHUFFLE_SEED`, with chunks of
:data:`DEFAULT_CHUNK_SIZE`): a default pack is the layout their committed
numbers were measured on. :mod:`hotset.data.homogeneity` tells a layout of
one-class chunks from a shuffled one, and :mod:`hotset.data.packdir` is where
the loader packs a data set that has no layout.

Stale chunk sets
----------------
A chunk file duplicates its members' bytes, so it goes stale when the data set
changes under it: new data of the same sizes copied over a packed directory
keeps every length the layout records, and a chunk read would deliver the old
samples under the new ids. ``manifest_identity`` is
:meth:`Manifest.identity() <hotset.data.manifest.Manifest.identity>` of the
manifest the set was packed from (an xxh3-64 over every id's size and xxh3, in
id order; keys and labels are left out, as chunks hold neither), and
:meth:`ChunkLayout.check_manifest` -- which :func:`load_layout` runs whenever
it is given the manifest, as :func:`hotset.open_dataset` does -- refuses a
layout whose fingerprint differs, naming the exact ``hotset data pack`` command
that re-packs it. A ``chunks.json`` written before the fingerprint existed
(no ``manifest_identity``) is still accepted, so old packed sets keep working:
readers check every member cut from a chunk against the manifest's xxh3 when
they verify (the loader's default, ``verify=True``), which catches a stale or
edited set at the first chunk read, and ``hotset data verify`` checks every
chunk; re-packing records the fingerprint. The fingerprint does not replace
those member checks: an edited ``chunks.json`` (ids swapped between members
of equal size) keeps it, and only the members' hashes tell.

``chunks.json`` is read as untrusted input: anything that is not a valid
layout (not UTF-8, not JSON, nested too deeply, integers outside int64, a
sample count its chunks do not hold, ...) is a :class:`HotsetError` naming the
file and the field, raised before anything of the size it claims is allocated.

:func:`pack_dataset` builds every chunk file in a hidden temporary folder,
checking each sample against the manifest hash, swaps it in for the old
``chunks/`` folder (so stale chunk files vanish) and writes ``chunks.json``
last; the old ``chunks.json`` is removed before the swap. A crash therefore
leaves either no layout or a layout whose files are all present and complete.
"""

from __future__ import annotations

import json
import operator
import os
import re
import shlex
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import xxhash

from hotset.data.manifest import Manifest, content_hash, decode_text
from hotset.data.opener import dataset_root, open_dataset
from hotset.errors import HotsetError, IntegrityError, StorageError
from hotset.fsutil import atomic_write
from hotset.storage.base import Store, check_key

IntArray = npt.NDArray[np.int64]

CHUNKS_JSON = "chunks.json"
CHUNK_DIR = "chunks"
#: samples per chunk when none is given: Brand's best size (§5.5) and the benchmarks'
DEFAULT_CHUNK_SIZE = 64
#: the seed ids are shuffled with when none is given (the module docstring says why)
DEFAULT_SHUFFLE_SEED = 0
FORMAT = "hotset-chunks"
VERSION = 1

#: xxh3-64 hex of any buffer (a memoryview slice included): the manifest's ``xxh3``
xxh3_hex = xxhash.xxh3_64_hexdigest
_HASH_RE = re.compile(r"[0-9a-f]{16}")
_INT64_MAX = 2**63 - 1


def chunk_key(c: int) -> str:
    """Store key of chunk ``c``: ``chunks/cNNNNNN.bin`` (six digits, more when needed)."""
    return f"{CHUNK_DIR}/c{c:06d}.bin"


def _int_array(name: str, value: object) -> IntArray:
    """``value`` as a read-only 1-D int64 copy; anything but integers is refused by name."""
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise HotsetError(f"{name}: expected a 1-D array, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        raise HotsetError(f"{name}: expected integers, got dtype {arr.dtype}")
    out = arr.astype(np.int64, copy=True)
    out.setflags(write=False)
    return out


def check_chunk_size(chunk_size: object) -> int:
    """``chunk_size`` if it is an integer >= 1 (samples per chunk), else a named error."""
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int | np.integer):
        raise HotsetError(f"chunk_size: must be an integer >= 1, got {_show(chunk_size)}")
    if chunk_size < 1:
        raise HotsetError(f"chunk_size: must be an integer >= 1, got {chunk_size!r}")
    if chunk_size > _INT64_MAX:  # no int64 field holds it: a damaged chunks.json
        raise HotsetError(
            f"chunk_size: must be at most 2**63 - 1 (a 64-bit integer), got {_show(chunk_size)}"
        )
    return int(chunk_size)


def check_shuffle_seed(seed: object) -> int | None:
    """None or a non-negative integer (what ``np.random.default_rng`` accepts)."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise HotsetError(f"shuffle_seed: must be None or an integer >= 0, got {seed!r}")
    return int(seed)


def _check_counts(
    chunk_of: IntArray,
    offset: IntArray,
    length: IntArray,
    keys: tuple[str, ...],
    sizes: IntArray,
    hashes: tuple[str, ...],
) -> None:
    """At least one sample, and the per-sample and per-chunk arrays each of one length,
    so every later check may index them together."""
    n, n_chunks = len(chunk_of), len(sizes)
    if n == 0:
        raise HotsetError("chunk_of: a chunk layout needs at least one sample, got 0")
    if len(offset) != n or len(length) != n:
        raise HotsetError(
            f"chunk_of, offset and length differ in length: {n}, {len(offset)}, {len(length)}"
        )
    if len(keys) != n_chunks or len(hashes) != n_chunks:
        raise HotsetError(
            f"chunk_keys, chunk_sizes and chunk_hashes differ in length: "
            f"{len(keys)}, {n_chunks}, {len(hashes)}"
        )


def _check_files(keys: tuple[str, ...], hashes: tuple[str, ...]) -> None:
    """Chunk files' keys are valid, distinct store keys and their hashes are xxh3-64 hex:
    two chunks at one key would read each other's bytes."""
    for c, key in enumerate(keys):
        if not isinstance(key, str):
            raise HotsetError(f"chunk_keys[{c}]: expected a string, got {key!r}")
        check_key(key)
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise HotsetError(f"chunk_keys: duplicate key {dup!r}")
    for c, digest in enumerate(hashes):
        if not isinstance(digest, str) or not _HASH_RE.fullmatch(digest):
            raise HotsetError(
                f"chunk_hashes[{c}]: {digest!r:.80} is not 16 lowercase hex characters"
            )


def _check_identity(ident: object) -> None:
    """The manifest fingerprint, when recorded, is what :meth:`Manifest.identity` writes."""
    if ident is not None and (not isinstance(ident, str) or not _HASH_RE.fullmatch(ident)):
        raise HotsetError(f"manifest_identity: {ident!r:.80} is not 16 lowercase hex characters")


def _check_extents(chunk_of: IntArray, offset: IntArray, length: IntArray, sizes: IntArray) -> None:
    """Every sample names an existing chunk and lies inside it (the first bad id is named)."""
    n_chunks = len(sizes)
    _first_bad(sizes < 0, lambda c: f"chunk_sizes[{c}]: negative size {int(sizes[c])}")
    _first_bad(
        (chunk_of < 0) | (chunk_of >= n_chunks),
        lambda i: f"chunk_of[{i}]: chunk {int(chunk_of[i])} is not in 0..{n_chunks - 1}",
    )
    _first_bad(offset < 0, lambda i: f"offset[{i}]: negative offset {int(offset[i])}")
    _first_bad(length < 0, lambda i: f"length[{i}]: negative length {int(length[i])}")
    # compared as length > size - offset: offset + length could overflow int64
    _first_bad(
        length > sizes[chunk_of] - offset,
        lambda i: (
            f"offset[{i}] + length[{i}] = {int(offset[i]) + int(length[i])} is past the "
            f"end of chunk {int(chunk_of[i])} ({int(sizes[chunk_of[i]])} bytes)"
        ),
    )


def _stored_order(chunk_of: IntArray, offset: IntArray, length: IntArray) -> IntArray:
    """Ids in stored order (by chunk, then offset), refusing members that overlap.

    Sorting once serves both jobs: overlaps can only be between neighbours in this
    order, and the order itself is what reading a chunk's members walks. Call it after
    :func:`_check_extents`, so no end below overflows.
    """
    n = len(chunk_of)
    end = offset + length  # every end is within its chunk's size now: no overflow
    # stored order: by chunk, then offset; at one offset zero-length members come
    # first (they overlap nothing), by id
    order = np.lexsort((np.arange(n), length, offset, chunk_of)).astype(np.int64)
    same_chunk = chunk_of[order[1:]] == chunk_of[order[:-1]]
    overlap = same_chunk & (offset[order[1:]] < end[order[:-1]])
    _first_bad(
        overlap,
        lambda j: (
            f"offset[{int(order[j + 1])}]: sample {int(order[j + 1])} at offset "
            f"{int(offset[order[j + 1]])} overlaps sample {int(order[j])} "
            f"(bytes {int(offset[order[j]])}..{int(end[order[j]])}) in chunk "
            f"{int(chunk_of[order[j]])}"
        ),
    )
    return order


@dataclass(frozen=True, eq=False)
class ChunkLayout:
    """Sample id -> (chunk, offset, length), and the chunk files' keys, sizes and hashes.

    Arrays are copied to read-only int64 on construction, and everything is
    validated there, so a layout that exists is consistent: every id is in one
    chunk, every member lies inside its chunk, and members never overlap.
    """

    chunk_of: IntArray
    """(n,) chunk index of each sample id."""
    offset: IntArray
    """(n,) byte offset of each sample inside its chunk file."""
    length: IntArray
    """(n,) byte length of each sample."""
    chunk_keys: tuple[str, ...]
    """Store keys of the chunk files (relative to the store root, e.g. ``chunks/c000012.bin``)."""
    chunk_sizes: IntArray
    """(C,) byte size of each chunk file."""
    chunk_hashes: tuple[str, ...]
    """xxh3-64 hex of each chunk file."""
    chunk_size: int
    """Samples per chunk asked for (the last chunk may hold fewer)."""
    shuffle_seed: int | None = None
    """Seed of the permutation that grouped ids into chunks; None for id order (or unknown:
    see ``shuffle_recorded``)."""
    manifest_identity: str | None = None
    """:meth:`Manifest.identity` of the manifest packed from; None in a layout made before
    the fingerprint existed (see the module docstring, "Stale chunk sets")."""
    shuffle_recorded: bool = True
    """Whether ``chunks.json`` says how ids were grouped: False for one without a
    ``shuffle_seed`` field (written by hand or by another tool), whose order is unknown."""
    dataset: str | None = field(default=None, compare=False)
    """Where the layout was loaded from (a dataset directory or URL), for the re-pack
    command errors give; not part of the layout (ignored by ``==`` and the JSON)."""
    store: Store | None = field(default=None, compare=False)
    """The store the chunk files are read from when they are not beside the samples: a
    pack the loader made in its ``pack_dir`` (:mod:`hotset.data.packdir`); None: the data
    set's own store. Not part of the layout (ignored by ``==`` and the JSON)."""

    _order: IntArray = field(init=False, repr=False)
    _starts: IntArray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        chunk_of = _int_array("chunk_of", self.chunk_of)
        offset = _int_array("offset", self.offset)
        length = _int_array("length", self.length)
        sizes = _int_array("chunk_sizes", self.chunk_sizes)
        keys = tuple(self.chunk_keys)
        hashes = tuple(self.chunk_hashes)
        _check_counts(chunk_of, offset, length, keys, sizes, hashes)
        self._check_records()
        _check_files(keys, hashes)
        _check_identity(self.manifest_identity)
        _check_extents(chunk_of, offset, length, sizes)
        order = _stored_order(chunk_of, offset, length)
        n_chunks = len(sizes)
        starts = np.zeros(n_chunks + 1, dtype=np.int64)
        np.cumsum(np.bincount(chunk_of, minlength=n_chunks), out=starts[1:])
        order.setflags(write=False)
        starts.setflags(write=False)
        for name, value in (
            ("chunk_of", chunk_of),
            ("offset", offset),
            ("length", length),
            ("chunk_sizes", sizes),
            ("chunk_keys", keys),
            ("chunk_hashes", hashes),
            ("chunk_size", int(self.chunk_size)),
            ("_order", order),
            ("_starts", starts),
        ):
            object.__setattr__(self, name, value)

    def _check_records(self) -> None:
        """The scalar fields: chunk size, how ids were shuffled, and the manifest fingerprint.

        A seed with ``shuffle_recorded=False`` is refused because a seed *is* a record of
        the grouping; letting both through would make :attr:`shuffle` contradict itself.
        """
        check_chunk_size(self.chunk_size)
        check_shuffle_seed(self.shuffle_seed)
        if not isinstance(self.shuffle_recorded, bool):
            raise HotsetError(
                f"shuffle_recorded: must be True or False, got {self.shuffle_recorded!r}"
            )
        if not self.shuffle_recorded and self.shuffle_seed is not None:
            raise HotsetError(
                f"shuffle_seed {self.shuffle_seed!r} with shuffle_recorded=False: a seed is a record"
            )

    # ---- sizes -----------------------------------------------------------------

    @property
    def n(self) -> int:
        """Number of samples (ids ``0..n-1``)."""
        return len(self.chunk_of)

    @property
    def n_chunks(self) -> int:
        return len(self.chunk_sizes)

    @property
    def total_bytes(self) -> int:
        """Bytes of all chunk files together."""
        return int(self.chunk_sizes.sum())

    @property
    def shuffle(self) -> str:
        """How ids were grouped, in words: ``"seed S"``, ``"none"`` (id order) or
        ``"unknown"`` (a ``chunks.json`` that does not say)."""
        if self.shuffle_seed is not None:
            return f"seed {self.shuffle_seed}"
        return "none" if self.shuffle_recorded else "unknown"

    # ---- lookups ---------------------------------------------------------------

    def _check_chunk(self, c: object) -> int:
        try:
            index = operator.index(c)  # type: ignore[arg-type]
        except TypeError:
            raise HotsetError(f"chunk: expected an integer, got {c!r}") from None
        if not 0 <= index < self.n_chunks:
            raise HotsetError(f"chunk {index} is not in 0..{self.n_chunks - 1}")
        return index

    def members(self, c: int) -> IntArray:
        """Ids of chunk ``c`` in stored (offset) order; a read-only view, O(1)."""
        c = self._check_chunk(c)
        return self._order[self._starts[c] : self._starts[c + 1]]

    def locate(self, sid: int) -> tuple[int, int, int]:
        """(chunk, offset, length) of sample ``sid``."""
        try:
            index = operator.index(sid)
        except TypeError:
            raise HotsetError(f"sample id: expected an integer, got {sid!r}") from None
        if not 0 <= index < self.n:
            raise HotsetError(f"sample id {index} is not in 0..{self.n - 1}")
        return int(self.chunk_of[index]), int(self.offset[index]), int(self.length[index])

    def _check_size(self, c: object, size: int) -> int:
        """Chunk index ``c``, checked, if ``size`` is its size; else an IntegrityError."""
        index = self._check_chunk(c)
        expected = int(self.chunk_sizes[index])
        if size != expected:
            raise IntegrityError(
                f"chunk {index} ({self.chunk_keys[index]!r}): got {size} bytes, layout says "
                f"{expected}: the chunk file is not the one chunks.json describes; "
                f"{self.repack_advice()}"
            )
        return index

    def split(self, c: int, blob: bytes) -> dict[int, bytes]:
        """Cut chunk ``c``'s bytes into its samples, in stored order.

        A blob of the wrong size means the chunk file is not the one this layout
        was made for (re-packed, truncated): :class:`IntegrityError`, never a
        silently mis-cut sample.
        """
        c = self._check_size(c, len(blob))
        view = memoryview(blob)
        out: dict[int, bytes] = {}
        for sid in self.members(c).tolist():
            start = int(self.offset[sid])
            out[sid] = bytes(view[start : start + int(self.length[sid])])
        return out

    def check_manifest(self, manifest: Manifest) -> None:
        """Raise :class:`HotsetError` unless this layout was packed from ``manifest``.

        Catches a chunk set left over from an earlier dataset at the same path
        without reading any chunk: the sample count, every sample's size (the
        first that differs is named) and the manifest fingerprint
        (``manifest_identity``, when the layout records one: see the module
        docstring), which catches new bytes of the same sizes. Each error says the chunk set is
        stale and gives the ``hotset data pack`` command that re-packs it.
        """
        if len(manifest) != self.n:
            raise HotsetError(
                f"chunk layout has {self.n} samples but the manifest has {len(manifest)}: "
                f"the chunk set is stale; {self.repack_advice()}"
            )
        bad = np.flatnonzero(manifest.sizes != self.length)
        if len(bad):
            i = int(bad[0])
            raise HotsetError(
                f"chunk layout says sample {i} has {int(self.length[i])} bytes but the manifest "
                f"says {int(manifest.sizes[i])}: the chunk set is stale; {self.repack_advice()}"
            )
        if self.manifest_identity is not None:
            actual = manifest.identity()
            if actual != self.manifest_identity:
                raise HotsetError(
                    f"chunk layout was packed from another manifest (fingerprint "
                    f"{self.manifest_identity}, this manifest's is {actual}): the data set "
                    f"changed since `hotset data pack` and the chunk set is stale; "
                    f"{self.repack_advice()}"
                )

    def repack_command(self, *, reshuffle: bool = False) -> str:
        """The ``hotset data pack`` command that packs this layout's data set again, alike.

        Alike: the same chunk size, and the same seed, or ``--no-shuffle`` for a
        layout recorded in id order (a layout whose order is unknown gets the
        default, a shuffle). ``reshuffle`` gives the command that packs it in a
        seeded shuffle instead, whatever its order now (the seed it has, else
        :data:`DEFAULT_SHUFFLE_SEED`). ``DIR`` stands in for the data set when the
        layout does not know where it is (a data set behind a URL is packed in its
        store: the command names the URL).
        """
        where = shlex.quote(self.dataset) if self.dataset is not None else "DIR"
        command = f"hotset data pack {where} --chunk-size {self.chunk_size}"
        if self.shuffle_seed is not None:
            command += f" --shuffle-seed {self.shuffle_seed}"
        elif reshuffle:
            command += f" --shuffle-seed {DEFAULT_SHUFFLE_SEED}"
        elif self.shuffle_recorded:
            command += " --no-shuffle"
        return command

    def repack_advice(self) -> str:
        """What to run to re-pack, in words (a pack the loader made is deleted, and the
        next loader makes it again)."""
        if self.store is not None and self.dataset is not None:
            return (
                f"delete {self.dataset!r}, the chunk files the loader packed, and the next "
                "loader packs the data set again"
            )
        return f"re-pack it with `{self.repack_command()}`"

    def bad_members(self, c: int, blob: bytes | memoryview, hashes: list[str]) -> list[int]:
        """Ids of chunk ``c`` whose bytes in ``blob`` do not hash to ``hashes[id]``.

        ``hashes`` are the manifest's (``Manifest.hashes``). Hashes memoryview
        slices, so nothing is copied; ``blob`` must be the chunk's size.
        """
        view = memoryview(blob)
        c = self._check_size(c, len(view))
        offset, length = self.offset, self.length
        bad = []
        for sid in self.members(c).tolist():
            start = int(offset[sid])
            if xxh3_hex(view[start : start + int(length[sid])]) != hashes[sid]:
                bad.append(sid)
        return bad

    # ---- equality and text -----------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ChunkLayout):
            return NotImplemented
        return (
            np.array_equal(self.chunk_of, other.chunk_of)
            and np.array_equal(self.offset, other.offset)
            and np.array_equal(self.length, other.length)
            and np.array_equal(self.chunk_sizes, other.chunk_sizes)
            and self.chunk_keys == other.chunk_keys
            and self.chunk_hashes == other.chunk_hashes
            and self.chunk_size == other.chunk_size
            and self.shuffle_seed == other.shuffle_seed
            and self.shuffle_recorded == other.shuffle_recorded
        )

    __hash__ = None  # type: ignore[assignment]  # arrays: not hashable

    def __repr__(self) -> str:
        return (
            f"ChunkLayout({self.n} samples in {self.n_chunks} chunks, {self.total_bytes} bytes, "
            f"chunk_size={self.chunk_size}, shuffle={self.shuffle})"
        )

    def to_json(self) -> str:
        """The ``chunks.json`` text (see the module docstring for the format)."""
        chunks = []
        for c in range(self.n_chunks):
            ids = self.members(c)
            chunks.append(
                {
                    "key": self.chunk_keys[c],
                    "size": int(self.chunk_sizes[c]),
                    "xxh3": self.chunk_hashes[c],
                    "ids": ids.tolist(),
                    "offsets": self.offset[ids].tolist(),
                    "lengths": self.length[ids].tolist(),
                }
            )
        doc: dict[str, Any] = {
            "format": FORMAT,
            "version": VERSION,
            "n": self.n,
            "chunk_size": self.chunk_size,
        }
        if self.shuffle_recorded:  # null: id order; no field: unknown
            doc["shuffle_seed"] = self.shuffle_seed
        doc["chunks"] = chunks
        if self.manifest_identity is not None:
            doc["manifest_identity"] = self.manifest_identity
        return json.dumps(doc, separators=(",", ":")) + "\n"

    @classmethod
    def from_json(
        cls,
        text: str | bytes,
        *,
        source: str = CHUNKS_JSON,
        dataset: str | None = None,
        store: Store | None = None,
    ) -> ChunkLayout:
        """Parse and validate ``chunks.json`` text (or its raw bytes).

        Any input that is not a valid layout is a :class:`HotsetError` naming
        ``source`` and the field. ``dataset`` is recorded for the re-pack command
        that errors give (:meth:`repack_command`), ``store`` as the layout's own
        (where its chunk files are, when not beside the samples).
        """
        if isinstance(text, bytes):
            text = decode_text(text, source=source, what="a chunk layout (JSON)")
        try:
            doc = json.loads(text)
        except RecursionError:
            raise HotsetError(f"{source}: not valid JSON: nested too deeply") from None
        except ValueError as exc:  # JSONDecodeError, and integers too long to convert
            raise HotsetError(f"{source}: not valid JSON: {exc}") from None
        try:
            return cls._from_doc(doc, dataset, store)
        except HotsetError as exc:
            raise HotsetError(f"{source}: {exc}") from None

    @classmethod
    def _from_doc(cls, doc: Any, dataset: str | None, store: Store | None) -> ChunkLayout:
        if not isinstance(doc, dict):
            raise HotsetError(f"expected a JSON object, got {type(doc).__name__}")
        if doc.get("format") != FORMAT:
            raise HotsetError(f"format must be {FORMAT!r}, got {doc.get('format')!r:.80}")
        version = doc.get("version")
        if type(version) is not int or version != VERSION:
            raise HotsetError(f"version {version!r:.80} is not supported (want {VERSION})")
        n = doc.get("n")
        if type(n) is not int or n < 1:
            raise HotsetError(f"n must be an integer >= 1, got {_show(n)}")
        chunks = doc.get("chunks")
        if not isinstance(chunks, list) or not chunks:
            raise HotsetError("chunks must be a non-empty list")
        entries = [_chunk_entry(f"chunks[{c}]", entry) for c, entry in enumerate(chunks)]
        _check_count(n, [ids for _, _, _, ids, _, _ in entries])
        chunk_of = np.full(n, -1, dtype=np.int64)
        offset = np.zeros(n, dtype=np.int64)
        length = np.zeros(n, dtype=np.int64)
        for c, (_, _, _, ids, offs, lens) in enumerate(entries):
            where = f"chunks[{c}]"
            outside = (ids < 0) | (ids >= n)
            if outside.any():
                raise HotsetError(f"{where}.ids: id {int(ids[outside][0])} is not in 0..{n - 1}")
            taken = chunk_of[ids] >= 0
            uniq, counts = np.unique(ids, return_counts=True)
            if taken.any() or (counts > 1).any():
                sid = int(ids[taken][0]) if taken.any() else int(uniq[counts > 1][0])
                first = int(chunk_of[sid]) if chunk_of[sid] >= 0 else c
                raise HotsetError(f"{where}.ids: id {sid} is already in chunk {first}")
            chunk_of[ids] = c
            offset[ids] = offs
            length[ids] = lens
        chunk_size = check_chunk_size(doc.get("chunk_size"))
        return cls(
            chunk_of=chunk_of,
            offset=offset,
            length=length,
            chunk_keys=tuple(key for key, _, _, _, _, _ in entries),
            chunk_sizes=np.asarray([size for _, size, _, _, _, _ in entries], dtype=np.int64),
            chunk_hashes=tuple(digest for _, _, digest, _, _, _ in entries),
            chunk_size=chunk_size,
            shuffle_seed=doc.get("shuffle_seed"),
            manifest_identity=doc.get("manifest_identity"),
            shuffle_recorded="shuffle_seed" in doc,
            dataset=dataset,
            store=store,
        )

    # ---- files -----------------------------------------------------------------

    def save(self, dataset_dir: str | os.PathLike[str]) -> Path:
        """Write ``DIR/chunks.json`` atomically and durably; returns its path."""
        path = layout_path(dataset_dir)
        atomic_write(path, self.to_json(), durable=True)
        return path

    @classmethod
    def load(
        cls, dataset_dir: str | os.PathLike[str], *, store: Store | None = None
    ) -> ChunkLayout:
        """Read ``DIR/chunks.json``; a clear error when the dataset was never packed.

        ``store``: where the chunk files are read from, when not from the data
        set's store (see :attr:`store`)."""
        path = layout_path(dataset_dir)
        if not path.is_file():
            raise HotsetError(
                f"no chunk layout at {str(path)!r} (make one with `hotset data pack`)"
            )
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise HotsetError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
        return cls.from_json(raw, source=str(path), dataset=str(path.parent), store=store)

    @staticmethod
    def exists(dataset_dir: str | os.PathLike[str]) -> bool:
        """Whether ``DIR/chunks.json`` exists (the dataset has been packed)."""
        return layout_path(dataset_dir).is_file()


def _show(value: object) -> str:
    """``repr(value)`` cut to a readable length (a 4,000-digit integer from JSON, say)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:24]}... ({len(text)} characters)"


#: one parsed ``chunks[c]`` entry: key, size, xxh3, ids, offsets, lengths
_Entry = tuple[str, int, str, IntArray, IntArray, IntArray]


def _chunk_entry(where: str, entry: Any) -> _Entry:
    """One ``chunks[c]`` object of ``chunks.json``, its types and int64 ranges checked."""
    if not isinstance(entry, dict):
        raise HotsetError(f"{where}: expected an object")
    key, size, digest = entry.get("key"), entry.get("size"), entry.get("xxh3")
    if not isinstance(key, str):
        raise HotsetError(f"{where}.key: expected a string, got {_show(key)}")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise HotsetError(f"{where}.key: {_show(key)} is not UTF-8 text") from None
    if type(size) is not int or not -_INT64_MAX - 1 <= size <= _INT64_MAX:
        raise HotsetError(f"{where}.size: expected a 64-bit integer, got {_show(size)}")
    if not isinstance(digest, str):
        raise HotsetError(f"{where}.xxh3: expected a string, got {_show(digest)}")
    ids, offs, lens = (_int_column(f"{where}.{name}", entry.get(name)) for name in _COLUMNS)
    if not len(ids) == len(offs) == len(lens):
        raise HotsetError(
            f"{where}: ids, offsets and lengths differ in length: "
            f"{len(ids)}, {len(offs)}, {len(lens)}"
        )
    return key, size, digest, ids, offs, lens


_COLUMNS = ("ids", "offsets", "lengths")


def _int_column(where: str, value: Any) -> IntArray:
    """A JSON list of integers as int64; floats, bools and values outside int64 are named."""
    if not isinstance(value, list) or not all(type(x) is int for x in value):
        raise HotsetError(f"{where}: expected a list of integers")
    if value and (min(value) < -_INT64_MAX - 1 or max(value) > _INT64_MAX):
        bad = next(x for x in value if not -_INT64_MAX - 1 <= x <= _INT64_MAX)
        raise HotsetError(f"{where}: {_show(bad)} does not fit in a 64-bit integer")
    return np.asarray(value, dtype=np.int64).reshape(-1)


def _check_count(n: int, id_lists: list[IntArray]) -> None:
    """Refuse an ``n`` larger than the ids the chunks list, before ``n`` is allocated.

    Every id must be in a chunk, so a larger ``n`` is wrong whatever the ids are;
    checked first, a ``chunks.json`` claiming 10**15 samples costs nothing.
    """
    total = sum(len(ids) for ids in id_lists)
    if n <= total:
        return
    seen = np.zeros(total + 1, dtype=bool)  # ids 0..total: one of them is in no chunk
    for ids in id_lists:
        seen[ids[(ids >= 0) & (ids <= total)]] = True
    first = int(np.argmin(seen))
    raise HotsetError(f"id {first} is in no chunk (n is {_show(n)}, the chunks hold {total} ids)")


def _first_bad(mask: npt.NDArray[np.bool_], message: Callable[[int], str]) -> None:
    """Raise ``HotsetError(message(i))`` for the first ``i`` where ``mask`` is true."""
    bad = np.flatnonzero(mask)
    if len(bad):
        raise HotsetError(message(int(bad[0])))


def _is_url(text: str) -> bool:
    return "://" in text and not text.startswith("file://")


def _local_dir(dataset_dir: str | os.PathLike[str]) -> Path:
    """The folder holding ``manifest.csv`` for a dataset directory or its csv path."""
    text = os.fspath(dataset_dir)
    if _is_url(text):
        raise HotsetError(f"{text!r}: expected a local dataset directory, not a URL")
    csv_path, _ = Manifest.paths(text.removeprefix("file://"))
    return csv_path.parent


def layout_path(dataset_dir: str | os.PathLike[str]) -> Path:
    """``DIR/chunks.json`` for a dataset directory (or its ``manifest.csv`` path)."""
    return _local_dir(dataset_dir) / CHUNKS_JSON


def load_layout(
    location: str | os.PathLike[str], *, manifest: Manifest | None = None
) -> ChunkLayout | None:
    """The dataset's chunk layout, or None when it has none (never packed).

    ``location`` is what :func:`hotset.data.open_dataset` takes: a directory, a
    ``manifest.csv`` path or a store URL (then ``chunks.json`` is read through
    the store, beside ``manifest.csv``). With ``manifest`` the layout is also
    checked against it (:meth:`ChunkLayout.check_manifest`): a chunk set packed
    from other data is refused with the command that re-packs it. A layout
    without a manifest fingerprint (packed by an older hotset) passes that check
    on its count and sizes; see the module docstring for what then catches a
    stale one.
    """
    text = os.fspath(location)
    layout: ChunkLayout | None
    if _is_url(text):
        from hotset.storage import open_store

        store = open_store(text)
        if not store.exists(CHUNKS_JSON):
            return None
        layout = ChunkLayout.from_json(
            store.read(CHUNKS_JSON), source=f"{text.rstrip('/')}/{CHUNKS_JSON}", dataset=text
        )
    else:
        layout = ChunkLayout.load(text) if ChunkLayout.exists(text) else None
    if layout is not None and manifest is not None:
        layout.check_manifest(manifest)
    return layout


def read_chunk(
    store: Store,
    layout: ChunkLayout,
    c: int,
    *,
    verify: bool = False,
    manifest: Manifest | None = None,
) -> dict[int, bytes]:
    """Chunk ``c``'s samples by id, from ONE ``store.read`` of its chunk file.

    ``verify`` also checks the chunk's xxh3 against the layout and, given the
    ``manifest``, every member's xxh3 against the manifest's: the chunk's own
    hash only proves the file is the one ``chunks.json`` describes, not that
    ``chunks.json`` describes this data set (:class:`IntegrityError` naming the
    chunk and the sample on mismatch). The size is always checked.
    """
    c = layout._check_chunk(c)
    blob = store.read(layout.chunk_keys[c])
    if verify:
        actual = content_hash(blob)
        if actual != layout.chunk_hashes[c]:
            raise IntegrityError(
                f"chunk {c} ({layout.chunk_keys[c]!r}): xxh3 {actual}, layout says "
                f"{layout.chunk_hashes[c]}"
            )
        if manifest is not None:
            bad = layout.bad_members(c, blob, manifest.hashes)
            if bad:
                raise IntegrityError(member_mismatch(layout, c, bad[0], manifest.keys))
    return layout.split(c, blob)


def member_mismatch(layout: ChunkLayout, c: int, sid: int, keys: Sequence[str]) -> str:
    """The message for sample ``sid`` of chunk ``c`` whose bytes the manifest disowns."""
    start = int(layout.offset[sid])
    return (
        f"chunk {c} ({layout.chunk_keys[c]!r}): sample {sid} ({keys[sid]!r}) at bytes "
        f"{start}..{start + int(layout.length[sid])} does not hash to the manifest's xxh3: "
        f"the chunk set does not hold this data set's bytes (stale, or chunks.json edited); "
        f"{layout.repack_advice()}"
    )


def write_synced(path: Path, data: bytes) -> None:
    """Write and fsync: chunks.json, written durably later, must never outlive its files."""
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


#: the second word of the pack shuffle's seed: above every epoch (0 .. 2**31 - 1), so a
#: pack's permutation is never one a sampler draws for an epoch
PACK_STREAM = 2**32 - 1


def pack_order(n: int, shuffle_seed: int | None) -> IntArray:
    """The ids in the order they are cut into chunks: ``default_rng([seed, PACK_STREAM])``'s
    permutation of ``0..n-1``, or id order when ``shuffle_seed`` is None.

    Why the second word: the samplers draw epoch ``e`` from ``default_rng([seed, e])``,
    and ``default_rng([s, 0])`` is ``default_rng(s)``. Packed with ``default_rng(s)``
    (before), a job at seed ``s`` on a pack of seed ``s`` (0 and 0 by default) asked for
    its first epoch chunk by chunk, which flattered every chunk system's first epoch
    in benchmarks; a pack of an earlier hotset with the same recorded seed holds that
    older permutation (nothing re-derives a layout from its seed)."""
    if shuffle_seed is None:
        return np.arange(n, dtype=np.int64)
    rng = np.random.default_rng([shuffle_seed, PACK_STREAM])
    return rng.permutation(n).astype(np.int64)


def sized_layout(sizes: IntArray, chunk_size: int, *, order: IntArray | None = None) -> ChunkLayout:
    """A layout of ``sizes`` alone, with no files: the ids in ``order`` (default: id
    order) cut into chunks of ``chunk_size``, each id's bytes after the previous
    member's. For what plans without reading (the plan digest, tests); its chunk
    hashes are zeros, as there is no chunk file to hash."""
    n = len(sizes)
    ids = np.arange(n, dtype=np.int64) if order is None else np.asarray(order, dtype=np.int64)
    chunk_of = np.empty(n, dtype=np.int64)
    offset = np.empty(n, dtype=np.int64)
    n_chunks = -(-n // chunk_size)
    chunk_sizes = np.zeros(n_chunks, dtype=np.int64)
    for pos, i in enumerate(ids.tolist()):
        c = pos // chunk_size
        chunk_of[i], offset[i] = c, chunk_sizes[c]
        chunk_sizes[c] += sizes[i]
    return ChunkLayout(
        chunk_of=chunk_of,
        offset=offset,
        length=np.asarray(sizes, dtype=np.int64),
        chunk_keys=tuple(chunk_key(c) for c in range(n_chunks)),
        chunk_sizes=chunk_sizes,
        chunk_hashes=tuple("0" * 16 for _ in range(n_chunks)),
        chunk_size=chunk_size,
    )


def write_chunks(
    manifest: Manifest,
    store: Store,
    folder: str | os.PathLike[str] | None,
    *,
    chunk_size: int,
    shuffle_seed: int | None,
    progress: bool = False,
    desc: str = "pack",
    dataset: str | None = None,
    put: Callable[[str, bytes], None] | None = None,
) -> ChunkLayout:
    """Write chunk ``c``'s file as ``folder/cNNNNNN.bin`` for every chunk; return the layout.

    Every sample is read through ``store`` (``chunk_size`` keys per
    ``read_many``) and checked against the manifest's size and xxh3: an
    :class:`IntegrityError` names the first that differs, and nothing but
    ``folder`` has been written. Each file is fsynced, so the ``chunks.json`` a
    caller writes afterwards never outlives its files. The layout's chunk keys
    are ``chunks/cNNNNNN.bin``: ``folder`` is meant to become a ``chunks/``.
    ``progress`` shows a tqdm bar named ``desc`` on stderr; ``dataset`` is the
    layout's :attr:`ChunkLayout.dataset` (for the commands its messages give).
    :func:`pack_dataset` and :mod:`hotset.data.packdir` both write with it; where
    the files go and how they replace older ones is theirs. ``put(key, blob)``, when
    given, stores each chunk instead (``folder`` is then unused): an object store's
    PUT, where :mod:`hotset.data.store_pack` packs a data set in place.
    """
    from tqdm import tqdm

    n = len(manifest)
    order = pack_order(n, shuffle_seed)
    chunk_of = np.empty(n, dtype=np.int64)
    offset = np.empty(n, dtype=np.int64)
    length = np.empty(n, dtype=np.int64)
    keys: list[str] = []
    sizes: list[int] = []
    hashes: list[str] = []
    out = Path(folder) if folder is not None else Path()
    with tqdm(total=n, desc=desc, unit="sample", file=sys.stderr, disable=not progress) as bar:
        for c, start in enumerate(range(0, n, chunk_size)):
            ids = order[start : start + chunk_size]
            datas = _read_members(store, [manifest.keys[i] for i in ids.tolist()])
            pos = 0
            for sid, data in zip(ids.tolist(), datas, strict=True):
                _check_sample(manifest, sid, data)
                chunk_of[sid] = c
                offset[sid] = pos
                length[sid] = len(data)
                pos += len(data)
            blob = b"".join(datas)
            key = chunk_key(c)
            if put is not None:
                put(key, blob)
            else:
                write_synced(out / key.split("/", 1)[1], blob)
            keys.append(key)
            sizes.append(len(blob))
            hashes.append(content_hash(blob))
            bar.update(len(ids))
    return ChunkLayout(
        chunk_of=chunk_of,
        offset=offset,
        length=length,
        chunk_keys=tuple(keys),
        chunk_sizes=np.asarray(sizes, dtype=np.int64),
        chunk_hashes=tuple(hashes),
        chunk_size=chunk_size,
        shuffle_seed=shuffle_seed,
        manifest_identity=manifest.identity(),
        dataset=dataset,
    )


def _read_members(store: Store, keys: list[str]) -> list[bytes]:
    """``store.read_many(keys)``; an OSError becomes a :class:`StorageError` naming the keys,
    so that a caller can tell a failed read of the data set from a failed write of a chunk."""
    try:
        return store.read_many(keys)
    except OSError as exc:
        raise StorageError(
            f"cannot read the samples {keys[0]!r}..{keys[-1]!r} of {store!r} to pack them: "
            f"{exc.strerror or exc}"
        ) from exc


def _check_sample(manifest: Manifest, sid: int, data: bytes) -> None:
    """Raise :class:`IntegrityError` unless ``data`` is sample ``sid``'s bytes."""
    actual = content_hash(data)
    if actual != manifest.hashes[sid] or len(data) != int(manifest.sizes[sid]):
        raise IntegrityError(
            f"sample {sid} ({manifest.keys[sid]!r}): {len(data)} bytes with "
            f"xxh3 {actual}, manifest says {int(manifest.sizes[sid])} bytes "
            f"with xxh3 {manifest.hashes[sid]} (run `hotset data verify`)"
        )


def pack_dataset(
    dataset_dir: str | os.PathLike[str],
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    shuffle_seed: int | None = DEFAULT_SHUFFLE_SEED,
    progress: bool = False,
) -> ChunkLayout:
    """Write one chunk file per ``chunk_size`` samples, then ``chunks.json``; return the layout.

    Ids are grouped in the permutation drawn by
    ``np.random.default_rng([shuffle_seed, PACK_STREAM])`` -- by default, with
    :data:`DEFAULT_SHUFFLE_SEED` -- so a chunk holds random ids and reading
    chunks in a random order stays close to reading samples in a random order
    (the module docstring says why this is the default, "Why shuffle by default");
    ``shuffle_seed=None`` keeps id order. The seed, or None, is recorded in
    ``chunks.json``. Every sample is read through the dataset's store and
    checked against the manifest (:class:`IntegrityError` naming the sample on
    mismatch, and nothing of the old layout is touched). Re-packing replaces the
    whole ``chunks/`` folder, so stale chunk files go. Local datasets only:
    chunk files are written into the store root; a data set in an object store
    is packed where it is by :func:`hotset.data.store_pack.pack_store` (``hotset
    data pack URL`` chooses).
    """
    from hotset.data.leftovers import owned_tempdir, reclaim

    chunk_size = check_chunk_size(chunk_size)
    seed = check_shuffle_seed(shuffle_seed)
    text = os.fspath(dataset_dir)
    if _is_url(text):
        raise HotsetError(
            f"cannot pack {text!r} here: pack_dataset writes local files; "
            "hotset.data.store_pack.pack_store (`hotset data pack URL`) packs it in its store"
        )
    local = Path(text.removeprefix("file://"))
    manifest, store = open_dataset(local)
    root = dataset_root(local, manifest)
    final = root / CHUNK_DIR
    if final.is_symlink() or (final.exists() and not final.is_dir()):
        raise HotsetError(f"cannot pack: {str(final)!r} exists and is not a plain directory")
    clash = next((k for k in manifest.keys if k.split("/", 1)[0] == CHUNK_DIR), None)
    if clash is not None:
        raise HotsetError(
            f"cannot pack: sample key {clash!r} lies in {CHUNK_DIR}/, the folder chunk files "
            "replace"
        )
    # The temporary folders carry their owner in their name: a killed pack's are
    # removed here by the next one (and by `hotset cache gc --data`), a live one's kept.
    reclaim(root, ("chunks",))
    tmp = owned_tempdir(root, prefix=f".{CHUNK_DIR}.", suffix=".tmp")
    try:
        layout = write_chunks(
            manifest,
            store,
            tmp,
            chunk_size=chunk_size,
            shuffle_seed=seed,
            progress=progress,
            dataset=str(layout_path(local).parent),
        )
        # No layout may point at files while they are being replaced: drop it first.
        layout_path(local).unlink(missing_ok=True)
        trash: Path | None = None
        if final.exists():
            trash = owned_tempdir(root, prefix=f".{CHUNK_DIR}.", suffix=".old")
            os.replace(final, trash)
        os.replace(tmp, final)
        layout.save(local)
        if trash is not None:
            shutil.rmtree(trash, ignore_errors=True)
        return layout
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone already after a successful swap


__all__ = [
    "CHUNKS_JSON",
    "CHUNK_DIR",
    "DEFAULT_CHUNK_SIZE",
    "DEFAULT_SHUFFLE_SEED",
    "ChunkLayout",
    "IntArray",
    "check_chunk_size",
    "check_shuffle_seed",
    "chunk_key",
    "layout_path",
    "load_layout",
    "member_mismatch",
    "pack_dataset",
    "pack_order",
    "read_chunk",
    "sized_layout",
    "write_chunks",
    "write_synced",
]
