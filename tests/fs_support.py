"""File systems that really refuse writes, for the tests of what a failed write does.

``chmod 0555`` stops nobody when the tests run as root (they do, in the container
and in CI), so a folder that must refuse writes is made one of two real ways:

* a tiny tmpfs mounted for the test (:func:`tiny_tmpfs`): filled up it answers
  ENOSPC (:func:`fill`), remounted read-only EROFS (:func:`remount_read_only`).
  Mounting needs CAP_SYS_ADMIN; where it is refused the test is skipped, so each
  behaviour also has a test of the second kind, which needs nothing;
* a regular file where a folder must go (:func:`file_in_the_way`): creating
  anything under it answers ENOTDIR (or EEXIST for the folder itself).
"""

from __future__ import annotations

import contextlib
import errno
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def tiny_tmpfs(path: Path, size: str = "512k") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``path`` for the block; skips the test where
    mounting is not permitted. Unmounted lazily, so a straggling reader cannot
    keep it busy."""
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def remount_read_only(path: Path) -> None:
    """Turn the tmpfs at ``path`` read-only: every write under it fails with EROFS."""
    subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True, capture_output=True)


def fill(path: Path) -> int:
    """Write a file in ``path`` until the file system is full (ENOSPC); its bytes."""
    written = 0
    with open(path / "filler", "wb", buffering=0) as fh:
        while True:
            try:
                written += fh.write(b"\0" * 4096)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                return written


def file_in_the_way(folder: Path) -> None:
    """Replace ``folder`` (and what it holds) with a regular file of the same name."""
    if folder.is_dir():
        shutil.rmtree(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_bytes(b"not a folder\n")
