"""Prove that a store still holds the bytes its manifest promises.

Caches and importance tables are keyed by sample id; a silently changed file
would make every cached copy and every measured loss refer to the wrong data.
A packed data set (``chunks.json``) duplicates every sample in a chunk file, so
its chunks are checked too (:func:`verify_chunks`): a stale chunk set delivers
old bytes under new ids as surely as a changed file does.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from hotset.data.chunks import ChunkLayout
from hotset.data.manifest import Manifest, content_hash
from hotset.errors import HotsetError
from hotset.storage.base import Store


@dataclass(frozen=True)
class Mismatch:
    """A sample whose bytes differ from the manifest."""

    id: int
    key: str
    expected: str
    actual: str
    expected_size: int
    actual_size: int


@dataclass
class VerifyResult:
    """What :func:`verify` found; ``ok`` when every sample is present and matches."""

    checked: int = 0
    bytes: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.missing

    def summary(self) -> str:
        if self.ok:
            return f"verified {self.checked} samples, {self.bytes} bytes"
        return (
            f"FAILED: {len(self.mismatches)} mismatched and {len(self.missing)} missing "
            f"of {self.checked} samples"
        )


def verify(
    manifest: Manifest, store: Store, *, progress: bool = False, workers: int = 4
) -> VerifyResult:
    """Re-read and re-hash every sample; ``bytes`` counts the bytes actually read."""
    from tqdm import tqdm

    def check(i: int) -> tuple[int, bytes | None]:
        key = manifest.keys[i]
        if not store.exists(key):
            return i, None
        try:
            return i, store.read(key)
        except HotsetError:  # vanished between exists() and read()
            return i, None

    result = VerifyResult()
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for i, data in tqdm(
            pool.map(check, range(len(manifest))),
            total=len(manifest),
            desc="verify",
            unit="file",
            file=sys.stderr,
            disable=not progress,
        ):
            result.checked += 1
            key = manifest.keys[i]
            if data is None:
                result.missing.append(key)
                continue
            result.bytes += len(data)
            actual = content_hash(data)
            if actual != manifest.hashes[i] or len(data) != int(manifest.sizes[i]):
                result.mismatches.append(
                    Mismatch(i, key, manifest.hashes[i], actual, int(manifest.sizes[i]), len(data))
                )
    return result


@dataclass(frozen=True)
class BadChunk:
    """A chunk file that does not hold what ``chunks.json`` and the manifest promise."""

    chunk: int
    key: str
    problem: str
    """What is wrong, in words: missing, its size or xxh3 against the layout, members."""
    ids: tuple[int, ...] = ()
    """The members whose bytes in the chunk do not hash to the manifest's xxh3."""


@dataclass
class ChunkVerifyResult:
    """What :func:`verify_chunks` found; ``ok`` when every chunk holds the manifest's bytes."""

    checked: int = 0
    bytes: int = 0
    bad: list[BadChunk] = field(default_factory=list)
    stale: str | None = None
    """Why the layout does not fit the manifest (``ChunkLayout.check_manifest``), if it does not."""
    notes: list[str] = field(default_factory=list)
    """Not failures: what a user may want to do (re-pack to record a fingerprint)."""

    @property
    def ok(self) -> bool:
        return not self.bad and self.stale is None

    def summary(self) -> str:
        if self.ok:
            return f"verified {self.checked} chunks, {self.bytes} bytes"
        parts = []
        if self.bad:
            wrong = sum(len(b.ids) for b in self.bad)
            parts.append(
                f"{len(self.bad)} of {self.checked} chunks do not match "
                f"({wrong} samples with other bytes than the manifest's)"
            )
        if self.stale is not None:
            parts.append("the chunk set is stale")
        return "FAILED: " + "; ".join(parts)


def verify_chunks(
    manifest: Manifest,
    store: Store,
    layout: ChunkLayout,
    *,
    progress: bool = False,
    workers: int = 4,
) -> ChunkVerifyResult:
    """Re-read every chunk: its size and xxh3 against ``chunks.json``, its members against
    the manifest.

    A chunk's own hash only proves the file is the one ``chunks.json`` describes;
    the members' hashes prove ``chunks.json`` still describes this data set (a
    copy of new data of the same sizes over a packed directory, or ids swapped in
    ``chunks.json``, keep every chunk hash right). A layout that does not fit the
    manifest by count is reported stale without reading a chunk: its ids are not
    this data set's.
    """
    from tqdm import tqdm

    result = ChunkVerifyResult()
    try:
        layout.check_manifest(manifest)
    except HotsetError as exc:
        result.stale = str(exc)
    if layout.manifest_identity is None:
        result.notes.append(
            "chunks.json records no manifest fingerprint (packed by an older hotset), so "
            f"only reading its chunks tells a stale set: `{layout.repack_command()}` records one"
        )
    if layout.n != len(manifest):
        return result

    def check(c: int) -> tuple[int, BadChunk | None]:
        return _check_chunk(manifest, store, layout, c)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for nbytes, bad in tqdm(
            pool.map(check, range(layout.n_chunks)),
            total=layout.n_chunks,
            desc="verify chunks",
            unit="chunk",
            file=sys.stderr,
            disable=not progress,
        ):
            result.checked += 1
            result.bytes += nbytes
            if bad is not None:
                result.bad.append(bad)
    return result


def _check_chunk(
    manifest: Manifest, store: Store, layout: ChunkLayout, c: int
) -> tuple[int, BadChunk | None]:
    """(bytes read, what is wrong with chunk ``c`` or None)."""
    key = layout.chunk_keys[c]
    try:
        blob = store.read(key)
    except HotsetError as exc:  # missing, or unreadable
        return 0, BadChunk(c, key, f"cannot be read: {exc}")
    want = int(layout.chunk_sizes[c])
    if len(blob) != want:
        return len(blob), BadChunk(c, key, f"{len(blob)} bytes, chunks.json says {want}")
    problems = []
    actual = content_hash(blob)
    if actual != layout.chunk_hashes[c]:
        problems.append(f"xxh3 {actual}, chunks.json says {layout.chunk_hashes[c]}")
    ids = tuple(sorted(layout.bad_members(c, blob, manifest.hashes)))
    if ids:
        shown = ", ".join(map(str, ids[:8])) + (", ..." if len(ids) > 8 else "")
        problems.append(f"{len(ids)} samples do not match the manifest (ids {shown})")
    if not problems:
        return len(blob), None
    return len(blob), BadChunk(c, key, "; ".join(problems), ids)
