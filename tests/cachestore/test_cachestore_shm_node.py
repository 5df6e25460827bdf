"""A node's cache across real processes: ranks that agree, share, die and leave.

Each "rank" here is a separate Python process (what torch.distributed.run starts)
that proposes itself (:func:`hotset.cachestore.shm_node.proposal`), is told every
rank's proposal, and opens the node's cache as :class:`NodeShare` says; the test
process is a rank too where a test needs one. The torch side, a collective
gathering the proposals under torchrun, is tests/torch/test_torch_node_cache.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from hotset.cachestore import CacheKey, content_hash
from hotset.cachestore.shm_gc import reclaim_stale_segments, segment_info
from hotset.cachestore.shm_node import NodeShare, node_key, proposal
from hotset.errors import HotsetError

CAPACITY = 50_000
N_SLOTS = 64
TIMEOUT = 30

#: one rank: proposes, opens the node's cache as told, puts its ids, then obeys
RANK = textwrap.dedent(
    """
    import json, os, signal, sys
    from hotset.cachestore import CacheKey, content_hash
    from hotset.cachestore.shm_node import NodeShare, proposal

    def blob(i):
        return bytes((i * 7 + j) % 256 for j in range(100 + i))

    print(json.dumps(proposal()), flush=True)
    msg = json.loads(sys.stdin.readline())
    share = NodeShare.agree(msg["proposals"], msg["rank"])
    try:
        cache = share.open(msg["capacity"], msg["n_slots"])
    except Exception as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
        sys.exit(3)
    cache.put_many([(CacheKey(i, content_hash(blob(i))), blob(i)) for i in msg["put"]])
    print(json.dumps({"name": cache.name}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd == "exit":  # no close(): the interpreter's exit leaves
            break
        keys = [CacheKey(i, content_hash(blob(i))) for i in cmd]
        good = sum(g == blob(k.sample_id) for g, k in zip(cache.get_many(keys), keys))
        print(json.dumps(good), flush=True)
    """
)


def blob(i: int) -> bytes:
    return bytes((i * 7 + j) % 256 for j in range(100 + i))


def key(i: int) -> CacheKey:
    return CacheKey(i, content_hash(blob(i)))


class Rank:
    """A rank process driven over its stdin/stdout (one JSON value a line)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", RANK],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.proposal = self.recv()

    def send(self, value: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(value) + "\n")
        self.proc.stdin.flush()

    def recv(self) -> Any:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"rank exited with {self.proc.wait(TIMEOUT)}"
        return json.loads(line)

    def open(self, proposals: list[Any], rank: int, put: list[int], **sizes: int) -> Any:
        self.send({"proposals": proposals, "rank": rank, "put": put, **_sizes(sizes)})
        return self.recv()

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(TIMEOUT)


def _sizes(given: dict[str, int]) -> dict[str, int]:
    return {"capacity": CAPACITY, "n_slots": N_SLOTS, **given}


@pytest.fixture
def ranks() -> Iterator[list[Rank]]:
    """Rank processes a test starts; killed at teardown, and what they left reclaimed."""
    started: list[Rank] = []
    yield started
    for rank in started:
        if rank.proc.poll() is None:
            rank.kill()
    reclaim_stale_segments()  # the node caches of ranks killed above (all members dead)


def _start(ranks: list[Rank], n: int) -> list[Rank]:
    for _ in range(n):
        ranks.append(Rank())
    return ranks


def test_ranks_agree_on_one_creator_and_name_per_node_and_jobs_never_meet() -> None:
    a = ("node-a", 10, 1, 7, "hotset_10_1_7_aaaa")
    b = ("node-b", 11, 1, 7, "hotset_11_1_7_bbbb")
    c = ("node-a", 12, 1, 7, "hotset_12_1_7_cccc")
    shares = [NodeShare.agree([a, b, c], r) for r in range(3)]
    assert shares[0].name == shares[2].name == "hotset_10_1_7_aaaa"  # rank 0 creates
    assert shares[0].members == shares[2].members == ((10, 1, 7), (12, 1, 7))
    assert (shares[0].local_rank, shares[2].local_rank) == (0, 1)
    assert shares[1].name == "hotset_11_1_7_bbbb" and shares[1].local_world == 1
    other_job = NodeShare.agree([proposal(), proposal()], 0)
    again = NodeShare.agree([proposal(), proposal()], 0)
    assert other_job.name != again.name  # a fresh token per proposal
    assert node_key() == proposal()[0]
    with pytest.raises(HotsetError, match="rank 1 proposed"):
        NodeShare.agree([a, ("node-a", -1, 0, 0, "x")], 0)


def test_ranks_share_one_segment_and_the_last_one_out_unlinks(ranks: list[Rank]) -> None:
    """The creator and a rank put; each reads the other's bytes. The creator exits without
    closing: the segment stays for the rank still in it, which unlinks it when it leaves."""
    creator, other = _start(ranks, 2)
    proposals = [creator.proposal, other.proposal]
    name = creator.open(proposals, 0, list(range(10)))["name"]
    assert other.open(proposals, 1, list(range(10, 20)))["name"] == name
    other.send(list(range(20)))
    assert other.recv() == 20  # its own bytes and the creator's, each right
    creator.send(list(range(20)))
    assert creator.recv() == 20
    assert [f for f in os.listdir("/dev/shm") if f == name] == [name]  # one segment
    creator.send("exit")
    assert creator.proc.wait(TIMEOUT) == 0
    assert os.path.exists(f"/dev/shm/{name}")  # the other rank is still in it
    assert name not in [i.name for i in reclaim_stale_segments()]
    assert os.path.exists(f"/dev/shm/{name}")
    other.send(list(range(20)))
    assert other.recv() == 20
    other.send("exit")
    assert other.proc.wait(TIMEOUT) == 0
    assert not os.path.exists(f"/dev/shm/{name}")  # last one out


def test_a_killed_creator_leaves_the_segment_to_the_ranks_still_in_it(ranks: list[Rank]) -> None:
    """SIGKILL the rank that created it: the others read on, a worker attaches by name,
    no scan reclaims it, and the last rank out still unlinks it."""
    (creator,) = _start(ranks, 1)
    mine = proposal()
    proposals = [creator.proposal, list(mine)]
    name = creator.open(proposals, 0, list(range(10)))["name"]
    share = NodeShare.agree(proposals, 1)
    cache = share.open(CAPACITY, N_SLOTS)
    try:
        assert cache.is_member and cache.node and not cache.is_owner
        creator.kill()
        removed = [info.name for info in reclaim_stale_segments()]
        assert name not in removed
        info = segment_info(name)
        assert info is not None and info.state == "alive", info
        assert cache.get_many([key(i) for i in range(10)]) == [blob(i) for i in range(10)]
        worker = subprocess.run(
            [sys.executable, "-c", _WORKER.format(name=name)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        assert worker.returncode == 0, worker.stderr
        assert worker.stdout.strip() == "10"
        assert os.path.exists(f"/dev/shm/{name}")  # the worker's exit took nothing away
    finally:
        cache.close()
    assert not os.path.exists(f"/dev/shm/{name}")


#: a rank's DataLoader worker attaching by name (as a pickled cache does), then exiting
_WORKER = """
from hotset.cachestore import CacheKey, content_hash
from hotset.cachestore.shm import SharedMemoryCache
blob = lambda i: bytes((i * 7 + j) % 256 for j in range(100 + i))
cache = SharedMemoryCache(name={name!r}, create=False, node=True)
keys = [CacheKey(i, content_hash(blob(i))) for i in range(10)]
print(sum(g == blob(k.sample_id) for g, k in zip(cache.get_many(keys), keys)))
"""


def test_a_node_cache_whose_ranks_all_died_is_reclaimed(ranks: list[Rank]) -> None:
    creator, other = _start(ranks, 2)
    proposals = [creator.proposal, other.proposal]
    name = creator.open(proposals, 0, [1])["name"]
    other.open(proposals, 1, [2])
    creator.kill()
    assert name not in [i.name for i in reclaim_stale_segments()]  # one rank still runs
    other.kill()
    info = segment_info(name)
    assert info is not None and info.state == "dead", info
    assert name in [i.name for i in reclaim_stale_segments()]
    assert not os.path.exists(f"/dev/shm/{name}")


def test_a_rank_whose_creator_died_first_fails_clearly(ranks: list[Rank]) -> None:
    (creator,) = _start(ranks, 1)
    proposals = [creator.proposal, list(proposal())]
    creator.kill()  # before it created anything
    with pytest.raises(HotsetError, match="exited"):
        NodeShare.agree(proposals, 1).open(CAPACITY, N_SLOTS)


def test_ranks_that_give_different_budgets_fail_clearly(ranks: list[Rank]) -> None:
    creator, other = _start(ranks, 2)
    proposals = [creator.proposal, other.proposal]
    creator.open(proposals, 0, [1])
    answer = other.open(proposals, 1, [], capacity=CAPACITY + 1)
    assert "capacity_bytes=50000" in answer["error"]


def test_a_process_that_is_no_member_cannot_join(ranks: list[Rank]) -> None:
    creator, other = _start(ranks, 2)
    proposals = [creator.proposal, other.proposal]
    name = creator.open(proposals, 0, [1])["name"]
    members = tuple((int(p[1]), int(p[2]), int(p[3])) for p in proposals)
    stranger = NodeShare(name=name, members=members, local_rank=1)
    with pytest.raises(HotsetError, match="not among its members"):
        stranger.open(CAPACITY, N_SLOTS)
