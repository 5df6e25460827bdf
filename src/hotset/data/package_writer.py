"""The packing step's I/O: write the packages a plan names into the data store.

The policy decides what a package holds (:mod:`hotset.policies.icache.packing`);
a driver -- the live simulator, the loader's main process -- carries it out here:
read the members from the store (one request each, checked against the manifest),
write one package file (:func:`hotset.engine.packages.encode`) under the run's
key prefix. The reads are the packer's, counted apart from training's reads.

Each run packs under a prefix of its own (``.hotset-packages/<run>/``), so two
runs on one data set never read each other's packages; :meth:`PackageWriter.remove`
deletes the run's folder on a local store when the run ends. The folder's name
carries its owner (:mod:`hotset.data.leftovers`), so the folder of a run killed
before it could remove it is found and removed later: by the next writer in the
same place (:meth:`PackageWriter.open`) or by ``hotset cache gc --data DIR``.

Where packages cannot be written. A data store on a read-only mount, or a
``package_dir`` on a full tmpfs, used to let the warm-up run and then kill the
first selective epoch with a bare ``OSError`` naming no path. Now
:meth:`PackageWriter.open` creates the run's folder and a probe file in it when
the writer is made, and raises a :class:`~hotset.errors.HotsetError` naming the
directory (and ``package_dir=``) when it cannot; a write that fails later raises
:class:`PackageWriteError`, naming the file and the system's reason, which the
loader turns into single reads of the package's members
(:mod:`hotset.torch.packing`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.data.leftovers import owner_tag, reclaim
from hotset.data.manifest import content_hash
from hotset.engine.packages import DEFAULT_PREFIX, encode, package_key
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError, HotsetRuntimeError, IntegrityError

#: the probe file :meth:`PackageWriter.open` writes and removes in the run's folder
PROBE_NAME = ".probe"


class PackageWriteError(HotsetRuntimeError):
    """A package file could not be written: its folder is full, read-only or gone.

    Raised for the :class:`OSError` of the write itself, never for the reads of
    the members (a data problem stays a :class:`~hotset.errors.StorageError` or
    :class:`~hotset.errors.IntegrityError`), so a driver can read the members
    alone instead and go on.
    """


def run_prefix(label: str = "run") -> str:
    """A key prefix no other run uses: ``.hotset-packages/<label>-<owner>-<random>/``,
    the owner as :func:`hotset.data.leftovers.owner_tag` writes it (``label`` in
    lowercase letters, or a scan does not recognise the folder)."""
    if not label.isascii() or not label.isalpha() or not label.islower():
        raise HotsetError(f"package folder label must be lowercase letters, got {label!r}")
    return f"{DEFAULT_PREFIX}{label}-{owner_tag()}-{secrets.token_hex(4)}/"


def os_reason(exc: OSError) -> str:
    """``[Errno 28] No space left on device`` without the file name an OSError may carry."""
    if exc.errno is None:
        return str(exc)
    return f"[Errno {exc.errno}] {exc.strerror or os.strerror(exc.errno)}"


def local_root(store: Any) -> Path | None:
    """The directory behind ``store`` (through wrappers), if it is a local one."""
    seen = 0
    while store is not None and seen < 8:
        root = getattr(store, "root", None)
        if isinstance(root, Path):
            return root
        store = getattr(store, "inner", None)
        seen += 1
    return None


class PackageWriter:
    """Writes packages of one run (see the module docstring)."""

    def __init__(
        self,
        store: Any,
        *,
        keys: Sequence[str],
        hashes: Sequence[str] | None,
        sizes: npt.ArrayLike,
        prefix: str,
        out: Any = None,
    ) -> None:
        self.store = store
        #: where packages are written (``package_dir``); the data store by default
        self.out = store if out is None else out
        self.keys = keys
        #: the manifest's hashes each member is checked against; None: sizes only (a
        #: loader with ``verify=False``, or a data set that has no hashes)
        self.hashes = hashes
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.prefix = prefix
        #: what the packer read and wrote so far
        self.read_requests = 0
        self.read_bytes = 0
        self.written_bytes = 0
        self.deleted = 0  # package files deleted once read

    @classmethod
    def for_policy(
        cls,
        policy: Any,
        store: Any,
        *,
        keys: Sequence[str],
        hashes: Sequence[str] | None,
        sizes: npt.ArrayLike,
        label: str,
        out: Any = None,
    ) -> PackageWriter:
        """A writer for ``policy``'s packages under a prefix of this run's own, which the
        policy's package set takes too (so its keys name the files written here)."""
        writer = cls(
            store, keys=keys, hashes=hashes, sizes=sizes, prefix=run_prefix(label), out=out
        )
        writer.open()
        policy.layout.prefix = writer.prefix
        return writer

    def open(self) -> None:
        """Create this run's folder and prove it writable (a probe file, written and
        removed), first removing the package folders of dead runs beside it.

        On a store that is not a local directory nothing is created: its first
        write says whether it takes packages. The message of a folder that
        cannot be written names it, and ``package_dir=`` as the way out.
        """
        root = local_root(self.out)
        if root is None:
            return
        folder = root / self.prefix
        with contextlib.suppress(OSError):  # a read-only store is reported below
            reclaim(root, ("packages",))
        try:
            folder.mkdir(parents=True, exist_ok=True)
            probe = folder / PROBE_NAME
            probe.write_bytes(b"hotset checks that packages can be written here\n")
            probe.unlink()
        except OSError as exc:
            raise HotsetError(self._unwritable(root, exc)) from None

    def _unwritable(self, root: Path, exc: OSError) -> str:
        why = os_reason(exc)
        if self.out is not self.store:
            return (
                f"package_dir={str(root)!r}: cannot write packages there ({why}); "
                "give package_dir= a writable local directory with some free space"
            )
        return (
            f"cannot write iCACHE/ImPACT packages into the data store at "
            f"{str(root / DEFAULT_PREFIX)!r} ({why}): make it writable, or give the "
            "loader a writable local directory of its own, e.g. "
            "package_dir='/local/scratch/pkgs'"
        )

    def write(self, layout: UnitLayout, units: Sequence[int]) -> None:
        """Write package ``u`` of ``layout`` for each of ``units``."""
        for u in units:
            self.write_unit(int(u), layout.members(int(u)).tolist())

    def write_unit(self, u: int, members: Sequence[int]) -> None:
        """Write package ``u`` holding ``members``, read from the store in this order.

        Takes the members rather than the layout so that a packing thread never
        reads the policy's package set while the policy is defining the next one.
        """
        blobs = self.store.read_many([self.keys[m] for m in members])
        for m, blob in zip(members, blobs, strict=True):
            hashes = self.hashes
            if len(blob) != int(self.sizes[m]) or (
                hashes is not None and content_hash(blob) != hashes[m]
            ):
                raise IntegrityError(
                    f"{self.keys[m]!r}: bytes read for a package do not match the manifest"
                )
        package = encode(list(zip(members, blobs, strict=True)))
        key = package_key(self.prefix, int(u))
        try:
            self.out.write(key, package)
        except OSError as exc:
            root = local_root(self.out)
            where = key if root is None else str(root / key)
            raise PackageWriteError(f"cannot write package {where!r}: {os_reason(exc)}") from exc
        self.read_requests += len(members)
        self.read_bytes += sum(len(b) for b in blobs)
        self.written_bytes += len(package)

    def delete(self, u: int) -> bool:
        """Delete package ``u``'s file once nothing will read it; False: the store is not
        a local directory (its packages stay until the run's folder is removed)."""
        root = local_root(self.out)
        if root is None:
            return False
        (root / package_key(self.prefix, int(u))).unlink(missing_ok=True)
        self.deleted += 1
        return True

    def remove(self) -> None:
        """Delete this run's package folder when the store is a local directory."""
        root = local_root(self.out)
        if root is None:
            return
        folder = root / self.prefix
        if not str(self.prefix).startswith(DEFAULT_PREFIX):
            raise HotsetError(f"refusing to remove {str(folder)!r}: not a package folder")
        shutil.rmtree(folder, ignore_errors=True)
