"""Photo-like JPEGs of ImageNet's dimensions and file sizes: a workload for the data path.

Why not ``hotset data synth``: its images are small PNGs (or padded ones, for byte
sizes) whose pixels say nothing about decoding cost. What a GPU job's data path
spends its time on is decoding and resizing JPEGs of about 500x375 pixels and
100 kB each (ImageNet's train set: mean 110 kB), so the pipeline benchmark needs
files like those: real JPEGs whose entropy-coded size comes from their content.

Each image is a natural-image-like field -- noise with a ``1/f^a`` amplitude
spectrum (``a`` in 0.9-1.25, per image), as photographs have, one luminance and
two colour fields mixed into RGB, drawn at half resolution and upsampled --
with 3 to 7 hard-edged ellipses of flat colour on it (edges, objects) and sensor
noise of a per-image strength. At ``quality=94`` the 500x375 files average about
105 kB with a spread of some 10 kB (`hotset data photos` prints the figures).
A share ``portrait`` of the images is 375x500.

Determinism: image ``i``'s pixels come from ``default_rng([seed, 2, i])``, its
shape from ``default_rng([seed, 0])``, the labels from ``default_rng([seed, 1])``,
so the bytes depend on the arguments only, never on the number of processes.

Fast: the images are rendered and encoded by a pool of processes, each writing
its files into the data set being built (about 20 ms per image on one core, so
10,000 images in some 15 s on 16 cores). The manifest is a hotset manifest
(``format="jpeg"``): ``hotset.open_dataset`` reads the directory and
``hotset data pack`` packs it.
"""

from __future__ import annotations

import io
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hotset.data.manifest import Manifest, content_hash
from hotset.data.writer import DatasetDir, sample_key
from hotset.errors import HotsetError

__all__ = ["PHOTOS_GENERATOR", "PhotoConfig", "make_photos", "render_photo"]

PHOTOS_GENERATOR = "hotset.photos/1"
#: images per task handed to a process (and the unit of progress)
_TASK = 64
#: below this many images the pool is not worth its start
_INLINE = 256


