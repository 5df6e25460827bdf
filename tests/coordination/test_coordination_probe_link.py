"""The loader's link to the probe board hands its policy only what may count, on a real Redis.

On a namespace that is one data set's (``<key>@<identity>``) a record naming another
data set is no job's of it: the link skips and counts it, so it never reaches the
placement (nor the state). On a content-addressed namespace (``<key>@content``) other
data sets' records are competitors, and pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hotset.cachestore.redis_store import RedisCache
from hotset.coordination.probe_board import ProbeBoard
from hotset.coordination.probe_link import ProbeLink
from hotset.policies.quiver.placement import from_record


class _Policy:
    """What the link gives a policy before an epoch, kept."""

    def __init__(self) -> None:
        self.boards: list[list[Mapping[str, object]]] = []

    def apply_board(self, own: object, board: Sequence[Mapping[str, object]], **_: object) -> None:
        self.boards.append(list(board))


def _record(job: str, dataset: str) -> dict[str, Any]:
    return {"job": job, "dataset": dataset, "t_miss": 0.3, "t_hit": 0.1, "gpus": 1} | {
        "size_bytes": 1000,
        "chunk_bytes": 100,
    }


def _link(url: str, namespace: str) -> tuple[ProbeLink, _Policy, ProbeBoard]:
    board = ProbeBoard(RedisCache(url, namespace=namespace, capacity_bytes=1), check=from_record)
    policy = _Policy()
    link = ProbeLink(board, policy, job="me", dataset="d1", budget_bytes=500)  # type: ignore[arg-type]
    return link, policy, board


def test_another_data_sets_record_is_skipped_on_a_namespace_of_one(redis_url: str) -> None:
    link, policy, board = _link(redis_url, "sweep@d1")
    for job, dataset in (("a", "d1"), ("b", "d2"), ("me", "d1")):
        board.publish(_record(job, dataset))
    link.before_epoch(2)
    assert [r["job"] for r in policy.boards[-1]] == ["a"]  # not b's, not its own
    assert link.stats()["board_foreign"] == 1


def test_on_a_content_addressed_namespace_other_data_sets_compete(redis_url: str) -> None:
    link, policy, board = _link(redis_url, "sweep@content")
    for job, dataset in (("a", "d1"), ("b", "d2")):
        board.publish(_record(job, dataset))
    link.before_epoch(2)
    assert [r["job"] for r in policy.boards[-1]] == ["a", "b"]
    assert link.stats()["board_foreign"] == 0
