"""Kept workers are seeded each epoch as fresh ones would be.

Why. DataLoader seeds a worker when it starts: ``base_seed + worker_id`` for
``random`` and ``torch``, a mix of the two for ``numpy``, ``base_seed`` being
one draw from the main process's generator at ``iter()``; then it runs the
``worker_init_fn``. Workers started afresh every epoch are thus seeded every
epoch, from the main process's generator: a random transform draws anew each
epoch, and a script that restores its generator at an epoch's start replays the
epoch's augmentations. Workers kept across epochs (``persistent_workers``) are
seeded once, and ``iter()`` draws nothing from the main generator after the
first: the main process's own draws (dropout, a model's init) then differ from
those of a run whose workers were not kept.

What. Where the loader keeps workers by its own choice (``persistent_workers``
left out; :func:`hotset.torch.forksafe.keeps_workers`), every ``iter()`` after
the first draws the base seed from the DataLoader's generator as DataLoader
does, and the epoch's plans carry it (``BatchPlan.worker_seed``, with the
iteration's number so that two equal draws still reseed). A worker seeds
``random``, ``torch`` and ``numpy`` from it as DataLoader does, then runs the
user's ``worker_init_fn``, before its first plan of that iteration. Plans are
handed to a worker in order and the previous iteration's are drained before the
next's are handed out, so the reseed lands exactly between two epochs. With
``persistent_workers=True`` asked, DataLoader's own semantics are kept: seeded
once, ``worker_init_fn`` once. ``get_worker_info().seed`` keeps the value of the
worker's start either way (DataLoader's WorkerInfo cannot be changed).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["Reseed", "draw_base_seed", "numpy_seed"]


def draw_base_seed(generator: Any) -> int:
    """One draw of a base seed from ``generator`` (None: torch's default), as ``iter()``
    of a DataLoader draws it for the workers it starts."""
    import torch

    return int(torch.empty((), dtype=torch.int64).random_(generator=generator).item())


def numpy_seed(base_seed: int, worker_id: int) -> Any:
    """The ``numpy.random`` seed DataLoader gives worker ``worker_id`` for ``base_seed``.

    DataLoader derives it with a private function (a mix of the two, so that
    numpy's state does not collide with ``random``'s); where a later torch lacks
    it, the sum ``random`` and ``torch`` get is used, cut to numpy's 32 bits.
    """
    try:
        from torch.utils.data._utils.worker import _generate_state
    except ImportError:  # pragma: no cover - depends on the torch release
        return (base_seed + worker_id) % 2**32
    return _generate_state(base_seed, worker_id)


class Reseed:
    """Worker side: seed this worker from a plan's ``worker_seed`` once per iteration."""

    def __init__(self, user_init: Callable[[int], None] | None) -> None:
        #: the user's worker_init_fn, run again after each reseed, as at a fresh start
        self.user_init = user_init
        #: the (iteration, base seed) this process was last seeded from
        self._done: tuple[int, int] | None = None

    def __call__(self, worker_seed: tuple[int, int] | None) -> None:
        """Seed now if ``worker_seed`` names an iteration not seeded yet (in a worker only)."""
        if worker_seed is None or worker_seed == self._done:
            return
        from torch.utils.data import get_worker_info

        info = get_worker_info()
        if info is None:  # the main process (num_workers=0): nothing was started
            return
        self._done = worker_seed
        import torch

        base = worker_seed[1]
        seed = base + info.id
        random.seed(seed)
        torch.manual_seed(seed)
        np.random.seed(numpy_seed(base, info.id))
        if self.user_init is not None:
            self.user_init(info.id)
