"""The loader's own pack of a data set that has none: made once, found again by content.

A system that reads whole chunks (Brand: ``capabilities.reads_units``) cannot
run without a chunk layout. Rather than refuse an unpacked data set, the loader
packs it itself, once (:func:`pack_for`), the way ``hotset data pack`` would by
default: chunks of :data:`~hotset.data.chunks.DEFAULT_CHUNK_SIZE` samples in
the seeded shuffle of :data:`~hotset.data.chunks.DEFAULT_SHUFFLE_SEED`.

Where, and why there
--------------------
Into ``PACK_DIR/<manifest identity>/`` (``chunks/cNNNNNN.bin`` and
``chunks.json``, as in a packed data set), where ``PACK_DIR`` is the loader's
``pack_dir=`` or, by default, :func:`default_pack_dir`:
``$XDG_CACHE_HOME/hotset/packs`` (``~/.cache/hotset/packs`` when the variable is
unset), the per-user cache directory of the XDG convention that pip and torch
hub follow too. Not next to the data, because:

* the data set's directory is the user's: it may be read-only, a mount shared
  by other users and jobs, under version control, or not a directory at all (a
  URL, a wrapped Dataset); an implicit copy of every byte into it would
  surprise, while ``hotset data pack DIR`` remains the explicit way to pack in
  place (a data set packed in place is used as it is, and nothing is written);
* the pack is keyed by :meth:`Manifest.identity()
  <hotset.data.manifest.Manifest.identity>` (sizes and hashes, in id order), so
  a data set moved or copied elsewhere finds the same pack, and one whose
  content changed gets a new one instead of a stale layout.

The pack is a full copy of the data set's bytes on local disk, and chunks are
then read from it, not from the data set's store (which is read once, to make
it). The space it needs is checked before writing; a directory that cannot be
written (or lacks the space) is a :class:`HotsetError` naming it and the
``pack_dir=`` option.

Made once, by one process
-------------------------
A pack is built in a hidden folder ``PACK_DIR/.chunks.<owner>.<rand>.tmp``
(:mod:`hotset.data.leftovers`: a killed pack's folder is removed by the next)
and renamed to its final name only when complete, so a pack that exists is
whole. Processes packing the same data set at once (the ranks of a job on one
machine) take turns on an ``flock`` of ``PACK_DIR/.<identity>.lock``: the first
packs, the others wait and find its pack. Where ``flock`` does not hold across
machines (some network file systems), the rename still lets only one pack
in, and the others use it. A pack is deterministic (the same manifest gives the
same layout, byte for byte), so machines that each pack their own copy read the
same chunks, and a pack deleted between runs comes back as it was: a resumed
run's system makes the decisions it made before.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from hotset.data.chunks import (
    CHUNK_DIR,
    DEFAULT_CHUNK_SIZE,
    DEFAULT_SHUFFLE_SEED,
    ChunkLayout,
    write_chunks,
)
from hotset.data.manifest import Manifest
from hotset.errors import HotsetError
from hotset.storage.base import Store
from hotset.storage.local import LocalStore

__all__ = ["default_pack_dir", "find_pack", "pack_for"]

#: the error for a pack that cannot be written, given the reason
_Refuse = Callable[[str], HotsetError]


def default_pack_dir() -> Path:
    """``$XDG_CACHE_HOME/hotset/packs``, or ``~/.cache/hotset/packs`` (see the module).

    A relative ``XDG_CACHE_HOME`` is ignored, as the XDG convention says.
    """
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:  # no $HOME and no password entry
            raise HotsetError(
                "pack_dir: no default (neither $XDG_CACHE_HOME nor a home directory is "
                "set); give pack_dir= a writable local directory"
            ) from None
    return Path(base) / "hotset" / "packs"


def find_pack(manifest: Manifest, pack_dir: str | os.PathLike[str] | None) -> ChunkLayout | None:
    """The loader's pack of ``manifest``'s data set in ``pack_dir`` (default
    :func:`default_pack_dir`), or None where there is none yet."""
    parent = default_pack_dir() if pack_dir is None else Path(pack_dir)
    final = parent / manifest.identity()
    return _open(final, manifest) if ChunkLayout.exists(final) else None


def _open(final: Path, manifest: Manifest) -> ChunkLayout:
    """The pack in ``final``, its chunk files read from there, checked against ``manifest``."""
    try:
        layout = ChunkLayout.load(final, store=LocalStore(final))
        layout.check_manifest(manifest)
    except HotsetError as exc:
        raise HotsetError(
            f"{exc} (delete {str(final)!r}: the loader then packs it again)"
        ) from None
    return layout


def pack_for(
    manifest: Manifest,
    store: Store,
    *,
    pack_dir: str | os.PathLike[str] | None,
    source: str,
    why: str,
    progress: bool = True,
) -> ChunkLayout:
    """The layout of ``manifest``'s data set in ``pack_dir``: found, or packed there now.

    ``store`` is where its samples are read from to pack them, ``source`` how
    messages name the data set, ``why`` what needs the pack (``"system 'brand'
    reads whole chunks"``): both go into the errors. ``progress`` shows a line
    and a tqdm bar on stderr while packing.
    """
    given = pack_dir is not None
    parent = Path(pack_dir) if pack_dir is not None else default_pack_dir()
    found = find_pack(manifest, parent)
    if found is not None:
        return found
    final = parent / manifest.identity()
    refuse = _refusal(parent, given=given, source=source, why=why)
    try:
        parent.mkdir(parents=True, exist_ok=True)
        with _locked(parent / f".{manifest.identity()}.lock"):
            if not ChunkLayout.exists(final):  # another process may have packed it meanwhile
                _check_space(parent, manifest, refuse)
                _pack(manifest, store, parent, final, source=source, progress=progress)
    except OSError as exc:  # the pack's folder, lock or files (reads raise StorageError)
        raise refuse(exc.strerror or str(exc)) from None
    return _open(final, manifest)


def _refusal(parent: Path, *, given: bool, source: str, why: str) -> _Refuse:
    """How a pack that cannot be written there is refused: a HotsetError naming the
    directory, the option, and the two ways out."""
    name = (
        f"pack_dir={str(parent)!r}"
        if given
        else f"pack_dir (left out: {str(parent)!r}, from $XDG_CACHE_HOME or ~/.cache)"
    )
    local = "://" not in source and os.path.exists(source)  # a directory or manifest path

    def refuse(reason: str) -> HotsetError:
        in_place = (
            f", or pack the data set in place once with `hotset data pack {source}`"
            if local
            else ""
        )
        return HotsetError(
            f"{name}: cannot pack {source!r} there ({reason}); {why} and the data set has no "
            f"chunk layout, so the loader packs it once into pack_dir: give pack_dir= a "
            f"writable local directory with room for a copy of the data set{in_place}"
        )

    return refuse


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the block."""
    fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)  # flock needs no write access
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _check_space(parent: Path, manifest: Manifest, refuse: _Refuse) -> None:
    """Refuse before writing where the pack (a copy of every sample) cannot fit."""
    need = int(manifest.total_bytes)
    free = shutil.disk_usage(parent).free
    if free < need:
        raise refuse(f"the pack needs {need:,} bytes and {free:,} are free")


