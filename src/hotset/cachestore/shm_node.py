"""One embedded cache per node: how the local ranks of a job agree on one segment.

Why. The budget a user gives is memory of the machine (``cache="2gb"``); with a
segment per rank, 8 ranks took 16 GB of it. The ranks of a job on one machine
therefore share one segment and one budget, as CoorDL keeps one MinIO cache per
server for all its GPUs.

How the ranks meet. Each rank proposes, once, what it is (:func:`proposal`):
the node it runs on (:func:`node_key`), its identity (pid, start time, pid
namespace) and a fresh segment name of its own. The torch side gathers every
rank's proposal (one collective, :mod:`hotset.torch.nodecache`), and each rank
computes the same answer from them (:meth:`NodeShare.agree`, pure): the ranks
with its node key, in rank order, share the segment named by the first of them,
which creates it with every one of them listed as a member
(:mod:`hotset.cachestore.shm_members`); the others attach by that name. Two jobs
on one node never meet (each name holds a random token of its creator), and the
ranks of one job always do (they read the same gathered list).

What a node is. Ranks share a segment only if they can: the same kernel boot
(``/proc/sys/kernel/random/boot_id``), the same ``/dev/shm`` (device and inode:
containers with private ones do not share) and the same pid namespace (a rank
must be able to tell whether another is alive, :mod:`hotset.liveness`). Ranks
that differ in any of them get one segment per group.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Sequence
from dataclasses import dataclass

from hotset.cachestore.shm import SharedMemoryCache
from hotset.cachestore.shm_gc import SHM_DIR, segment_name
from hotset.cachestore.shm_layout import DEFAULT_ARENA_SLACK
from hotset.cachestore.shm_members import JOIN_TIMEOUT_S
from hotset.cachestore.shm_room import check_room
from hotset.cachestore.shm_segment import Identity, segment_size
from hotset.errors import HotsetError
from hotset.liveness import owner_identity

__all__ = ["NodeShare", "Proposal", "node_key", "proposal"]

#: what one rank proposes: (node key, pid, start time, pid namespace, segment name)
Proposal = tuple[str, int, int, int, str]


def node_key() -> str:
    """What ranks able to share one segment have in common (see the module docstring)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            boot = fh.read().strip()
    except OSError:
        boot = socket.gethostname()
    try:
        st = os.stat(SHM_DIR)
        shm = f"{st.st_dev}:{st.st_ino}"
    except OSError:
        shm = "-"
    return f"{boot}/{shm}/{owner_identity()[2]}"


def proposal() -> Proposal:
    """This rank's proposal: its node, its identity and a segment name of its own."""
    pid, start, pidns = owner_identity()
    return (node_key(), pid, start, pidns, segment_name(secrets.token_hex(6)))


@dataclass(frozen=True)
class NodeShare:
    """The local ranks of a job that share one cache on this node, as they agreed."""

    #: the segment's name (the creator's proposal)
    name: str
    #: every local rank's identity, in rank order; the first creates the segment
    members: tuple[Identity, ...]
    #: this rank's place among them
    local_rank: int
    timeout_s: float = JOIN_TIMEOUT_S

    @property
    def local_world(self) -> int:
        """How many ranks of the job run on this node (each plans 1/local_world)."""
        return len(self.members)

    @property
    def creator(self) -> Identity:
        return self.members[0]

    @classmethod
    def agree(cls, proposals: Sequence[object], rank: int) -> NodeShare:
        """What every rank computes alike from every rank's proposal (index = rank)."""
        checked = [_checked(p, r) for r, p in enumerate(proposals)]
        if not 0 <= rank < len(checked):
            raise HotsetError(f"rank {rank} is not among the {len(checked)} proposals")
        mine = checked[rank][0]
        local = [r for r, p in enumerate(checked) if p[0] == mine]
        return cls(
            name=checked[local[0]][4],
            members=tuple(checked[r][1:4] for r in local),
            local_rank=local.index(rank),
        )

    def open(self, capacity_bytes: int, n_slots: int, *, verify: bool = False) -> SharedMemoryCache:
        """The node's cache: created by the first local rank, joined by the others.

        Every rank checks the room the segment needs in ``/dev/shm`` first
        (:func:`~hotset.cachestore.shm_room.check_room`), so that all of the node's
        ranks refuse a cache it cannot hold, not only its creator while the others
        wait for a segment that never comes."""
        size = segment_size(capacity_bytes, n_slots, DEFAULT_ARENA_SLACK, len(self.members))
        check_room(size, capacity=capacity_bytes, name=self.name)
        if self.local_rank == 0:
            return SharedMemoryCache(
                capacity_bytes, n_slots=n_slots, name=self.name, members=self.members, verify=verify
            )
        return SharedMemoryCache.join(
            self.name,
            capacity_bytes=capacity_bytes,
            n_slots=n_slots,
            creator=self.creator,
            verify=verify,
            timeout_s=self.timeout_s,
        )


def _checked(value: object, rank: int) -> tuple[str, int, int, int, str]:
    """A proposal as :func:`proposal` makes it, or a HotsetError naming the rank."""
    ok = (
        isinstance(value, tuple | list)
        and len(value) == 5
        and isinstance(value[0], str)
        and all(type(v) is int and v >= 0 for v in value[1:4])
        and isinstance(value[4], str)
    )
    if not ok:
        raise HotsetError(f"rank {rank} proposed {value!r:.120} for the node's cache")
    assert isinstance(value, tuple | list)
    return (value[0], value[1], value[2], value[3], value[4])
