"""One embedded cache per node: the local ranks of a job share one segment and one budget.

Real jobs: ranks under torch.distributed.run (gloo, CPU) on this machine, each a
hotset loader with the embedded cache, 0 and 2 DataLoader workers. What each
test asserts of ``/dev/shm`` (rank 0 adds up the distinct segments the ranks'
caches live in, tests/torch/rank_node_job.py):

* size: at most one node's cache, :func:`node_bound` (the budget, its
  fragmentation slack -- reserved, paid for only once touched --, the index and
  a member entry per rank); a segment per rank is ``local ranks`` times that;
* pages held: at most that size rounded up to whole pages;
* payload: at most the budget.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hotset.cachestore.shm_layout import (
    DEFAULT_ARENA_SLACK,
    arena_base,
    free_cap,
    members_bytes,
)
from process_support import run_torchrun

HERE = Path(__file__).resolve().parent
N = 200  # samples in the dataset_dir fixture
PAGE = os.sysconf("SC_PAGE_SIZE")


def node_bound(capacity: int, n_slots: int, local_ranks: int) -> int:
    """The bytes of one node's cache: arena (budget + slack), index, 8-byte alignment,
    member table."""
    arena = capacity + int(capacity * DEFAULT_ARENA_SLACK)
    return arena_base(n_slots, free_cap(n_slots)) + arena + 8 + members_bytes(local_ranks)


def assert_within_node_budget(shm: dict[str, Any], local_ranks: int) -> None:
    bound = node_bound(shm["capacity"], N, local_ranks)
    assert shm["size_bytes"] <= bound, (shm, bound)
    assert shm["resident_bytes"] <= -(-bound // PAGE) * PAGE, (shm, bound)
    assert shm["payload_bytes"] <= shm["capacity"], shm


def _torchrun(world: int, logs: Path, *args: str) -> None:
    """``world`` ranks of rank_node_job.py, each logging to a file of its own under ``logs``."""
    run_torchrun([str(HERE / "rank_node_job.py"), *args], nproc=world, logs=logs, timeout_s=150)


@pytest.mark.parametrize("world", [2, 4])
def test_local_ranks_share_one_cache_within_the_node_budget(
    dataset_dir: Path, tmp_path: Path, world: int
) -> None:
    """2 and 4 ranks, each with 0 and 2 workers, MinIO and LRU: /dev/shm holds one node's
    cache, every sample is trained once per epoch across the ranks with its own bytes, the
    ranks find each other's entries, and the last rank out unlinks the segment."""
    _torchrun(world, tmp_path / "logs", "run", str(dataset_dir), str(tmp_path), "2")
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(world)]
    for key, first in ranks[0].items():
        for shm in first["shm"]:
            assert len(shm["segments"]) == 1, key
            assert_within_node_budget(shm, world)
        for epoch in range(2):
            union = sorted(i for r in ranks for i in r[key]["served"][epoch])
            assert union == list(range(N)), key  # exactly once across the ranks
        assert all(r[key]["bad"] == 0 for r in ranks), key  # byte-exact
        rows = [row for r in ranks for row in r[key]["rows"]]
        assert sum(row["refused_puts"] for row in rows) == 0, key  # no rank crowds another
        assert first["left"] == [], key  # the last one out unlinked it
        if key.startswith("minio"):
            assert sum(row["exact_hits"] for row in rows) > 0, key
            assert sum(row["pool_hits"] for row in rows) > 0, key  # another rank's entries


def test_a_job_on_one_node_cache_resumes_mid_epoch_exactly(
    dataset_dir: Path, tmp_path: Path
) -> None:
    """Each rank saves mid-epoch; a new job of the same size finishes with the same batches."""
    for modes in ("full,first", "second"):  # the second job is a new one: a new cache
        _torchrun(2, tmp_path / "logs", modes, str(dataset_dir), str(tmp_path))
    for rank in range(2):
        full, first, second = (
            json.loads((tmp_path / f"{mode}{rank}.json").read_text())
            for mode in ("full", "first", "second")
        )
        assert first["served"]["0"] == full["served"]["0"]
        assert first["served"]["1"] + second["served"]["1"] == full["served"]["1"]
        assert second["served"]["2"] == full["served"]["2"]
        for run in (full, first, second):
            assert run["bad"] == 0
            assert_within_node_budget(run["shm"], 2)


@pytest.fixture
def ranks_started() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Rank processes a test starts; any still running at teardown are killed."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def test_a_rank_killed_mid_write_leaves_the_others_reading_the_right_bytes(
    dataset_dir: Path, tmp_path: Path, ranks_started: list[subprocess.Popen[bytes]]
) -> None:
    """3 ranks with 2 workers each; rank 0, which created the node's cache, is SIGKILLed
    inside a put. The other two finish their epochs with every byte right (their next
    epoch's workers attach after the creator died), and the last of them unlinks it."""
    import torch.distributed as dist

    world = 3
    store = dist.TCPStore("127.0.0.1", 0, world, True, wait_for_workers=False)
    for rank in range(world):
        with open(tmp_path / f"err{rank}", "wb") as err:
            ranks_started.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        str(HERE / "rank_node_kill_job.py"),
                        *(str(a) for a in (dataset_dir, tmp_path, store.port, rank, world)),
                        "0",  # the victim: the rank that created the node's cache
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    start_new_session=True,
                )
            )
    deadline = time.monotonic() + 120
    codes = [p.wait(max(1.0, deadline - time.monotonic())) for p in ranks_started]
    errors = [(tmp_path / f"err{r}").read_text()[-2000:] for r in range(world)]
    assert codes == [-signal.SIGKILL, 0, 0], errors
    survivors = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (1, 2)]
    assert_within_node_budget(survivors[0]["shm"], world)
    for result in survivors:
        assert result["bad"] == 0  # never another sample's bytes, never torn ones
        for epoch in result["served"]:
            assert len(epoch) == len(set(epoch)) == -(-N // world)  # the whole shard, once
    assert not os.path.exists(f"/dev/shm/{survivors[0]['segment']}")  # last one out


def test_cache_scope_is_checked_by_name(dataset_dir: Path) -> None:
    import hotset
    from hotset.errors import HotsetError

    data = hotset.open_dataset(dataset_dir, decode="bytes")
    with pytest.raises(HotsetError, match=r"cache_scope must be 'node'.*got 'nodes'"):
        hotset.loader(data, cache_scope="nodes")
    with hotset.loader(data, cache_scope="rank", batch_size=8) as loader:  # one rank: its own
        assert sum(len(ids) for _, _, ids, _ in loader) == N


def test_a_share_too_small_for_a_batch_names_the_node_budget_that_would_do() -> None:
    import numpy as np

    from hotset.errors import HotsetError
    from hotset.torch.checks import check_budget

    sizes = np.full(N, 268)
    with pytest.raises(HotsetError, match=r"share of the node's cache, 4020 bytes .*1/4.*17152"):
        check_budget(4020, sizes, 16, shares=4)
    check_budget(4288, sizes, 16, shares=4)  # a batch of 16 fits a share of 4288
