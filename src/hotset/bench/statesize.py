"""How many bytes a loader's checkpoint takes per sample, at any number of ids.

Why a module: the figure issue #28 asks for is at ImageNet-1k's 1,281,167 ids
(``benchmarks/state-size/measure.py``), and a test holds a bound at 200,000; both
must build the same loader and feed it the same losses. Samples are 8 bytes read
by a function (their content never enters the state), labels are all 0, and the
losses are float32 with a full mantissa, as a model gives them, so that they
compress as real ones do and not better.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import torch

__all__ = ["BlankDataset", "eight_bytes", "float32_losses", "state_bytes"]


class BlankDataset(torch.utils.data.Dataset[Any]):
    """``n`` items that are never read (``read=`` gives the bytes)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[bytes, int]:
        return b"", 0


def eight_bytes(i: int) -> bytes:
    """Sample ``i``'s bytes: its id, so that a wrong sample would show."""
    return i.to_bytes(8, "little")


def float32_losses(ids: torch.Tensor, epoch: int) -> torch.Tensor:
    """float32 losses with a full mantissa: -log of a uniform hashed from (id, epoch)."""
    x = ids.numpy().astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(epoch + 1)
    x ^= x >> np.uint64(31)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(29)
    u = ((x >> np.uint64(40)).astype(np.float32) + 0.5) / np.float32(2**24)
    return torch.from_numpy(-np.log(u))


def state_bytes(
    system: str,
    n: int,
    *,
    full_epochs: int,
    feedback: bool = True,
    batch_size: int = 1024,
    **options: Any,
) -> int:
    """Bytes of ``torch.save(loader.state_dict())`` after ``full_epochs`` epochs and half
    of the next, losses fed back with ``update`` when ``feedback``; the state is also
    read back with ``torch.load(weights_only=True)``, as Lightning's resume does."""
    import hotset

    data = hotset.from_dataset(
        BlankDataset(n), read=eight_bytes, decode="bytes", sizes=np.full(n, 8), labels=np.zeros(n)
    )
    with hotset.loader(
        data, system=system, cache=0.1, batch_size=batch_size, seed=0, verify=False, **options
    ) as loader:
        half = n // batch_size // 2
        for epoch in range(full_epochs + 1):
            stop = half if epoch == full_epochs else None
            loader.set_epoch(epoch)
            for i, (_, _, ids, _) in enumerate(loader):
                if feedback:
                    loader.update(ids, float32_losses(ids, epoch))
                if i + 1 == stop:
                    break
        buf = io.BytesIO()
        torch.save(loader.state_dict(), buf)
    size = buf.tell()
    buf.seek(0)
    torch.load(buf, weights_only=True)
    return size
