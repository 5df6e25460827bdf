"""hotset: make a small memory cache worth having for deep-learning training.

The package is organised as one engine with two drivers: pure, deterministic
policies and samplers (``hotset.policies``, ``hotset.samplers``) are driven either
by the simulator (``hotset.sim``, virtual clock) or by the real loader
(``hotset.torch``; ``hotset.open_dataset`` and ``hotset.loader`` are its entry
points, imported on first use so ``import hotset`` does not import torch).
"""

from __future__ import annotations

from typing import Any

from hotset.errors import (
    HotsetError,
    HotsetRuntimeError,
    IntegrityError,
    StorageError,
    WorkerDied,
)

__version__ = "0.1.0"

__all__ = [
    "HotsetError",
    "HotsetRuntimeError",
    "IntegrityError",
    "StorageError",
    "WorkerDied",
    "__version__",
    "eval_loader",
    "from_dataset",
    "loader",
    "open_dataset",
]

_LAZY = {
    "open_dataset": "hotset.torch",
    "loader": "hotset.torch",
    "eval_loader": "hotset.torch",
    "from_dataset": "hotset.torch",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hotset' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
