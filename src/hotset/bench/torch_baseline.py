"""The PyTorch row every benchmark compares with: a DataLoader as a careful user tunes it.

Why tuned: a plain ``DataLoader`` keeps one storage request in flight per worker
(each worker fetches its batch's samples one ``__getitem__`` after another). On a
store that allows more requests in flight than there are workers, half of a
"x torch" figure would then be the baseline's handicap, not caching. A careful
PyTorch user fixes that without hotset: the Dataset gets a ``__getitems__``
(DataLoader passes it a whole batch's indices) that reads the batch's samples on a
pool of threads. :func:`tuned` sizes that pool so the job keeps at least as many
requests in flight as the store model allows, and never fewer threads per worker
than hotset's own loader uses (``io_threads``): both sides get the same I/O
parallelism, the same workers, batch size, decode and pinning.

The untuned DataLoader (one read per worker, as PyTorch ships) is still
available as :data:`UNTUNED` rows, always labelled so (``torch-untuned``).
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from hotset.errors import HotsetError
from hotset.warnonce import call_once_warned

#: the name of the tuned row in every table, and of the labelled untuned one
TUNED, UNTUNED = "torch", "torch-untuned"


@dataclass(frozen=True)
class Baseline:
    """How a PyTorch row reads: workers, threads per worker (1: one read at a time)."""

    workers: int
    threads_per_worker: int
    prefetch_factor: int = 2
    pin_memory: bool = False

    def __post_init__(self) -> None:
        if self.workers < 0 or self.threads_per_worker < 1 or self.prefetch_factor < 1:
            raise HotsetError(
                "a torch baseline needs workers >= 0, threads_per_worker >= 1 and "
                f"prefetch_factor >= 1, got {self}"
            )

    @property
    def requests_in_flight(self) -> int:
        """Reads the job can have outstanding at once (the main process when no workers)."""
        return max(1, self.workers) * self.threads_per_worker

    def fields(self, store_in_flight: int | None) -> dict[str, Any]:
        """The row's parameters, so a reader can check the baseline was not starved."""
        out: dict[str, Any] = {
            "workers": self.workers,
            "threads_per_worker": self.threads_per_worker,
            "requests_in_flight": self.requests_in_flight,
            "prefetch_factor": self.prefetch_factor,
            "pin_memory": self.pin_memory,
        }
        if store_in_flight is not None:
            out["store_max_in_flight"] = store_in_flight
        return out


def tuned(store_in_flight: int, *, workers: int, io_threads: int) -> Baseline:
    """The tuned baseline: ``max(io_threads, ceil(store_in_flight / workers))`` threads per
    worker, so it has at least the store's requests in flight and hotset's I/O threads."""
    if store_in_flight < 1 or io_threads < 1 or workers < 0:
        raise HotsetError(
            f"tuned: store_in_flight and io_threads must be >= 1 and workers >= 0, got "
            f"{store_in_flight}, {io_threads}, {workers}"
        )
    threads = max(io_threads, math.ceil(store_in_flight / max(1, workers)))
    return Baseline(workers=workers, threads_per_worker=threads)


def untuned(*, workers: int) -> Baseline:
    """The DataLoader as PyTorch ships it: one read per worker at a time."""
    return Baseline(workers=workers, threads_per_worker=1)


class PlainDataset:
    """What a PyTorch user writes: one store read (and decode) per sample.

    With ``threads > 1`` a batch's samples are read and decoded on a thread pool
    (``__getitems__``, which DataLoader calls with the batch's indices); the pool is
    made in the process that uses it, so a forked worker never inherits a parent's.
    """

    def __init__(
        self,
        store: Any,
        keys: list[str],
        labels: np.ndarray,
        *,
        decode: bool = True,
        threads: int = 1,
    ) -> None:
        if threads < 1:
            raise HotsetError(f"PlainDataset: threads must be >= 1, got {threads}")
        self.store, self.keys, self.labels = store, keys, labels
        self.decode = decode
        self.threads = threads
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = -1

    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__ | {"_pool": None, "_pool_pid": -1}  # a pool does not pickle

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, i: int) -> tuple[Any, int]:
        import torch

        from hotset.data.decode import decode

        key = self.keys[i]
        data = self.store.read(key)
        if not self.decode:
            return data, int(self.labels[i])
        return torch.from_numpy(decode(data, key)), int(self.labels[i])

    def __getitems__(self, indices: list[int]) -> list[tuple[Any, int]]:
        if self.threads == 1 or len(indices) < 2:
            return [self[i] for i in indices]
        return list(self._threads().map(self.__getitem__, indices))

    def _threads(self) -> ThreadPoolExecutor:
        if self._pool is None or self._pool_pid != os.getpid():
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="torch-baseline")
            self._pool_pid = os.getpid()
        return self._pool

    def close(self) -> None:
        if self._pool is not None and self._pool_pid == os.getpid():
            self._pool.shutdown(wait=False)
        self._pool = None


def dataloader(dataset: PlainDataset, baseline: Baseline, *, batch_size: int, seed: int) -> Any:
    """The DataLoader of a baseline row (``shuffle=True``, a seeded generator)."""
    import torch
    from torch.utils.data import DataLoader

    kwargs: dict[str, Any] = {}
    if baseline.workers:
        kwargs["prefetch_factor"] = baseline.prefetch_factor
    return call_once_warned(  # torch warns of more workers than cores on every one made
        lambda: DataLoader(
            dataset,  # type: ignore[arg-type]  # map-style by duck typing, as users write it
            batch_size=batch_size,
            shuffle=True,
            num_workers=baseline.workers,
            generator=torch.Generator().manual_seed(seed),
            pin_memory=baseline.pin_memory,
            **kwargs,
        )
    )
