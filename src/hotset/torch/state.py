"""The loader's checkpoint, checked whole before anything of it is restored.

A checkpoint comes back from disk, possibly from another version of a script,
another cache size or another run entirely. A field of the wrong type used to
surface deep inside the restore as an ``AttributeError``, a ``KeyError`` or a
numpy broadcast error, after half the loader had been overwritten; an
out-of-range ``yielded`` silently dropped the rest of the epoch, and a bogus
``status`` was taken as it came. Here every top-level field is checked against
what :meth:`~hotset.torch.loader.HotsetLoader.state_dict` writes, and each
failure is a :class:`~hotset.errors.HotsetError` naming the field, the value
and what was expected. What lies deeper (a policy's own state) is checked by
the policy, on a scratch System first (:mod:`hotset.torch.restorecheck`), so a
state refused there changes nothing in the loader.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from hotset.errors import HotsetError
from hotset.torch.statecodec import unpack

#: the state versions read: 1 held numpy arrays (hotset before states were packed into
#: plain values and tensors), 2 is what :mod:`hotset.torch.checkpoint` writes now
VERSIONS = (1, 2)
#: the states of an epoch a checkpoint can be taken in
STATUSES = ("idle", "running", "finished")
#: the largest epoch number: orders are seeded with it in 64-bit arithmetic, and no
#: real run comes near (a checkpoint or set_epoch beyond it is an error, not an overflow)
MAX_EPOCH = 2**31 - 1

#: every key state_dict() writes; "cache_bytes" is absent from states saved before it
REQUIRED = (
    "version",
    "system",
    "n",
    "batch_size",
    "seed",
    "rank",
    "world_size",
    "status",
    "epoch",
    "next_epoch",
    "epoch_set",
    "yielded",
    "system_state",
    "feedback",
    "outstanding",
    "pending_val",
    "history",
    "coverage",
    "current",
)
_FEEDBACK = ("tags", "ids", "losses", "applied_at")  # version 1: one (ids, losses) per call
_COLUMNS = ("tags", "lengths", "ids_minus_order", "losses", "applied_at")  # version 2


def _show(value: object) -> str:
    return f"{value!r:.80}"


def check_int(field: str, value: object, low: int, high: int) -> int:
    """An int (not a bool) in ``[low, high]``, or an error naming ``field``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | np.integer)
        or not (low <= value <= high)
    ):
        raise HotsetError(
            f"loader state: {field} must be an integer in [{low}, {high}], got {_show(value)}"
        )
    return int(value)


