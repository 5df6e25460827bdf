"""The loader's state in a Lightning checkpoint: every rank's, in types ``torch.load`` accepts.

Why not leave it to Lightning: Lightning saves the state of every train loader
that has ``state_dict``/``load_state_dict`` itself (the fit loop's
``combined_loader`` entry), but only rank 0 writes the checkpoint, so under DDP
every rank would be restored with rank 0's state (a loader state names its
rank, and another rank's is refused). Here each rank's state is gathered into
the checkpoint (:func:`gather`) and Lightning's copy is replaced by a marker
(:func:`mark_loop_entry`). On resume the callback restores each rank's own
state itself: Lightning restores loaders only from a checkpoint taken
mid-epoch, and an epoch-end one holds what the system learned as well
(:func:`restore_loop_entry` keeps Lightning from restoring the marker).

Why an encoding: ``torch.load`` defaults to ``weights_only=True``, which refuses
numpy objects. :func:`to_plain` turns numpy arrays into tensors (tagged, so
:func:`from_plain` gives arrays back) and numpy scalars into Python numbers; a
state that already holds only plain types and tensors passes through as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from hotset.errors import HotsetError

__all__ = [
    "MARKER",
    "from_plain",
    "gather",
    "mark_loop_entry",
    "restore_loop_entry",
    "to_plain",
]

#: the key of a numpy array turned into a tensor
_ARRAY = "__hotset_ndarray__"
#: what stands in Lightning's own copy of the loader's state (see the module docstring)
MARKER = {"hotset": "the loader state of each rank is under this checkpoint's 'hotset' key"}
#: numpy kinds a tensor holds exactly: bool, signed and unsigned ints, floats
_TENSOR_KINDS = "biuf"


def to_plain(value: Any) -> Any:
    """``value`` with numpy arrays as tagged tensors and numpy scalars as Python numbers."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in _TENSOR_KINDS:
            raise HotsetError(
                f"loader state: a numpy array of dtype {value.dtype} has no tensor form; "
                "it cannot go into a checkpoint torch.load accepts"
            )
        return {_ARRAY: torch.from_numpy(np.ascontiguousarray(value).copy())}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(to_plain(v) for v in value)
    return value


def from_plain(value: Any) -> Any:
    """The inverse of :func:`to_plain`: tagged tensors back to numpy arrays."""
    if isinstance(value, Mapping):
        if set(value) == {_ARRAY} and isinstance(value[_ARRAY], torch.Tensor):
            return value[_ARRAY].numpy()
        return {k: from_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(from_plain(v) for v in value)
    return value


def gather(state: Any, world_size: int) -> list[Any]:
    """Every rank's ``state``, in rank order (a collective: every rank calls it)."""
    if world_size == 1:
        return [state]
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        raise HotsetError(
            f"the trainer runs {world_size} processes but no torch.distributed process "
            "group is initialized: the loader states of the other ranks cannot be saved"
        )
    states: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(states, state)
    return states


def _loop_entries(checkpoint: Mapping[str, Any]) -> list[Any] | None:
    """The fit loop's list of train loader states in ``checkpoint``, if it has one."""
    loop = checkpoint.get("loops", {}).get("fit_loop", {})
    entries = loop.get("state_dict", {}).get("combined_loader")
    return entries if isinstance(entries, list) else None


def mark_loop_entry(checkpoint: dict[str, Any], position: int | None) -> None:
    """Replace Lightning's copy of the loader's state (the ``position``-th stateful
    train loader) by :data:`MARKER`; nothing when Lightning saved none."""
    entries = _loop_entries(checkpoint)
    if entries is not None and position is not None and position < len(entries):
        entries[position] = dict(MARKER)


def restore_loop_entry(checkpoint: dict[str, Any], state: Any) -> None:
    """Keep Lightning from restoring the marker :func:`mark_loop_entry` left.

    The callback restores the loader itself (Lightning does only for a checkpoint
    taken mid-epoch). A list holding nothing but the marker is emptied, so
    Lightning restores nothing; beside other loaders' states, the marker becomes
    this rank's ``state`` (Lightning counts the entries), and the loader is then
    restored twice with the same state, which is harmless.
    """
    entries = _loop_entries(checkpoint)
    if entries is None:
        return
    marked = [isinstance(e, Mapping) and dict(e) == MARKER for e in entries]
    if all(marked):
        entries.clear()
        return
    for i, is_marker in enumerate(marked):
        if is_marker:
            entries[i] = state