@dataclass(frozen=True)
class PhotoConfig:
    """What :func:`make_photos` generates; checked when made."""

    n: int = 10_000
    width: int = 500
    height: int = 375
    portrait: float = 0.2
    classes: int = 1000
    quality: int = 94
    seed: int = 0

    def __post_init__(self) -> None:
        for name, low in (("n", 1), ("width", 8), ("height", 8), ("classes", 1), ("seed", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise HotsetError(f"{name} must be an integer >= {low}, got {value!r:.80}")
        if max(self.width, self.height) > 8192:
            raise HotsetError(
                f"images are at most 8192 pixels a side, got {self.width}x{self.height}"
            )
        if not 0.0 <= float(self.portrait) <= 1.0:
            raise HotsetError(f"portrait must be a share in [0, 1], got {self.portrait!r:.80}")
        if isinstance(self.quality, bool) or not isinstance(self.quality, int):
            raise HotsetError(f"quality must be an integer in 1..95, got {self.quality!r:.80}")
        if not 1 <= self.quality <= 95:
            raise HotsetError(f"quality must be an integer in 1..95, got {self.quality!r:.80}")

    def shapes(self) -> np.ndarray:
        """(height, width) of every image: a ``portrait`` share turned on its side."""
        turned = np.random.default_rng([self.seed, 0]).random(self.n) < self.portrait
        h = np.where(turned, self.width, self.height)
        w = np.where(turned, self.height, self.width)
        return np.stack([h, w], axis=1).astype(np.int64)

    def labels(self) -> np.ndarray:
        """Balanced labels in a seeded order."""
        rng = np.random.default_rng([self.seed, 1])
        return rng.permutation(np.arange(self.n, dtype=np.int64) % self.classes)


def _field(rng: np.random.Generator, h: int, w: int, slope: float) -> np.ndarray:
    """Three fields (3, h, w) of ``1/f^slope`` noise, each with mean 0 and std 1."""
    fy = np.fft.fftfreq(h)[:, None]
    fx = np.fft.rfftfreq(w)[None, :]
    f = np.hypot(fy, fx)
    f[0, 0] = 1.0
    shape = (3, h, w // 2 + 1)
    spec = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    x = np.fft.irfft2(spec * f**-slope, s=(h, w)).astype(np.float32)
    x -= x.mean(axis=(1, 2), keepdims=True)
    x /= x.std(axis=(1, 2), keepdims=True) + np.float32(1e-6)
    return x


def _ellipses(rng: np.random.Generator, img: np.ndarray) -> None:
    """3 to 7 flat-coloured ellipses blended over ``img`` (H, W, 3 float32), in place."""
    h, w = img.shape[:2]
    for _ in range(int(rng.integers(3, 8))):
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        ry, rx = rng.uniform(0.04, 0.33) * h, rng.uniform(0.04, 0.33) * w
        colour = rng.uniform(0, 255, 3).astype(np.float32)
        y0, y1 = int(max(0, cy - ry)), int(min(h, cy + ry + 1))
        x0, x1 = int(max(0, cx - rx)), int(min(w, cx + rx + 1))
        if y1 <= y0 or x1 <= x0:
            continue
        yy = ((np.arange(y0, y1) - cy) / ry)[:, None]
        xx = ((np.arange(x0, x1) - cx) / rx)[None, :]
        inside = yy**2 + xx**2 < 1
        patch = img[y0:y1, x0:x1]
        patch[inside] = patch[inside] * np.float32(0.4) + colour * np.float32(0.6)


def render_photo(seed: int, i: int, height: int, width: int) -> np.ndarray:
    """Image ``i``'s pixels: uint8 (height, width, 3), a function of its arguments only."""
    from PIL import Image

    rng = np.random.default_rng([seed, 2, i])
    sigma, slope = rng.uniform(4.0, 10.0), rng.uniform(0.9, 1.25)
    lum, c1, c2 = _field(rng, max(2, height // 2), max(2, width // 2), slope)
    rgb = np.stack([lum + 0.35 * c1, lum - 0.2 * c1 + 0.25 * c2, lum - 0.35 * c2], axis=-1)
    small = np.clip(110 + 45 * rgb, 0, 255).astype(np.uint8)
    up = Image.fromarray(small).resize((width, height), Image.Resampling.BICUBIC)
    img = np.array(up, dtype=np.float32)
    _ellipses(rng, img)
    img += rng.standard_normal(img.shape, dtype=np.float32) * np.float32(sigma)
    np.clip(img + np.float32(0.5), 0, 255, out=img)
    return img.astype(np.uint8)


def _encode(pixels: np.ndarray, quality: int) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def _task(
    root: str, cfg: PhotoConfig, start: int, keys: list[str], shapes: np.ndarray
) -> tuple[list[int], list[str]]:
    """Render, encode and write images ``start..start+len(keys)-1`` under ``root``."""
    sizes, hashes = [], []
    made: set[str] = set()
    for offset, key in enumerate(keys):
        h, w = (int(v) for v in shapes[offset])
        data = _encode(render_photo(cfg.seed, start + offset, h, w), cfg.quality)
        path = os.path.join(root, key)
        parent = os.path.dirname(path)
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            made.add(parent)
        with open(path, "xb") as f:
            f.write(data)
        sizes.append(len(data))
        hashes.append(content_hash(data))
    return sizes, hashes


def _meta(cfg: PhotoConfig, sizes: list[int]) -> dict[str, Any]:
    return {
        "format": "jpeg",
        "channels": 3,
        "image_size": [cfg.height, cfg.width],
        "num_classes": cfg.classes,
        "generator": PHOTOS_GENERATOR,
        "seed": cfg.seed,
        "photos": {
            "config": asdict(cfg),
            "portrait": cfg.portrait,
            "quality": cfg.quality,
            "mean_bytes": round(float(np.mean(sizes))),
            "std_bytes": round(float(np.std(sizes))),
        },
    }


def make_photos(
    out: str | os.PathLike[str],
    cfg: PhotoConfig | None = None,
    *,
    workers: int | None = None,
    force: bool = False,
) -> Manifest:
    """Generate ``cfg`` into ``out`` (all or nothing) with ``workers`` processes (all the
    CPUs when left out; inline below a few hundred images) and return its manifest."""
    cfg = cfg if cfg is not None else PhotoConfig()
    workers = os.cpu_count() or 1 if workers is None else workers
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise HotsetError(f"workers must be an integer >= 1, got {workers!r:.80}")
    keys = [sample_key(i, cfg.n, "jpeg") for i in range(cfg.n)]
    shapes = cfg.shapes()
    starts = range(0, cfg.n, _TASK)
    sizes: list[int] = []
    hashes: list[str] = []
    try:
        with DatasetDir(out, force=force) as build:
            root = str(build.path)
            args = [(root, cfg, s, keys[s : s + _TASK], shapes[s : s + _TASK]) for s in starts]
            if workers == 1 or cfg.n < _INLINE:
                results = [_task(*a) for a in args]
            else:
                # the platform's start method (fork on Linux: no re-import of the caller's
                # __main__, which need not be guarded); the tasks use numpy and Pillow only
                with ProcessPoolExecutor(min(workers, len(args))) as pool:
                    results = list(pool.map(_task, *zip(*args, strict=True)))
            for s, h in results:
                sizes += s
                hashes += h
            manifest = Manifest(
                np.arange(cfg.n), keys, sizes, cfg.labels(), hashes, _meta(cfg, sizes)
            )
            manifest.save(Path(root))
            build.commit()
    except OSError as exc:
        raise HotsetError(f"cannot write the data set to {os.fspath(out)!r}: {exc}") from None
    return manifest
