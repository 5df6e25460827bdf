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


class PilFolder(Folder):
    """Returns PIL images, as torchvision datasets without a transform do."""

    def __getitem__(self, index: int) -> Any:
        import io

        from PIL import Image

        image = Image.open(io.BytesIO(self.read(index)))
        image.load()
        return image, self.labels[index]


class Nested(Folder):
    """Items that are more than (tensor, label): a dict of a tensor, an array, text, numbers."""

    def __getitem__(self, index: int) -> Any:
        x, y = super().__getitem__(index)
        extra = {"name": self.keys[index], "half": x.numpy()[:, ::2], "flags": (True, None)}
        return {"image": x, "extra": extra, "index": index, "scale": 0.5}, y


class Touch:
    """Unpickling this creates ``path``: the canary of code execution from a cache."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return open, (str(self.path), "w")


def pickle_payload(canary: Path, size: int) -> bytes:
    """A pickle of exactly ``size`` bytes that creates ``canary`` when unpickled.

    The same size as the entry it replaces, so no size check can reject it:
    only what the reader does with the bytes stands between them and the code.
    """
    import pickle

    for pad in range(size):
        data = pickle.dumps((Touch(canary), b"\0" * pad), protocol=4)
        if len(data) == size:
            return data
    raise ValueError(f"no pickle payload of exactly {size} bytes")


def read_key(root: Path, keys: list[str], index: int) -> bytes:
    """A module-level ``read=`` for ``from_dataset``: with ``functools.partial`` it pickles."""
    return (root / keys[index]).read_bytes()


class WithLambda(Folder):
    """A Dataset holding a lambda, as ``target_transform=lambda y: ...`` leaves one."""

    def __init__(self, root: Path, keys: list[str], labels: list[int]) -> None:
        super().__init__(root, keys, labels)
        self.target_transform = lambda y: y

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        x, y = super().__getitem__(index)
        return x, self.target_transform(y)
