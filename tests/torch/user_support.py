"""An ImageFolder-like Dataset over real files (no pytest here): what users bring.

Module-level so DataLoader workers can unpickle it.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import Dataset, IterableDataset

from hotset.data.decode import decode


class Folder(Dataset[Any]):
    """``(image tensor, label)`` per index, read from files under ``root``."""

    def __init__(self, root: Path, keys: list[str], labels: list[int]) -> None:
        self.root, self.keys, self.labels = root, keys, labels

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        data = self.read(index)
        return torch.from_numpy(decode(data, self.keys[index])), self.labels[index]

    def read(self, index: int) -> bytes:
        return (self.root / self.keys[index]).read_bytes()


class Augmenting(Folder):
    """The mistake: random augmentation inside __getitem__."""

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        x, y = super().__getitem__(index)
        return x + random.random(), y


class Stream(IterableDataset[Any]):
    def __iter__(self) -> Any:
        yield from range(3)
