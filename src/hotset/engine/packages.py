"""Packages: read units a policy builds at run time (iCACHE's dynamic packaging, §III-C).

A chunk layout (:mod:`hotset.data.chunks`) is fixed before training. iCACHE packs
the samples it does not keep in its H-cache into *packages* while it trains, so a
package's members are only known when the policy decides them. Three parts:

* :class:`PackageSet` is the policy's side: it numbers the packages it defines,
  knows their members and encoded sizes, and is the policy's ``layout`` (a
  :class:`~hotset.engine.units.UnitLayout`), so the planner sizes, stages and
  checks package reads like any other unit read.
* :func:`encode` / :func:`decode` are the file format. A package file describes
  itself (its member ids and lengths come first), so a reader -- a DataLoader
  worker in another process -- needs no copy of the policy's state, only the
  key prefix: :class:`PackageFiles` is that reader's layout.
* A driver writes a package when a plan names it in ``packs`` (reading its
  members from the store: the packer's reads, counted apart from training's) and
  reads it back as one request when a plan names it in ``unit_reads``.

File format: ``b"HSPKG1\\n"``, the member count (u32 little-endian), then per
member its id and its byte length (two u64), then the members' bytes in that
order. Every member is checked against the manifest after the split, so a
package needs no hash of its own.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.errors import HotsetError, IntegrityError

IntArray = npt.NDArray[np.int64]

#: the smallest package iCACHE reads (HPCA'23 §III-C: "at least 1 MB")
PACKAGE_BYTES = 1 << 20
MAGIC = b"HSPKG1\n"
_COUNT = struct.Struct("<I")
_ENTRY = struct.Struct("<QQ")
#: the default key prefix of package files in the data store
DEFAULT_PREFIX = ".hotset-packages/"


def header_bytes(count: int) -> int:
    """Bytes of a package header for ``count`` members."""
    return len(MAGIC) + _COUNT.size + count * _ENTRY.size


def encode(items: Sequence[tuple[int, bytes]]) -> bytes:
    """One package file holding ``items`` (id, bytes), in order."""
    head = [MAGIC, _COUNT.pack(len(items))]
    head += [_ENTRY.pack(int(sid), len(data)) for sid, data in items]
    return b"".join(head + [data for _, data in items])


def decode(blob: bytes, *, where: str = "package") -> dict[int, bytes]:
    """Member id -> bytes of one package file; a malformed file is an IntegrityError."""
    view = memoryview(blob)
    if bytes(view[: len(MAGIC)]) != MAGIC or len(blob) < len(MAGIC) + _COUNT.size:
        raise IntegrityError(f"{where}: not a hotset package (bad magic)")
    (count,) = _COUNT.unpack_from(blob, len(MAGIC))
    pos = header_bytes(count)
    if pos > len(blob):
        raise IntegrityError(f"{where}: header of {count} members runs past the file's end")
    out: dict[int, bytes] = {}
    at = len(MAGIC) + _COUNT.size
    for i in range(count):
        sid, length = _ENTRY.unpack_from(blob, at + i * _ENTRY.size)
        if pos + length > len(blob):
            raise IntegrityError(f"{where}: member {sid} runs past the file's end")
        out[int(sid)] = bytes(view[pos : pos + length])
        pos += length
    if pos != len(blob):
        raise IntegrityError(f"{where}: {len(blob) - pos} bytes after the last member")
    return out


def package_key(prefix: str, unit: int) -> str:
    return f"{prefix}p{unit:08d}.pkg"


class _Keys(Sequence[str]):
    """``chunk_keys`` of a set that grows: the key of unit ``u`` is a formula."""

    def __init__(self, prefix: str, count: int | None) -> None:
        self.prefix = prefix
        self._count = count

    def __len__(self) -> int:
        return 0 if self._count is None else self._count

    def __getitem__(self, unit: int) -> str:  # type: ignore[override]
        if unit < 0:
            raise HotsetError(f"package unit {unit}: units are numbered from 0")
        return package_key(self.prefix, unit)


@dataclass(frozen=True)
class Load:
    """A unit read into the cache: its members admitted after ``evicted`` left.

    ``unit`` is a unit of the policy's layout (a package, or a chunk of the data
    set's layout); ``-1`` reads the ``admitted`` samples alone, one request each
    (a policy loading ahead on a data set without a chunk layout).
    """

    unit: int
    admitted: tuple[int, ...]
    evicted: tuple[int, ...] = ()


@dataclass(frozen=True)
class Background:
    """What a policy asks after a batch: packages to write, ids to evict, units to load.

    ``evicted`` leave the cache before any load (a chunk released when its
    successor is in, FAST'20 §5.1); each load's own ``evicted`` follow.
    """

    packs: tuple[int, ...] = ()
    loads: tuple[Load, ...] = ()
    evicted: tuple[int, ...] = ()


class PackageSet:
    """The packages a policy has defined (a UnitLayout that grows during training)."""

    def __init__(
        self, sizes: IntArray, *, prefix: str = DEFAULT_PREFIX, reusable: bool = False
    ) -> None:
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.prefix = prefix
        #: whether a package is read again after its first load (static packaging);
        #: a driver deletes a package that is not once the batch reading it is done
        self.reusable = reusable
        self._members: list[IntArray] = []
        self._bytes: list[int] = []

    def add(self, members: Sequence[int]) -> int:
        """Define a new package of ``members`` (in order); its unit id."""
        ids = np.asarray(members, dtype=np.int64)
        if not len(ids):
            raise HotsetError("a package needs at least one member")
        self._members.append(ids)
        self._bytes.append(header_bytes(len(ids)) + int(self.sizes[ids].sum()))
        return len(self._members) - 1

    @property
    def n_chunks(self) -> int:
        return len(self._members)

    @property
    def chunk_of(self) -> IntArray:
        """Samples belong to no fixed package (they move between packages)."""
        return np.full(len(self.sizes), -1, dtype=np.int64)

    @property
    def chunk_sizes(self) -> IntArray:
        return np.asarray(self._bytes, dtype=np.int64)

    @property
    def chunk_keys(self) -> tuple[str, ...]:
        return _Keys(self.prefix, len(self._members))  # type: ignore[return-value]

    @property
    def chunk_hashes(self) -> tuple[str, ...]:
        return ("",) * len(self._members)

    def members(self, c: int) -> IntArray:
        return self._members[c]

    def split(self, c: int, blob: bytes) -> dict[int, bytes]:
        got = decode(blob, where=package_key(self.prefix, c))
        if list(got) != self._members[c].tolist():
            raise IntegrityError(f"{package_key(self.prefix, c)}: members differ from the plan's")
        return got

    def state(self) -> list[list[int]]:
        return [m.tolist() for m in self._members]

    def load_state(self, members: Sequence[Sequence[int]]) -> None:
        self._members, self._bytes = [], []
        for m in members:
            self.add(m)


class PackageFiles:
    """A reader's layout of packages: keys by formula, members from the file itself.

    A worker cannot know a package's members before reading it (they were decided
    after the worker started), so :meth:`members` is empty: the planner never
    serves a request from a package loaded by the same batch.
    """

    def __init__(self, n: int, *, prefix: str = DEFAULT_PREFIX, store: Any = None) -> None:
        self.n = n
        self.prefix = prefix
        #: where the package files are (the loader's ``package_dir``); None: the data store
        self.store = store

    @property
    def n_chunks(self) -> int:
        return 0

    @property
    def chunk_of(self) -> IntArray:
        return np.full(self.n, -1, dtype=np.int64)

    @property
    def chunk_sizes(self) -> IntArray:
        return np.zeros(0, dtype=np.int64)

    @property
    def chunk_keys(self) -> tuple[str, ...]:
        return _Keys(self.prefix, None)  # type: ignore[return-value]

    @property
    def chunk_hashes(self) -> tuple[str, ...]:
        return ()

    def members(self, c: int) -> IntArray:
        return np.zeros(0, dtype=np.int64)

    def split(self, c: int, blob: bytes) -> dict[int, bytes]:
        return decode(blob, where=package_key(self.prefix, c))
