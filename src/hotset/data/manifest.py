"""The manifest: what a dataset promises, one row per sample.

Everything else in hotset indexes arrays by sample id (importance tables, cache
maps, traces), so a manifest is only accepted when its ids are exactly
``0..N-1``. The content hash lets ``hotset data verify`` and the caches prove
that the bytes they serve are the bytes the manifest describes.

On disk a manifest is ``manifest.csv`` (header ``id,key,size,label,xxh3``)
beside ``dataset.json`` (metadata: format, image size, classes, generator, and
``num_samples``). A csv cut short at a row boundary still parses, so the row
count is written into ``dataset.json`` and checked on load: a truncated copy is
refused instead of silently training on part of the data. Every way a file can
be malformed (not UTF-8, NUL bytes, numbers that overflow int64, JSON nested
too deep) is reported as a :class:`HotsetError` naming the file.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from hotset.errors import HotsetError
from hotset.fsutil import atomic_write

MANIFEST_CSV = "manifest.csv"
DATASET_JSON = "dataset.json"
HEADER = ("id", "key", "size", "label", "xxh3")
FORMATS = ("png", "jpeg", "npy", "mixed")

_HASH_RE = re.compile(r"^[0-9a-f]{16}$")
#: the metadata key holding the row count; derived from the rows, so not kept in ``meta``
NUM_SAMPLES = "num_samples"
#: ids, sizes and labels are stored as int64
_INT64_MAX = 2**63 - 1


def content_hash(data: bytes) -> str:
    """xxh3-64 of ``data`` as 16 lowercase hex characters (the manifest's ``xxh3`` column)."""
    return str(xxhash.xxh3_64_hexdigest(data))


def check_key(key: str, *, where: str = "") -> None:
    """A key is a '/'-separated relative path inside the dataset root (no '..', no control chars)."""
    prefix = f"{where}: " if where else ""
    if not key:
        raise HotsetError(f"{prefix}empty key")
    if key.startswith("/") or "\\" in key:
        raise HotsetError(f"{prefix}bad key {key!r}: must be a relative '/'-separated path")
    if any(ord(c) < 32 or ord(c) == 127 for c in key):  # NUL, newlines: no file has such a name
        raise HotsetError(f"{prefix}bad key {key!r}: control characters are not allowed")
    if any(part in ("", ".", "..") for part in key.split("/")):
        raise HotsetError(f"{prefix}bad key {key!r}: no empty, '.' or '..' path parts allowed")


def _check_meta(meta: Any) -> dict[str, Any]:
    if not isinstance(meta, dict):
        raise HotsetError(f"dataset metadata must be a JSON object, got {type(meta).__name__}")
    fmt = meta.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise HotsetError(f"dataset metadata: format {fmt!r} is not one of {', '.join(FORMATS)}")
    for field in ("num_classes", "channels", NUM_SAMPLES):
        value = meta.get(field)
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 0
        ):
            raise HotsetError(
                f"dataset metadata: {field} must be a non-negative integer, got {value!r}"
            )
    names = meta.get("class_names")
    if names is not None:
        if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
            raise HotsetError("dataset metadata: class_names must be a list of strings")
        num = meta.get("num_classes")
        if num is not None and len(names) != num:
            raise HotsetError(
                f"dataset metadata: {len(names)} class_names but num_classes is {num}"
            )
    return dict(meta)


def _dense_error(ids: np.ndarray) -> str | None:
    """Why ``ids`` (already known unique) are not exactly 0..N-1, or None when they are."""
    n = len(ids)
    if n == 0:
        return None
    lo, hi = int(ids.min()), int(ids.max())
    if lo == 0 and hi == n - 1:
        return None
    present = np.zeros(n, dtype=bool)
    inside = ids[(ids >= 0) & (ids < n)]
    present[inside] = True
    missing = np.flatnonzero(~present)
    first_missing = int(missing[0]) if len(missing) else None
    return (
        f"ids must be exactly 0..{n - 1} (dense, any row order) for {n} samples, "
        f"but they range {lo}..{hi}; first missing id is {first_missing}"
    )


