"""The loader's image paths: decode and augment on the device, or in the workers as uint8.

``hotset.loader(data, augment=RandomResizedCrop(224), device="cuda")`` (a spec from
:mod:`hotset.vision`) changes what a batch's ``x`` is, and nothing else -- the same
samples in the same order, the same decisions, the same checkpoints:

* ``augment_on="device"`` (the default): the workers hand over the batch's samples
  still encoded, the bytes the cache or the store gave, as one
  :class:`~hotset.vision.encoded.EncodedBatch` (one shared-memory buffer, no tensor
  per sample); the training process decodes it on ``device`` (nvJPEG through
  torchvision on a GPU) and crops, flips and normalizes it there. JPEG decoding and
  resizing leave the CPU, and a batch crosses between processes at its encoded size.
* ``augment_on="worker"``: the workers decode (on the CPU) and run the same crop,
  handing over one uint8 ``(n, C, size, size)`` tensor -- a quarter of the bytes of
  the float32 a per-sample transform hands over -- and the training process only
  normalizes it on ``device``.
* ``augment="encoded"``: ``x`` is the :class:`~hotset.vision.encoded.EncodedBatch`
  itself, for a loop that calls a spec (or its own decoder) on it.

The crops come from the batch's seed, :func:`~hotset.vision.augment.augment_seed`
of (the loader's ``seed``, the plan's epoch, the plan's index in its epoch), which
the worker sets from the plan it executes: a pure function of what the loader
checkpoints, so a loader resumed mid-epoch draws the remaining batches' crops as
the uninterrupted one did, and the two paths draw the same crops. With the same
decoder on the same device they give the same pixels, bit for bit
(:mod:`hotset.vision.resample`).

Why a spec and not the data set's ``transform``: a transform is a function of one
sample, called in a worker; these paths need the whole batch in one place, and a
seed per batch rather than the worker's random state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hotset.errors import HotsetError

__all__ = ["AUGMENT_ON", "ENCODED", "VisionPath", "check_vision_options"]

#: where a spec's work is done: the training process's device, or the workers
AUGMENT_ON = ("device", "worker")
#: ``augment=ENCODED``: x is the batch's EncodedBatch, augmented by the loop itself
ENCODED = "encoded"


def _device_name(device: object) -> str:
    import torch

    if not isinstance(device, str | torch.device):
        raise HotsetError(f"device must be a device name such as 'cuda', got {device!r:.80}")
    try:
        return str(torch.device(device))
    except (RuntimeError, ValueError):
        raise HotsetError(
            f"device must be a device name such as 'cpu', 'cuda' or 'cuda:1', got {device!r:.80}"
        ) from None


def check_vision_options(augment: object, augment_on: object, device: object) -> str:
    """The three options checked together; returns ``device`` as torch names it."""
    from hotset.vision.augment import RandomResizedCrop

    name = _device_name(device)
    if augment_on not in AUGMENT_ON:
        raise HotsetError(
            f"augment_on must be one of {', '.join(map(repr, AUGMENT_ON))}, got {augment_on!r:.80}"
        )
    if augment is None:
        if augment_on != "device" or name != "cpu":
            raise HotsetError(
                "augment_on= and device= say where a batch's augmentation runs: give "
                "augment=hotset.vision.RandomResizedCrop(...) too"
            )
        return name
    if augment == ENCODED:
        if augment_on != "device" or name != "cpu":
            raise HotsetError(
                "augment='encoded' delivers the encoded batch to the loop, which decodes it "
                "itself: give the device to the spec it calls, not to the loader"
            )
        return name
    if not isinstance(augment, RandomResizedCrop):
        raise HotsetError(
            "augment must be a hotset.vision.RandomResizedCrop, 'encoded' or None, "
            f"got {augment!r:.80}"
        )
    return name


def _in_worker() -> bool:
    from torch.utils.data import get_worker_info

    return get_worker_info() is not None


@dataclass(frozen=True)
class VisionPath:
    """What a batch's ``x`` becomes (see the module docstring); pickled to the workers."""

    #: the spec, or None for ``augment="encoded"``
    spec: Any
    #: ``"device"``, ``"worker"`` or ``"encoded"``
    on: str
    #: where the training process decodes (device path) or normalizes (worker path)
    device: str
    #: the loader's seed, the first of the three numbers of each batch's seed
    seed: int

    @classmethod
    def from_options(cls, augment: Any, augment_on: str, device: str, seed: int) -> Any:
        """The path the options ask for; None without ``augment``."""
        if augment is None:
            return None
        if augment == ENCODED:
            return cls(None, ENCODED, device, seed)
        return cls(augment, augment_on, device, seed)

    def batch_seed(self, epoch: int, index: int) -> int:
        """The augmentation seed of batch ``index`` of ``epoch``."""
        from hotset.vision.augment import augment_seed

        return augment_seed(self.seed, epoch, index)

    def worker_x(
        self, blobs: Sequence[bytes], *, epoch: int, index: int, names: Sequence[str]
    ) -> Any:
        """In the worker: the served samples' bytes (in batch order) as the batch's ``x``."""
        from hotset.vision.encoded import EncodedBatch

        seed = self.batch_seed(epoch, index)
        cropping = self.on == "worker"
        batch = EncodedBatch.from_blobs(blobs, seed=seed, shared=not cropping and _in_worker())
        if cropping:
            return self.spec.crop_batch(batch, device="cpu", names=names)  # uint8 images
        return batch

    def finish(self, x: Any, names: Sequence[str]) -> Any:
        """In the training process: ``x`` as the loop receives it."""
        if self.on == ENCODED:
            return x
        if self.on == "worker":
            from hotset.vision.transfer import to_device

            return self.spec.normalize(to_device(x, self.device))
        return self.spec(x, device=self.device, names=names)


def vision_path(data: Any, options: Any) -> VisionPath | None:
    """The path ``options`` ask for over ``data`` (a HotsetDataset), None without ``augment``.

    The data set's ``transform`` would never run (the batch is augmented whole), so
    one given beside ``augment`` is refused rather than silently dropped.
    """
    if options.augment is None:
        return None
    if data.transform is not None:
        raise HotsetError(
            "augment= augments whole batches and replaces the data set's transform: open "
            "the data set without transform= (its decode is not used either)"
        )
    return VisionPath.from_options(
        options.augment, options.augment_on, options.device, options.seed
    )
