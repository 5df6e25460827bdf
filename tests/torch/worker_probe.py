"""What a DataLoader worker is and draws, as a batch's ``x`` (no pytest here).

``probe_collate`` is a loader's ``collate_inputs``: it runs in the worker that
fetched the batch, so ``x`` tells the test which process made the batch, the
seed torch gave that process, and one draw of each generator a transform would
use; the samples' bytes ride along, to be checked against the files.
``seed_numpy_from_torch`` is the ``worker_init_fn`` many scripts use (numpy
seeded from the worker's torch seed). Importable by workers a fork server or
spawn starts: module-level functions, no closures.
"""

from __future__ import annotations

import os
import random
from typing import Any

import numpy as np
import torch


def probe_collate(samples: list[bytes]) -> dict[str, Any]:
    return {
        "pid": os.getpid(),
        "seed": torch.initial_seed(),
        "torch": float(torch.rand(())),
        "random": random.random(),
        "numpy": float(np.random.rand()),
        "bytes": list(samples),
    }


def seed_numpy_from_torch(worker_id: int) -> None:
    np.random.seed((torch.initial_seed() + 7 * worker_id) % 2**32)


def eof_collate(samples: list[bytes]) -> Any:
    """A ``collate_inputs`` whose own code fails with EOFError (a truncated record, say)."""
    raise EOFError("truncated record")
