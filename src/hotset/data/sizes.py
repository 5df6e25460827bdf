"""Sample byte sizes like a real data set's: a seeded log-normal, padded in where decoders skip.

The synthetic images are a few kB, so a store's bandwidth never matters on them;
ImageNet-1k's 1,281,167 training JPEGs take about 140 GB, some 110 kB each, with
sizes spread roughly log-normally. :data:`IMAGENET` draws each sample's size from
a log-normal with that mean (110,000 bytes) and ``sigma = 0.6`` of log-bytes, so
``mu = ln(110000) - 0.6**2 / 2 = 11.428``: median about 92 kB, 5th percentile
about 34 kB, 95th about 247 kB; clamped to [8 kB, 2 MB] (cuts about 2e-5 of the
mass), and never below the image's own encoding.

The pixels stay those of the small image, so a padded set trains exactly as the
small one does: the extra bytes go where every decoder skips them (a PNG gets
a private ancillary chunk before ``IEND``; JPEG and NPY get trailing bytes after
their end marker or array). The padding is seeded random bytes (incompressible,
like JPEG data) and is part of the file, so the manifest's sizes and hashes
cover it.
"""

from __future__ import annotations

import math
import struct
import zlib
from dataclasses import dataclass

import numpy as np

from hotset.errors import HotsetError

#: PNG chunk type of the padding: ancillary (lower-case 1st letter: decoders may
#: skip it), private (lower-case 2nd), reserved bit clear (upper-case 3rd), safe to copy
PAD_CHUNK = b"hsPd"
_PNG_CHUNK_OVERHEAD = 12  # length, type, CRC


@dataclass(frozen=True)
class SizeModel:
    """A log-normal of sample byte sizes with the given mean, clamped to [lo, hi]."""

    mean_bytes: float
    sigma: float
    lo: int
    hi: int

    def __post_init__(self) -> None:
        if not (self.mean_bytes > 0 and self.sigma >= 0 and 0 < self.lo <= self.hi):
            raise HotsetError(f"invalid size model {self!r}: want mean > 0, sigma >= 0, lo <= hi")

    @property
    def mu(self) -> float:
        """The mean of log-bytes: ``ln(mean) - sigma**2 / 2`` keeps the mean at ``mean_bytes``."""
        return math.log(self.mean_bytes) - self.sigma**2 / 2

    def draw(self, n: int, seed: int) -> np.ndarray:
        """``n`` target sizes (int64), from ``default_rng([seed, 3])`` only: same seed, same sizes."""
        rng = np.random.default_rng([seed, 3])
        raw = rng.lognormal(self.mu, self.sigma, size=n)
        return np.clip(np.rint(raw), self.lo, self.hi).astype(np.int64)

    def describe(self) -> dict[str, float | int]:
        """The parameters, for ``dataset.json`` and bench results."""
        return {
            "mean_bytes": self.mean_bytes,
            "mu": round(self.mu, 4),
            "sigma": self.sigma,
            "min_bytes": self.lo,
            "max_bytes": self.hi,
        }


#: ImageNet-1k train: ~140 GB over 1,281,167 JPEGs = ~110 kB each (see the module docstring)
IMAGENET = SizeModel(mean_bytes=110_000.0, sigma=0.6, lo=8_000, hi=2_000_000)

#: ``--sizes`` choices; ``small`` leaves the encoded images as they are
SIZE_MODELS: dict[str, SizeModel | None] = {"small": None, "imagenet": IMAGENET}


def size_model(name: str) -> SizeModel | None:
    """The model named ``name`` (``None`` for ``small``); an unknown name is a HotsetError."""
    try:
        return SIZE_MODELS[name]
    except KeyError:
        raise HotsetError(
            f"--sizes must be one of {', '.join(SIZE_MODELS)}, got {name!r}"
        ) from None


def pad_to(data: bytes, target: int, fmt: str, *, seed: int, sample_id: int) -> bytes:
    """``data`` grown to ``target`` bytes where its decoder ignores the rest.

    Unchanged when it is already that big (a PNG also when the gap is smaller than
    a chunk's 12-byte frame). The padding comes from ``default_rng([seed, 4, id])``
    so it depends on the sample alone, never on threads or chunking.
    """
    overhead = _PNG_CHUNK_OVERHEAD if fmt == "png" else 0
    gap = target - len(data) - overhead
    if gap < 0:
        return data
    filler = np.random.default_rng([seed, 4, sample_id]).bytes(gap)
    if fmt != "png":
        return data + filler
    if not data.endswith(b"IEND\xaeB`\x82"):
        raise HotsetError("pad_to: the PNG does not end with an IEND chunk")
    body = PAD_CHUNK + filler
    chunk = struct.pack(">I", gap) + body + struct.pack(">I", zlib.crc32(body))
    return data[:-_PNG_CHUNK_OVERHEAD] + chunk + data[-_PNG_CHUNK_OVERHEAD:]