def check_epoch(name: str, value: object) -> int:
    """An epoch number for set_epoch or a checkpoint: an int in ``[0, MAX_EPOCH]``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | np.integer)
        or not (0 <= value <= MAX_EPOCH)
    ):
        raise HotsetError(
            f"{name} must be an integer in [0, 2**31 - 1] (epochs seed the orders), "
            f"got {_show(value)}"
        )
    return int(value)


def _check_type(field: str, value: object, kind: type | tuple[type, ...], what: str) -> None:
    if not isinstance(value, kind):
        raise HotsetError(
            f"loader state: {field} must be {what}, got {type(value).__name__} {_show(value)}"
        )


def _check_feedback(feedback: object) -> None:
    _check_type("feedback", feedback, Mapping, "a dict (the epoch's losses given so far)")
    assert isinstance(feedback, Mapping)
    if "ids_minus_order" in feedback:
        _check_columns(feedback)
        return
    lengths = set()
    for key in _FEEDBACK:
        if key not in feedback:
            raise HotsetError(f"loader state: feedback lacks {key!r}")
        _check_type(f"feedback[{key!r}]", feedback[key], (list, tuple, np.ndarray), "a list")
        lengths.add(len(feedback[key]))
    if len(lengths) != 1:
        raise HotsetError(
            "loader state: feedback's tags, ids, losses and applied_at differ in length"
        )
    for losses in feedback["losses"]:
        _check_losses(losses)


def _check_losses(losses: object) -> None:
    """Losses as ``update`` takes them: finite and >= 0 (a state holding others was not
    written by a loader, and a learning system fails on them only at the epoch's end)."""
    try:
        arr = np.asarray(losses, dtype=np.float64)
    except (TypeError, ValueError):
        raise HotsetError(
            f"loader state: feedback's losses are not numbers: {_show(losses)}"
        ) from None
    if arr.size and not (np.isfinite(arr).all() and arr.min() >= 0):
        raise HotsetError("loader state: feedback holds a loss that is negative or not finite")


def _check_columns(feedback: Mapping[str, Any]) -> None:
    """Version 2's feedback: a row per call (tags, lengths, applied_at), a value per id."""
    cols = {}
    for key in _COLUMNS:
        if key not in feedback:
            raise HotsetError(f"loader state: feedback lacks {key!r}")
        arr = np.asarray(feedback[key]) if isinstance(feedback[key], list | np.ndarray) else None
        if arr is None or arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iuf"):
            raise HotsetError(
                f"loader state: feedback[{key!r}] must be a 1-D array of numbers, got "
                f"{_show(feedback[key])}"
            )
        if key != "losses" and arr.size and arr.dtype.kind == "f":
            raise HotsetError(f"loader state: feedback[{key!r}] must hold integers")
        cols[key] = arr
    calls = {len(cols[k]) for k in ("tags", "lengths", "applied_at")}
    if len(calls) != 1:
        raise HotsetError("loader state: feedback's tags, lengths and applied_at differ in length")
    if len(cols["tags"]) and (cols["lengths"].min() < 0 or cols["tags"].min() < 0):
        raise HotsetError("loader state: feedback holds a negative tag or length")
    if len(cols["tags"]) and cols["tags"].max() > MAX_EPOCH:
        raise HotsetError("loader state: feedback holds a tag past any epoch's batches")
    _check_losses(cols["losses"])
    total = int(cols["lengths"].sum()) if len(cols["lengths"]) else 0
    if not len(cols["ids_minus_order"]) == len(cols["losses"]) == total:
        raise HotsetError(
            f"loader state: feedback's lengths add up to {total}, but it holds "
            f"{len(cols['ids_minus_order'])} ids and {len(cols['losses'])} losses"
        )


def _check_outstanding(outstanding: object, n: int) -> None:
    try:
        arr = np.asarray(outstanding)
    except (TypeError, ValueError) as exc:
        raise HotsetError(f"loader state: outstanding is not an array: {exc}") from None
    if arr.shape != (n,) or arr.dtype.kind not in "iu":
        raise HotsetError(
            f"loader state: outstanding must hold {n} integer counts (one per sample), "
            f"got shape {arr.shape} of {arr.dtype}"
        )
    if n and (int(arr.min()) < 0 or int(arr.max()) > np.iinfo(np.int32).max):
        raise HotsetError("loader state: outstanding holds a count out of range")


def check_loader_state(state: object, mine: Mapping[str, Any]) -> Mapping[str, Any]:
    """``state`` checked field by field; ``mine`` holds this loader's identity fields.

    ``mine`` maps version, system, n, batch_size, seed, rank, world_size and
    cache_bytes to this loader's values; a state differing in one of them cannot
    be resumed here (the message names both sides).
    """
    if not isinstance(state, Mapping):
        raise HotsetError(
            f"loader state must be the dict loader.state_dict() returned, got "
            f"{type(state).__name__} {_show(state)}"
        )
    missing = [key for key in REQUIRED if key not in state]
    if missing:
        raise HotsetError(
            f"loader state lacks {', '.join(map(repr, missing))}: pass the dict "
            "loader.state_dict() returned, as it was saved"
        )
    _check_version(state["version"])
    _check_identity(state, mine)
    status = state["status"]
    # a str first: ``in`` compares with ==, which an array answers elementwise (and an
    # empty one cannot answer at all)
    if not isinstance(status, str) or status not in STATUSES:
        raise HotsetError(
            f"loader state: status must be one of {', '.join(STATUSES)}, got {_show(status)}"
        )
    check_int("epoch", state["epoch"], -1, MAX_EPOCH)  # -1: no epoch begun yet
    check_epoch("loader state: next_epoch", state["next_epoch"])
    _check_type("epoch_set", state["epoch_set"], (bool, np.bool_), "True or False")
    check_int("yielded", state["yielded"], 0, MAX_EPOCH)
    if "updates" in state:
        check_int("updates", state["updates"], 0, 2**62)
    _check_type("system_state", state["system_state"], Mapping, "a dict")
    _check_type("history", state["history"], (list, tuple), "a list")
    _check_type("coverage", state["coverage"], Mapping, "a dict")
    if state["current"] is not None:
        _check_type("current", state["current"], Mapping, "a dict or None")
    val = state["pending_val"]
    if val is not None and (
        isinstance(val, bool)
        or not isinstance(val, int | float | np.number)
        or not math.isfinite(float(val))
    ):
        raise HotsetError(
            f"loader state: pending_val must be a finite number or None, got {_show(val)}"
        )
    if status != "idle":
        _check_feedback(state["feedback"])
        _check_outstanding(state["outstanding"], int(mine["n"]))
    return state


def readable_state(state: object) -> Mapping[str, Any]:
    """``state`` with its packed arrays unpacked (:mod:`hotset.torch.statecodec`), once it
    is known to be a state of a version this hotset reads; errors name what is wrong."""
    if not isinstance(state, Mapping):
        raise HotsetError(
            f"loader state must be the dict loader.state_dict() returned, got "
            f"{type(state).__name__} {_show(state)}"
        )
    if "version" not in state:
        raise HotsetError(
            "loader state lacks 'version': pass the dict loader.state_dict() returned, "
            "as it was saved"
        )
    _check_version(state["version"])
    unpacked: Mapping[str, Any] = unpack(dict(state))
    return unpacked


def _check_version(version: object) -> None:
    if not any(_equal(version, v) for v in VERSIONS):
        raise HotsetError(
            f"loader state: version {_show(version)} is not supported: this hotset reads "
            f"versions {' and '.join(map(str, VERSIONS))} (a state saved by a newer hotset "
            "needs that hotset to resume)"
        )


def _equal(saved: object, mine: object) -> bool:
    """``saved == mine`` for plain ints, strings and None (an array compares to nothing)."""
    if mine is None or isinstance(mine, str):
        return type(saved) is type(mine) and saved == mine
    return (
        isinstance(saved, int | np.integer) and not isinstance(saved, bool) and int(saved) == mine
    )


def _check_identity(state: Mapping[str, Any], mine: Mapping[str, Any]) -> None:
    for key in ("system", "n", "batch_size", "seed"):
        if not _equal(state[key], mine[key]):
            raise HotsetError(
                f"loader state: {key}={_show(state[key])} does not match this loader's "
                f"{mine[key]!r}"
            )
    saved = (state["rank"], state["world_size"])
    if not (_equal(saved[0], mine["rank"]) and _equal(saved[1], mine["world_size"])):
        # Not elastic: a rank's state holds its shard's position, its own cache's
        # policy and feedback not yet merged; re-sharding them is not supported.
        raise HotsetError(
            f"loader state: saved by rank {saved[0]!r} of {saved[1]!r}, loaded by rank "
            f"{mine['rank']} of {mine['world_size']}; resume with the same world size, each "
            "rank loading its own state (a different world size is not supported: "
            "start a new run from the saved model weights instead)"
        )
    saved_budget = state.get("cache_bytes")
    if saved_budget is not None and not _equal(saved_budget, mine["cache_bytes"]):
        # The restored policy holds what fit the saved budget; in a smaller one its
        # next put would be refused mid-epoch, in another its decisions differ.
        raise HotsetError(
            f"loader state: saved with a cache budget of {_show(saved_budget)} bytes, "
            f"loaded by a loader planning {mine['cache_bytes']!r}: resume with the same "
            "cache= (and cache_bytes=) as the run that saved it"
        )
