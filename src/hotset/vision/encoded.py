"""A batch of samples still encoded: one uint8 buffer, the offsets that cut it, a seed.

Why one buffer. A DataLoader worker hands its batch to the training process
through a queue; a tensor crosses as one shared-memory handle (its bytes are not
pickled), while bytes objects and numpy arrays are pickled through the pipe. A
batch of 256 JPEGs of 100 kB is 25 MB: as one uint8 tensor it crosses as one
handle, with its offsets (257 integers) pickled beside it. Kept encoded, the
batch is about 6x smaller than the same images decoded to uint8 and 24x smaller
than float32, and nothing per sample has been made yet: the training process
decodes it on the device (:mod:`hotset.vision.decode`).

``seed`` is the batch's augmentation seed (:func:`hotset.vision.augment.augment_seed`):
it travels with the bytes so that whoever augments the batch draws the same crops
(a resumed loader's batches too).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.errors import HotsetError

__all__ = ["EncodedBatch"]


@dataclass(frozen=True)
class EncodedBatch:
    """``data[offsets[i]:offsets[i + 1]]`` is sample ``i``'s bytes, exactly as stored.

    ``data`` is a 1-D ``torch.uint8`` tensor; ``offsets`` an int64 numpy array of
    ``len + 1`` entries, starting at 0 and ending at ``len(data)``.
    """

    data: Any  # torch.Tensor (uint8, 1-D): typed loosely so this module imports without torch
    offsets: npt.NDArray[np.int64]
    seed: int = 0

    def __post_init__(self) -> None:
        import torch

        if not isinstance(self.data, torch.Tensor) or self.data.dtype != torch.uint8:
            raise HotsetError(f"EncodedBatch.data must be a uint8 tensor, got {self.data!r:.80}")
        if self.data.dim() != 1:
            raise HotsetError(f"EncodedBatch.data must be 1-D, got shape {tuple(self.data.shape)}")
        off = np.asarray(self.offsets, dtype=np.int64)
        if off.ndim != 1 or len(off) < 1 or off[0] != 0 or off[-1] != self.data.numel():
            raise HotsetError(
                f"EncodedBatch.offsets must run from 0 to {self.data.numel()} (the buffer's "
                f"length), got {off.tolist()!r:.80}"
            )
        if np.any(np.diff(off) < 0):
            raise HotsetError("EncodedBatch.offsets must not decrease")
        object.__setattr__(self, "offsets", off)

    @classmethod
    def from_blobs(cls, blobs: Sequence[bytes], *, seed: int = 0, shared: bool = False) -> Any:
        """One buffer holding ``blobs`` in order: each byte copied once.

        ``shared``: the buffer is made in shared memory first, so that a DataLoader
        worker's queue sends its handle as it is instead of copying it there.
        """
        import torch

        sizes = np.fromiter((len(b) for b in blobs), dtype=np.int64, count=len(blobs))
        offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        data = torch.empty(int(offsets[-1]), dtype=torch.uint8)
        if shared and data.numel():
            data.share_memory_()
        view = data.numpy()
        for blob, start, stop in zip(
            blobs, offsets[:-1].tolist(), offsets[1:].tolist(), strict=True
        ):
            view[start:stop] = np.frombuffer(blob, dtype=np.uint8)
        return cls(data, offsets, seed)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def nbytes(self) -> int:
        """The encoded bytes of the whole batch."""
        return int(self.offsets[-1])

    def sample(self, i: int) -> bytes:
        """Sample ``i``'s bytes (a copy)."""
        if not -len(self) <= i < len(self):
            raise IndexError(f"sample {i} out of range for a batch of {len(self)}")
        i %= len(self)
        start, stop = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.data[start:stop].numpy().tobytes()

    def views(self) -> list[Any]:
        """Each sample as a 1-D uint8 tensor viewing the buffer (no copy): what
        ``torchvision.io.decode_jpeg`` takes as a list."""
        bounds = self.offsets.tolist()
        return [self.data[a:b] for a, b in itertools.pairwise(bounds)]

    def with_seed(self, seed: int) -> EncodedBatch:
        """The same bytes under another augmentation seed."""
        return replace(self, seed=int(seed))

    def pin_memory(self) -> EncodedBatch:
        """The batch with its buffer in pinned memory (DataLoader's ``pin_memory``
        calls this on whatever has the method)."""
        return replace(self, data=self.data.pin_memory())

    def is_pinned(self) -> bool:
        return bool(self.data.is_pinned())
