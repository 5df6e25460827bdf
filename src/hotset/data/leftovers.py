"""Folders hotset leaves in a data store when it is killed, and how to tell them apart.

Why this exists. Two writers put temporary folders beside a data set:

* ``hotset data pack`` builds the new chunk files in ``.chunks.<owner>.<rand>.tmp``
  (and parks the old ``chunks/`` as ``.chunks.<owner>.<rand>.old`` while it swaps
  the new one in);
* an iCACHE/ImPACT loader writes its packages under
  ``.hotset-packages/<label>-<owner>-<hex>/`` (in the data store, or in its
  ``package_dir``) and removes that folder when it closes.

A process killed with SIGKILL (Slurm, docker, ``timeout``, the OOM killer) runs
no cleanup, so each kill used to leave a folder that nothing ever removed. Now
every such folder carries its owner in its name, created with the folder (so
there is no moment when the folder exists and its owner is unknown), and anyone
can later tell a dead owner's folder from a live one.

Owner identity is :mod:`hotset.cachestore.shm_gc`'s -- pid, start time (so a
reused pid is not mistaken for the owner) and pid namespace -- plus the host,
because a data store may be a network file system mounted on several machines:
``<host>_<pid>_<start>_<pidns>``, the host being the first label of the host
name with anything but letters, digits and ``-`` made ``-``. Liveness is
:func:`hotset.cachestore.shm_gc.owner_state`; an owner on another host is
*unknown*, never dead (its pids mean nothing here).

What is removed. Only folders whose owner is *dead* (:func:`reclaim`), and,
when asked (``unknown=True``), folders with no owner in their name: those an
older hotset left (``.chunks.<rand>.tmp``, ``.hotset-packages/loader-<pid>-<hex>``).
Folders of live owners, and of owners on other hosts or in other pid
namespaces, are listed but kept. ``hotset data pack`` reclaims its dead
leftovers before packing, a loader the dead package folders beside its own, and
``hotset cache ls|gc --data DIR`` shows and removes both kinds by hand.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hotset.engine.packages import DEFAULT_PREFIX
from hotset.liveness import OwnerState, owner_identity, owner_state

__all__ = [
    "KINDS",
    "Leftover",
    "host_label",
    "owned_tempdir",
    "owner_tag",
    "reclaim",
    "scan",
]

LeftoverKind = Literal["chunks", "packages"]
#: the kinds of folder a scan looks for
KINDS: tuple[LeftoverKind, ...] = ("chunks", "packages")

_OWNER = r"(?P<host>[A-Za-z0-9-]{1,32})_(?P<pid>\d{1,10})_(?P<start>\d{1,20})_(?P<ns>\d{1,20})"
# ``chunks`` is hotset.data.chunks.CHUNK_DIR; mkdtemp's random part is drawn from
# [a-z0-9_]; an older hotset wrote no owner
_CHUNK_TMP = re.compile(rf"^\.chunks\.(?:{_OWNER}\.)?[a-z0-9_]+\.(?:tmp|old)$")
_PACKAGES = re.compile(rf"^[a-z]+-{_OWNER}-[0-9a-f]{{8}}$")
_OLD_PACKAGES = re.compile(r"^[a-z]+-\d{1,10}-[0-9a-f]{8}$")


@dataclass(frozen=True)
class Leftover:
    """One temporary folder of hotset's in a data directory, and what is known of its owner."""

    path: str
    kind: LeftoverKind
    size_bytes: int
    owner_host: str | None
    owner_pid: int | None
    state: OwnerState
    reason: str


def host_label() -> str:
    """This machine's name as it goes into a folder name (see the module docstring)."""
    label = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname().split(".", 1)[0])[:32]
    return label or "localhost"


def owner_tag() -> str:
    """``<host>_<pid>_<start>_<pidns>`` of this process: the owner part of a folder name."""
    pid, start, pidns = owner_identity()
    return f"{host_label()}_{pid}_{start}_{pidns}"


def owned_tempdir(parent: Path, *, prefix: str, suffix: str) -> Path:
    """A new folder ``<prefix><owner>.<random><suffix>`` in ``parent``, made atomically
    with its owner's name in it (``tempfile.mkdtemp``: mode 0700, never an existing one)."""
    return Path(tempfile.mkdtemp(dir=parent, prefix=f"{prefix}{owner_tag()}.", suffix=suffix))


def _state(match: re.Match[str] | None) -> tuple[str | None, int | None, OwnerState, str]:
    """(host, pid, state, reason) of the owner a name's match recorded."""
    if match is None or match["host"] is None:
        return None, None, "unknown", "no owner recorded (made by an older hotset)"
    host, pid = match["host"], int(match["pid"])
    if host != host_label():
        return host, pid, "unknown", f"owner on host {host!r}"
    state, reason = owner_state(pid, int(match["start"]), int(match["ns"]))
    return host, pid, state, reason


def _size(path: Path) -> int:
    """Bytes of the regular files under ``path`` (links not followed; unreadable: skipped)."""
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                info = os.lstat(os.path.join(folder, name))
                if stat.S_ISREG(info.st_mode):
                    total += info.st_size
    return total


def _folders(directory: Path) -> list[Path]:
    """Sub-folders (not links) of ``directory``, sorted; [] if it cannot be listed."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return []
    return [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]


def scan(directory: str | os.PathLike[str], kinds: Iterable[str] = KINDS) -> list[Leftover]:
    """The leftover folders of ``kinds`` in ``directory`` (a data set's root or a
    ``package_dir``): ``.chunks.*.tmp|old`` in it, package folders in its ``.hotset-packages/``."""
    root = Path(directory)
    wanted = set(kinds)
    found: list[Leftover] = []
    if "chunks" in wanted:
        for path in _folders(root):
            match = _CHUNK_TMP.match(path.name)
            if match is None:
                continue
            host, pid, state, reason = _state(match)
            found.append(Leftover(str(path), "chunks", _size(path), host, pid, state, reason))
    if "packages" in wanted:
        for path in _folders(root / DEFAULT_PREFIX):
            match = _PACKAGES.match(path.name)
            if match is None and not _OLD_PACKAGES.match(path.name):
                continue  # not a folder hotset named: not ours to judge
            host, pid, state, reason = _state(match)
            found.append(Leftover(str(path), "packages", _size(path), host, pid, state, reason))
    return found


def reclaim(
    directory: str | os.PathLike[str], kinds: Iterable[str] = KINDS, *, unknown: bool = False
) -> list[Leftover]:
    """Remove the leftovers in ``directory`` whose owner is dead (and, with ``unknown``,
    those with no owner recorded); return those this call removed.

    A folder that cannot be removed (wholly) is left out of the result without
    an error: the next scan looks again.
    """
    removed: list[Leftover] = []
    for item in scan(directory, kinds):
        if not (item.state == "dead" or (unknown and item.owner_host is None)):
            continue
        shutil.rmtree(item.path, ignore_errors=True)
        if not os.path.lexists(item.path):
            removed.append(item)
    return removed
