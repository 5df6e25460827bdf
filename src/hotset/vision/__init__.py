"""Images on the device: batches kept encoded, decoded and augmented where the model runs.

* :class:`EncodedBatch` (:mod:`hotset.vision.encoded`): a batch's samples as the
  cache or the store gave them, one uint8 buffer and its offsets;
* :func:`decode_batch` (:mod:`hotset.vision.decode`): the batch decoded on a device
  (nvJPEG through torchvision where it imports, Pillow otherwise);
* :class:`RandomResizedCrop` (:mod:`hotset.vision.augment`): the standard training
  crop, flip and normalization for a whole batch, its randomness drawn from the
  batch's seed (:func:`augment_seed`).

Nothing here knows the loader: ``hotset.loader(..., augment=RandomResizedCrop(224),
device="cuda")`` uses these parts (:mod:`hotset.torch.devicepath`), and a training
loop can use them on its own.
"""

from __future__ import annotations

from hotset.vision.augment import IMAGENET_MEAN, IMAGENET_STD, RandomResizedCrop, augment_seed
from hotset.vision.decode import decode_batch
from hotset.vision.encoded import EncodedBatch
from hotset.vision.params import CropParams

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "CropParams",
    "EncodedBatch",
    "RandomResizedCrop",
    "augment_seed",
    "decode_batch",
]