class Manifest:
    """One row per sample: id, store key, byte size, label (-1 unlabeled), xxh3 hash.

    Rows are kept sorted by id, so ``manifest.keys[i]`` is the key of sample ``i``.
    The constructor validates the columns; :meth:`load` additionally names the
    offending line of the file.
    """

    def __init__(
        self,
        ids: Sequence[int] | np.ndarray,
        keys: Sequence[str],
        sizes: Sequence[int] | np.ndarray,
        labels: Sequence[int] | np.ndarray,
        hashes: Sequence[str],
        meta: dict[str, Any] | None = None,
    ) -> None:
        id_arr = np.asarray(ids, dtype=np.int64).reshape(-1)
        size_arr = np.asarray(sizes, dtype=np.int64).reshape(-1)
        label_arr = np.asarray(labels, dtype=np.int64).reshape(-1)
        key_list = [str(k) for k in keys]
        hash_list = [str(h) for h in hashes]
        n = len(id_arr)
        lengths = {
            "ids": n,
            "keys": len(key_list),
            "sizes": len(size_arr),
            "labels": len(label_arr),
            "hashes": len(hash_list),
        }
        if len(set(lengths.values())) != 1:
            raise HotsetError(f"manifest columns differ in length: {lengths}")
        if n == 0:
            raise HotsetError("empty dataset: a manifest needs at least one sample")
        self._meta = _check_meta(meta if meta is not None else {})
        # The row count is derived from the rows; a recorded one must agree, then is dropped
        # so that a saved-and-loaded manifest equals the one that was saved.
        recorded = self._meta.pop(NUM_SAMPLES, None)
        if recorded is not None and recorded != n:
            raise HotsetError(
                f"dataset metadata says {NUM_SAMPLES} is {recorded}, but there are {n} rows"
            )

        unique_ids, counts = np.unique(id_arr, return_counts=True)
        if len(unique_ids) != n:
            raise HotsetError(f"duplicate id {int(unique_ids[counts > 1][0])}")
        why = _dense_error(id_arr)
        if why is not None:
            raise HotsetError(why)
        if (size_arr < 0).any():
            i = int(np.flatnonzero(size_arr < 0)[0])
            raise HotsetError(f"negative size {int(size_arr[i])} for id {int(id_arr[i])}")
        if int(size_arr.max()) > _INT64_MAX // n and sum(size_arr.tolist()) > _INT64_MAX:
            # int64 sums would wrap around to a negative total
            raise HotsetError(f"sizes add up to more than {_INT64_MAX} bytes")
        if (label_arr < -1).any():
            i = int(np.flatnonzero(label_arr < -1)[0])
            raise HotsetError(f"label {int(label_arr[i])} for id {int(id_arr[i])} is below -1")
        num = self._meta.get("num_classes")
        if num is not None and (label_arr >= num).any():
            i = int(np.flatnonzero(label_arr >= num)[0])
            raise HotsetError(
                f"label {int(label_arr[i])} for id {int(id_arr[i])} is not below num_classes {num}"
            )
        for i, h in enumerate(hash_list):
            if not _HASH_RE.match(h):
                raise HotsetError(
                    f"bad xxh3 {h!r} for id {int(id_arr[i])}: want 16 lowercase hex characters"
                )
        seen: dict[str, int] = {}
        for i, k in enumerate(key_list):
            check_key(k, where=f"id {int(id_arr[i])}")
            if k in seen:
                raise HotsetError(f"duplicate key {k!r} (ids {seen[k]} and {int(id_arr[i])})")
            seen[k] = int(id_arr[i])

        order = np.argsort(id_arr, kind="stable")
        self._ids = np.arange(n, dtype=np.int64)
        self._sizes = size_arr[order].copy()
        self._labels = label_arr[order].copy()
        self._keys = [key_list[i] for i in order]
        self._hashes = [hash_list[i] for i in order]
        for arr in (self._ids, self._sizes, self._labels):
            arr.setflags(write=False)

    # ---- columns -------------------------------------------------------------

    @property
    def ids(self) -> np.ndarray:
        """``0..N-1`` (int64, read-only)."""
        return self._ids

    @property
    def keys(self) -> list[str]:
        return self._keys

    @property
    def sizes(self) -> np.ndarray:
        """Byte size per id (int64, read-only)."""
        return self._sizes

    @property
    def labels(self) -> np.ndarray:
        """Label per id, -1 for unlabeled (int64, read-only)."""
        return self._labels

    @property
    def hashes(self) -> list[str]:
        return self._hashes

    @property
    def meta(self) -> dict[str, Any]:
        return self._meta

    @property
    def num_classes(self) -> int:
        """From the metadata when recorded, else one more than the largest label (0 if none)."""
        num = self._meta.get("num_classes")
        if isinstance(num, int):
            return num
        return int(self._labels.max()) + 1 if (self._labels >= 0).any() else 0

    @property
    def total_bytes(self) -> int:
        return int(self._sizes.sum())

    def identity(self) -> str:
        """16 hex characters naming this data set's content: ids, sizes and hashes.

        Keys, labels and metadata are left out, so the same bytes under other file
        names are the same data set (a copy on another mount). Caches name their
        shared namespaces by it: two jobs share entries only when they read the
        same content, and a job never budgets against another data set's bytes.
        """
        digest = xxhash.xxh3_64()
        digest.update(np.ascontiguousarray(self._sizes, dtype="<i8").tobytes())
        digest.update("\n".join(self._hashes).encode())
        return str(digest.hexdigest())

    def __len__(self) -> int:
        return len(self._ids)

    def __repr__(self) -> str:
        return (
            f"Manifest({len(self)} samples, {self.total_bytes} bytes, "
            f"{self.num_classes} classes, format={self._meta.get('format')!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Manifest):
            return NotImplemented
        return (
            self._keys == other._keys
            and self._hashes == other._hashes
            and np.array_equal(self._sizes, other._sizes)
            and np.array_equal(self._labels, other._labels)
            and self._meta == other._meta
        )

    __hash__ = None  # type: ignore[assignment]  # mutable meta: not hashable

    # ---- text form -----------------------------------------------------------

    def to_csv(self) -> str:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(HEADER)
        for i in range(len(self)):
            writer.writerow(
                (i, self._keys[i], int(self._sizes[i]), int(self._labels[i]), self._hashes[i])
            )
        return buf.getvalue()

    def meta_json(self) -> str:
        """``dataset.json``'s text: the metadata plus ``num_samples`` (checked on load)."""
        try:
            return (
                json.dumps({**self._meta, NUM_SAMPLES: len(self)}, indent=2, sort_keys=True) + "\n"
            )
        except (TypeError, ValueError) as exc:
            raise HotsetError(f"dataset metadata is not JSON-serialisable: {exc}") from None

    @classmethod
    def parse(
        cls, csv_text: str | bytes, meta: dict[str, Any] | None = None, *, source: str = "manifest"
    ) -> Manifest:
        """Build from the csv text; errors name ``source``, the line number and the field.

        ``csv_text`` may be the raw bytes of the file: they must be UTF-8, and
        anything else is reported as not being a manifest rather than as a
        decoding traceback. A ``num_samples`` in ``meta`` (what ``dataset.json``
        records) must equal the number of rows.
        """
        if isinstance(csv_text, bytes):
            csv_text = decode_text(csv_text, source=source, what="a manifest csv")
        rows = csv.reader(io.StringIO(csv_text))
        try:
            return cls._parse_rows(rows, meta, source)
        except csv.Error as exc:  # NUL bytes, fields over the csv module's size limit
            raise HotsetError(
                f"{source}: line {rows.line_num}: not a valid csv row: {exc}"
            ) from None

    @classmethod
    def _parse_rows(cls, rows: Any, meta: dict[str, Any] | None, source: str) -> Manifest:
        try:
            header = next(rows)
        except StopIteration:
            raise HotsetError(f"{source}: empty dataset (no header, no rows)") from None
        if tuple(h.strip() for h in header) != HEADER:
            raise HotsetError(
                f"{source}: line 1: header must be {','.join(HEADER)}, got {header!r}"
            )
        ids: list[int] = []
        keys: list[str] = []
        sizes: list[int] = []
        labels: list[int] = []
        hashes: list[str] = []
        id_line: dict[int, int] = {}
        key_line: dict[str, int] = {}
        for row in rows:
            line = rows.line_num
            if not row:
                continue
            where = f"{source}: line {line}"
            if len(row) != len(HEADER):
                raise HotsetError(f"{where}: expected {len(HEADER)} fields, got {len(row)}")
            id_s, key, size_s, label_s, digest = row
            sid = _parse_int(id_s, where, "id", minimum=0)
            size = _parse_int(size_s, where, "size", minimum=0)
            label = _parse_int(label_s, where, "label", minimum=-1)
            if not _HASH_RE.match(digest):
                raise HotsetError(
                    f"{where}: field xxh3: {digest!r} is not 16 lowercase hex characters"
                )
            check_key(key, where=f"{where}: field key")
            if sid in id_line:
                raise HotsetError(f"{where}: duplicate id {sid} (first on line {id_line[sid]})")
            if key in key_line:
                raise HotsetError(f"{where}: duplicate key {key!r} (first on line {key_line[key]})")
            id_line[sid] = line
            key_line[key] = line
            ids.append(sid)
            keys.append(key)
            sizes.append(size)
            labels.append(label)
            hashes.append(digest)
        if not ids:
            raise HotsetError(f"{source}: empty dataset (header but no rows)")
        _check_count(len(ids), meta, source)
        why = _dense_error(np.asarray(ids, dtype=np.int64))
        if why is not None:
            raise HotsetError(f"{source}: {why}")
        try:
            return cls(ids, keys, sizes, labels, hashes, meta)
        except HotsetError as exc:
            raise HotsetError(f"{source}: {exc}") from None

    # ---- files ---------------------------------------------------------------

    @staticmethod
    def paths(path: str | os.PathLike[str]) -> tuple[Path, Path]:
        """(csv path, json path) for a dataset directory or a ``.csv`` path."""
        p = Path(path)
        if p.suffix.lower() == ".csv":
            return p, p.parent / DATASET_JSON
        return p / MANIFEST_CSV, p / DATASET_JSON

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Manifest:
        """Read and validate a manifest from a dataset directory or its csv file.

        ``dataset.json`` beside the csv is optional (metadata ``{}`` without it)
        but must be a valid JSON object when present.
        """
        p = Path(path)
        if not p.exists():
            raise HotsetError(f"no such dataset: {str(p)!r} does not exist")
        if p.is_dir() and not (p / MANIFEST_CSV).is_file():
            raise HotsetError(
                f"no manifest in {str(p)!r}: expected {MANIFEST_CSV} "
                "(make one with `hotset data import`)"
            )
        csv_path, json_path = cls.paths(p)
        if not csv_path.is_file():
            raise HotsetError(f"manifest {str(csv_path)!r} is not a file")
        meta: dict[str, Any] = {}
        if json_path.is_file():
            meta = parse_meta(_read(json_path), source=str(json_path))
        return cls.parse(_read(csv_path), meta, source=str(csv_path))

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write ``dataset.json`` then the csv, each atomically; returns the csv path.

        ``path`` is a directory (created if needed) or a ``.csv`` path whose
        ``dataset.json`` goes beside it.
        """
        csv_path, json_path = self.paths(path)
        csv_path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(json_path, self.meta_json(), durable=True)
        atomic_write(csv_path, self.to_csv(), durable=True)
        return csv_path


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise HotsetError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None


def decode_text(data: bytes, *, source: str, what: str) -> str:
    """``data`` as UTF-8, or a HotsetError saying the file is not ``what`` (binary garbage)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HotsetError(
            f"{source}: not {what}: byte 0x{data[exc.start]:02x} at offset {exc.start} "
            "is not UTF-8 text"
        ) from None


def _check_count(rows: int, meta: dict[str, Any] | None, source: str) -> None:
    """Refuse a csv with fewer (or more) rows than ``dataset.json`` recorded.

    A copy cut at a row boundary is valid csv, so only the recorded count can
    tell it from a smaller dataset. Datasets written before ``num_samples``
    existed are checked against the synthetic generator's ``synth.n`` instead.
    """
    if not meta:
        return
    recorded = meta.get(NUM_SAMPLES)
    field = NUM_SAMPLES
    if recorded is None:
        synth = meta.get("synth")
        recorded = synth.get("n") if isinstance(synth, dict) else None
        field = "synth.n"
        if isinstance(recorded, bool) or not isinstance(recorded, int):
            return
    if recorded != rows:
        raise HotsetError(
            f"{source}: has {rows} rows but {DATASET_JSON} says {field} is {recorded}: "
            "the manifest is truncated or does not belong to this dataset"
        )


def parse_meta(text: str | bytes, *, source: str = DATASET_JSON) -> dict[str, Any]:
    """Parse ``dataset.json``; any malformed input is a HotsetError naming ``source``."""
    if isinstance(text, bytes):
        text = decode_text(text, source=source, what="a JSON metadata file")
    try:
        meta = json.loads(text)
    except RecursionError:
        raise HotsetError(f"{source}: not valid JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, and ints too long to convert
        raise HotsetError(f"{source}: not valid JSON: {exc}") from None
    try:
        return _check_meta(meta)
    except HotsetError as exc:
        raise HotsetError(f"{source}: {exc}") from None


def _parse_int(text: str, where: str, field: str, *, minimum: int) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise HotsetError(f"{where}: field {field}: {text[:40]!r} is not an integer") from None
    if value > _INT64_MAX:
        raise HotsetError(f"{where}: field {field}: {value} does not fit in 64 bits")
    if value < minimum:
        raise HotsetError(f"{where}: field {field}: {value} is below {minimum}")
    return value
