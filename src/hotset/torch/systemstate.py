"""A System's part of a checkpoint, and the epoch's feedback as a state stores it.

Shared by the loader's checkpoint (:mod:`hotset.torch.checkpoint`) and its rehearsal of
a state on scratch parts (:mod:`hotset.torch.restorecheck`): both must read a state
the same way, or a state the rehearsal accepts could still fail when applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.engine.feedback import Feedback
from hotset.engine.state_ids import state_ids
from hotset.errors import HotsetError
from hotset.systems.base import System

__all__ = ["feedback_rows", "load_system_state", "predicted_ids", "system_state"]


def system_state(system: System) -> dict[str, Any]:
    """Everything of a System that changes while it runs (sampler/scorer are pure)."""
    try:
        policy = system.policy.state_dict()
    except NotImplementedError as exc:
        raise HotsetError(f"system {system.name!r}: {exc}; its loader cannot checkpoint") from None
    return {  # the table first: a policy's copy of its scores then packs as a reference
        "table": system.table.state_dict(),
        "policy": policy,
        "val_accuracy": list(system.val_accuracy),
        "train_loss": list(system.train_loss),
    }


def load_system_state(system: System, state: Mapping[str, Any]) -> None:
    """Restore :func:`system_state`; a policy holding more than its budget is refused."""
    for key in ("policy", "table", "val_accuracy", "train_loss"):
        if key not in state:
            raise HotsetError(f"loader state: system state lacks {key!r}")
    try:
        system.policy.load_state_dict(state["policy"])
    except NotImplementedError as exc:
        raise HotsetError(f"system {system.name!r}: {exc}") from None
    policy = system.policy
    if not policy.budget.fits(int(policy.used_bytes), int(policy.used_items)):
        raise HotsetError(
            f"loader state: the {policy.name} policy holds {policy.used_bytes} bytes "
            f"({policy.used_items} items), over this loader's cache budget of "
            f"{policy.budget.capacity_bytes} bytes: resume with the cache= of the run "
            "that saved it"
        )
    system.table.load_state_dict(state["table"])
    system.val_accuracy[:] = [float(v) for v in state["val_accuracy"]]
    system.train_loss[:] = [float(v) for v in state["train_loss"]]


def predicted_ids(
    order: npt.NDArray[np.int64],
    batch_size: int,
    tags: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """The ids each ``update`` call is expected to report: its batch's, in order.

    Call ``i`` (tagged with the batch the loop held, ``lengths[i]`` ids) is
    expected to report ``order[tag * batch_size + j]`` for its ``j``-th id;
    past the end of the order, 0.
    """
    total = int(lengths.sum())
    start = tags * batch_size - (np.cumsum(lengths) - lengths)
    at = np.repeat(start, lengths) + np.arange(total, dtype=np.int64)
    inside = (at >= 0) & (at < len(order))
    out = np.zeros(total, dtype=np.int64)
    out[inside] = order[at[inside]]
    return out


def feedback_rows(
    fb: Mapping[str, Any], order: npt.NDArray[np.int64], batch_size: int, n: int
) -> tuple[list[Feedback], list[int]]:
    """The epoch's feedback calls and where each was applied, from either form
    (version 1: one (ids, losses) pair per call; 2: columns, ids relative to ``order``)."""
    applied_at = [int(a) for a in fb["applied_at"]]
    if "ids_minus_order" not in fb:
        rows = zip(fb["tags"], fb["ids"], fb["losses"], strict=True)
        return [
            Feedback(
                int(t),
                state_ids(i, n, "loader state: feedback ids"),
                np.asarray(v, dtype=np.float64),
            )
            for t, i, v in rows
        ], applied_at
    tags = np.asarray(fb["tags"], dtype=np.int64)
    if not len(tags):
        return [], applied_at
    lengths = np.asarray(fb["lengths"], dtype=np.int64)
    ids = np.asarray(fb["ids_minus_order"], dtype=np.int64) + predicted_ids(
        order, batch_size, tags, lengths
    )
    if len(ids) and (int(ids.min()) < 0 or int(ids.max()) >= n):
        raise HotsetError(
            f"loader state: feedback names a sample id outside 0..{n - 1}; it does not "
            "belong to this epoch's order"
        )
    losses = np.asarray(fb["losses"], dtype=np.float64)
    cuts = np.cumsum(lengths)[:-1]
    return [
        Feedback(int(t), i, v)
        for t, i, v in zip(tags.tolist(), np.split(ids, cuts), np.split(losses, cuts), strict=True)
    ], applied_at
