"""Room in ``/dev/shm`` for the embedded cache, checked before the segment is made.

Why: a segment is a sparse file of the tmpfs at ``/dev/shm``; creating it never
fails, and the first write past what the tmpfs holds kills the writer with a bare
``SIGBUS`` ("Bus error") -- the training process with no workers, a DataLoader
worker otherwise (then reported as a worker that died). Docker gives a container
64 MB of ``/dev/shm`` unless told otherwise, so a cache of 20% of any real data set
meets this first. The room is checked when the loader is built instead, and too
little is a :class:`~hotset.errors.HotsetError` that names ``cache=``, the bytes
the segment needs, the bytes free and the flags that give a container more.

A rank joining a node's cache checks the room the segment still needs (its size
less what its file already holds), so every rank of the node agrees, whether it
looks before or after the creator made the file.
"""

from __future__ import annotations

import os

from hotset.cachestore.shm_gc import SHM_DIR
from hotset.errors import HotsetError
from hotset.units import format_bytes

__all__ = ["check_room", "free_bytes"]

#: what gives a container more shared memory, named in the error
MORE_SHM = (
    "docker run --shm-size=SIZE (compose: shm_size:), or on Kubernetes an emptyDir with "
    "medium: Memory mounted at /dev/shm"
)


def free_bytes(shm_dir: str = SHM_DIR) -> int | None:
    """Bytes an unprivileged writer may still put in ``shm_dir``; None where there is no
    such file system to ask (not Linux)."""
    try:
        st = os.statvfs(shm_dir)
    except (OSError, AttributeError):
        return None
    return int(st.f_bavail) * int(st.f_frsize)


def _held(name: str | None, shm_dir: str) -> int:
    """Bytes the segment ``name`` already holds in ``shm_dir`` (0: none yet)."""
    if not name:
        return 0
    try:
        return int(os.stat(os.path.join(shm_dir, name)).st_blocks) * 512
    except OSError:
        return 0


def check_room(
    size: int, *, capacity: int, name: str | None = None, shm_dir: str = SHM_DIR
) -> None:
    """Refuse a segment of ``size`` bytes (``capacity`` of them the cache's budget) that
    ``shm_dir`` cannot hold; ``name``: a segment that may exist already (a node's)."""
    free = free_bytes(shm_dir)
    if free is None:
        return
    need = size - _held(name, shm_dir)
    if need <= free:
        return
    raise HotsetError(
        f"cache={format_bytes(capacity)}: the embedded shared-memory cache needs "
        f"{format_bytes(size)} in {shm_dir} (the budget plus its index and slack), and "
        f"{shm_dir} has {format_bytes(free)} ({free} bytes) free. Give a smaller cache= "
        "(at most about 75% of the free space), a Redis cache (cache='redis://host:port/0' "
        f"with cache_bytes=), or the container more shared memory: {MORE_SHM}"
    )
