"""Cross-rank aggregation: two real gloo processes end with identical tables."""

from __future__ import annotations

import socket
from pathlib import Path

import numpy as np
import pytest
import torch.distributed as dist
import torch.multiprocessing as mp

from hotset.errors import HotsetError
from hotset.importance.aggregate import all_gather_arrays
from hotset.importance.scorers import LogRankScorer
from hotset.importance.table import ImportanceTable

N = 50
# rank r's steps: different ids and different lengths per rank (rank 1's last step is empty)
STEPS = {
    0: [([1, 2, 3, 4], [0.4, 0.1, 0.9, 0.3]), ([5, 1], [0.2, 0.8]), ([6], [0.5])],
    1: [([10, 11], [0.6, 0.7]), ([12, 13, 14, 10], [0.1, 0.2, 0.3, 0.4]), ([], [])],
}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _worker(rank: int, port: int, out: str) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        table = ImportanceTable(N)
        scorer = LogRankScorer()
        gathered = []
        for ids, losses in STEPS[rank]:
            all_ids, all_losses = all_gather_arrays(
                np.array(ids, dtype=np.int64), np.array(losses, dtype=np.float64)
            )
            gathered.append(all_ids)
            if len(all_ids):
                scores = scorer.score(all_ids, all_losses, table)
                table.update(all_ids, all_losses, epoch=0, scores=scores)
        snap = table.snapshot()
        np.savez(
            Path(out) / f"rank{rank}.npz",
            version=snap.version,
            scores=snap.scores,
            counts=snap.counts,
            losses=snap.losses,
            order=np.concatenate(gathered),
        )
    finally:
        dist.destroy_process_group()


def test_two_gloo_ranks_end_with_the_same_snapshot(tmp_path: Path) -> None:
    mp.spawn(_worker, args=(_free_port(), str(tmp_path)), nprocs=2, join=True)
    r0 = np.load(tmp_path / "rank0.npz")
    r1 = np.load(tmp_path / "rank1.npz")
    for key in ("version", "scores", "counts", "losses", "order"):
        assert np.array_equal(r0[key], r1[key], equal_nan=True), key
    assert int(r0["version"]) == 3
    # rank-major order: rank 0's pairs, then rank 1's, step by step
    expected = np.concatenate(
        [np.array(a + b, dtype=np.int64) for (a, _), (b, _) in zip(STEPS[0], STEPS[1], strict=True)]
    )
    assert r0["order"].tolist() == expected.tolist()
    counts = r0["counts"]
    for ids in (1, 2, 3, 4, 5, 6, 10, 11, 12, 13, 14):
        assert counts[ids] >= 1, ids
    assert counts[1] == 2 and counts[10] == 2
    assert r0["losses"][10] == 0.4 and r0["losses"][1] == 0.8  # the later step wins


def test_without_a_process_group_inputs_come_back() -> None:
    assert not dist.is_initialized()
    ids, losses = all_gather_arrays([3, 1], [0.5, 0.25])
    assert ids.tolist() == [3, 1] and losses.tolist() == [0.5, 0.25]
    assert ids.dtype == np.int64 and losses.dtype == np.float64


def test_mismatched_inputs() -> None:
    with pytest.raises(HotsetError, match="array 1"):
        all_gather_arrays(np.zeros(3), np.zeros(2))
    with pytest.raises(HotsetError):
        all_gather_arrays()