def _pack(
    manifest: Manifest, store: Store, parent: Path, final: Path, *, source: str, progress: bool
) -> None:
    """Write the pack in a hidden folder of ``parent``, then rename it to ``final``."""
    from hotset.data.leftovers import owned_tempdir, reclaim

    reclaim(parent, ("chunks",))  # what killed packs left here
    tmp = owned_tempdir(parent, prefix=f".{CHUNK_DIR}.", suffix=".tmp")
    try:
        (tmp / CHUNK_DIR).mkdir()
        if progress:
            print(
                f"hotset: packing {source!r} into {str(final)!r}, once: chunks of "
                f"{DEFAULT_CHUNK_SIZE} samples in a shuffle of seed {DEFAULT_SHUFFLE_SEED}",
                file=sys.stderr,
            )
        layout = write_chunks(
            manifest,
            store,
            tmp / CHUNK_DIR,
            chunk_size=DEFAULT_CHUNK_SIZE,
            shuffle_seed=DEFAULT_SHUFFLE_SEED,
            progress=progress,
            desc="hotset: pack",
        )
        layout.save(tmp)
        os.chmod(tmp, 0o755)  # mkdtemp made it private: others sharing pack_dir read it too
        try:
            os.rename(tmp, final)
        except OSError:
            if not ChunkLayout.exists(final):  # not another process's pack
                raise HotsetError(
                    f"{str(final)!r} is in the way of the loader's pack of {source!r} and "
                    "holds none: delete it"
                ) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone already after the rename
