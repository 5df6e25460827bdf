"""What one batch of the loader looks like: ``(x, y, ids, w)``, ``(x, y)`` or a dict.

Why. The loader's own batch is ``(x, y, ids, w)``: the ids key the per-sample
losses a learning system needs (``loader.update(ids, loss)``) and ``w`` holds
the loss weights of an importance-sampling system that asks for them. A
training loop written for a plain ``DataLoader`` unpacks two values, and code
that must not change its loop (a framework's, a library's) cannot unpack four.
``batch="xy"`` yields what that DataLoader yields; the ids of the batch stay
reachable as :attr:`~hotset.torch.loader.HotsetLoader.last_ids`. ``batch="dict"``
yields ``{"x", "y", "ids", "w"}``, which frameworks that move batches to a device
carry whole (Lightning's callback finds ``batch["ids"]``).

The shape is chosen once, when the loader is built, and changes nothing else: the
same samples in the same order, the same decisions, the same checkpoints.
"""

from __future__ import annotations

from typing import Any

from hotset.errors import HotsetError
from hotset.systems.base import System

__all__ = ["BATCH_MODES", "check_batch_mode", "check_batch_system", "shape_batch"]

#: ``tuple``: ``(x, y, ids, w)`` (the default); ``xy``: ``(x, y)``; ``dict``: keys x, y, ids, w
BATCH_MODES = ("tuple", "xy", "dict")


def check_batch_mode(value: object) -> str:
    """``value`` if it is one of :data:`BATCH_MODES`, else an error naming it and them."""
    if not isinstance(value, str) or value not in BATCH_MODES:
        raise HotsetError(
            f"batch must be one of {', '.join(map(repr, BATCH_MODES))} "
            f"((x, y, ids, w), (x, y) as a DataLoader gives, or a dict of x, y, ids, w), "
            f"got {value!r:.80}"
        )
    return value


def check_batch_system(mode: str, system: System) -> None:
    """``batch="xy"`` drops ``w``: refused for a system whose losses must be weighted.

    An importance-sampling system asked for unbiased weights (``shade[unbiased=true]``)
    draws samples unevenly and relies on the loop multiplying each loss by its ``w``;
    a loop that never sees ``w`` would train on a biased objective without a word.
    """
    if mode == "xy" and system.weighted:
        raise HotsetError(
            f"batch='xy' yields (x, y) without the loss weights w, but system "
            f"{system.name!r} weights each sample's loss (unbiased importance sampling): "
            "use batch='dict' or the default (x, y, ids, w) and train on (loss * w).mean()"
        )


def shape_batch(mode: str, x: Any, y: Any, ids: Any, w: Any) -> Any:
    """The batch as the loop receives it, in the loader's ``batch=`` shape."""
    if mode == "xy":
        return x, y
    if mode == "dict":
        return {"x": x, "y": y, "ids": ids, "w": w}
    return x, y, ids, w
