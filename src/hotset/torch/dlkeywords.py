"""The DataLoader's keywords that ``hotset.loader`` has no option for, each with its answer.

Why. A script ported from ``DataLoader(data, batch_size=64, shuffle=True, ...)``
passes keywords that make no sense where a hotset System decides the order:
``shuffle``, ``sampler``, ``batch_sampler``, ``generator``. As unknown keywords
they were a bare ``TypeError: unexpected keyword argument`` that said neither
why nor what to write instead. Here each has an answer:

* a value that asks for what the loader always does is accepted and does
  nothing: ``shuffle=True`` (every system draws a fresh random order each epoch)
  and ``in_order=True`` (batches always come in the order they were planned);
* any other value is a :class:`~hotset.errors.HotsetError` saying what hotset
  does instead and what to write.

The keywords the DataLoader and the loader share (``batch_size``, ``num_workers``,
``collate_fn``, ``pin_memory``, ``drop_last``, ``timeout``, ``worker_init_fn``,
``multiprocessing_context``, ``prefetch_factor``, ``persistent_workers``) are the
loader's own options (:class:`~hotset.torch.options.LoaderOptions`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from hotset.errors import HotsetError

__all__ = ["DATALOADER_ONLY", "describe_dataloader_keywords", "take_dataloader_keywords"]

_ORDER = (
    "the system decides each epoch's order (system=; `hotset systems` lists them): every "
    "system draws a fresh random order each epoch, seeded by seed= and the epoch number "
    "(loader.set_epoch); the learning ones (shade, icache, impact) draw it from per-sample "
    "losses"
)

#: keyword -> (the value accepted as a no-op, or a sentinel for none; what hotset does instead)
DATALOADER_ONLY: dict[str, tuple[object, str]] = {
    "shuffle": (
        True,
        f"{_ORDER}; shuffle=True is what it does already and is accepted. There is no "
        "unshuffled training order: for a fixed order (evaluation) use "
        "hotset.eval_loader(data, batch_size=...), which reads in index order without a cache",
    ),
    "sampler": (
        ...,
        f"{_ORDER}, so the loader takes no sampler; drop sampler=. A DistributedSampler is not "
        "needed: under torch.distributed each rank reads its own share of the system's order "
        "(or pass rank= and world_size=), and loader.set_epoch(epoch) replaces "
        "sampler.set_epoch(epoch)",
    ),
    "batch_sampler": (
        ...,
        f"{_ORDER}, and the loader cuts it into batches of batch_size= (drop_last= leaves out "
        "the last partial one); drop batch_sampler= and give batch_size=",
    ),
    "generator": (
        ...,
        f"{_ORDER}; drop generator= and pass seed=<int> (the same seed, the same orders and "
        "cache decisions)",
    ),
    "in_order": (
        True,
        "batches always come in the order the system planned them (the cache's writes and the "
        "feedback to update() are sequenced by it); in_order=True is accepted, False is not "
        "available",
    ),
    "pin_memory_device": (
        ...,
        "the loader pins for the current accelerator with pin_memory=True, as the DataLoader "
        "does when pin_memory_device is left out; drop pin_memory_device=",
    ),
}


def take_dataloader_keywords(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` without the DataLoader keywords accepted as no-ops; the others refused.

    A refused keyword is a :class:`~hotset.errors.HotsetError` naming it, its value
    and what the loader does instead (:data:`DATALOADER_ONLY`).
    """
    kept: dict[str, Any] = {}
    for name, value in options.items():
        if name not in DATALOADER_ONLY:
            kept[name] = value
            continue
        accepted, instead = DATALOADER_ONLY[name]
        if isinstance(value, bool | np.bool_) and bool(value) is accepted:
            continue  # asks for what the loader always does
        raise HotsetError(f"hotset.loader({name}={value!r:.60}): {instead}")
    return kept


def describe_dataloader_keywords(indent: str = "    ") -> str:
    """One line per keyword for the loader's docstring: what is accepted, else refused."""
    lines = []
    for name, (accepted, _) in DATALOADER_ONLY.items():
        what = (
            "refused" if accepted is ... else f"``{accepted!r}`` accepted (a no-op), else refused"
        )
        lines.append(f"{indent}``{name}``: {what}")
    return "\n".join(lines)
