"""A learnable synthetic image-classification dataset whose samples differ in difficulty.

Importance sampling only pays off when per-sample losses spread out: a few
easy samples, many medium ones, a hard tail and some mislabeled ones, as on
CIFAR-10. Each class has a smooth random prototype image; each sample mixes its
(shifted) class prototype with a *confuser* class's prototype and smooth noise,
in proportions set by a per-sample difficulty ``d ~ Beta(2, 3)``; a fraction
``noise`` of labels is then flipped. ``easy`` (0 by default) redraws the difficulty
of that share of the samples from ``Beta(1, 12)`` (mean 0.08): a long tail of easy
samples, which an importance sampler should learn to skip (the ``synth-noisy``
benchmark workload: 20% flipped labels, half the samples easy). Every sample's difficulty, confuser, shift
and flip are written to ``synth_truth.npz`` so analyses can check which samples
an importance scorer ranks high.

Determinism: the per-sample parameters come from ``default_rng([seed, 1])`` (the
easy share's from ``default_rng([seed, 3])``, so ``easy=0`` draws what it always did) and
the pixels of chunk ``c`` (ids ``c*1000 ..``) from ``default_rng([seed, 2, c])``,
so the bytes depend on the arguments only, never on threads or timing. ``draw`` (0 by
default) picks an independent draw of samples from the same classes: draw ``k > 0`` keys
those generators by ``[..., k]`` too, while the prototypes depend on ``seed`` alone, so
``draw=1`` with ``noise=0`` is a clean test set of the task ``draw=0`` trains on (the
train suites' ``--test-n``); draw 0 is what the generator always wrote.

``sizes="imagenet"`` pads every encoded image to a byte size drawn from a
seeded log-normal with ImageNet's mean (:mod:`hotset.data.sizes`), where its
decoder skips the padding: same pixels and labels, realistic bytes to move.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hotset.data.manifest import Manifest, content_hash
from hotset.data.sizes import pad_to, size_model
from hotset.data.writer import FILES_PER_FOLDER, DatasetDir, check_format, encode_image, sample_key
from hotset.errors import HotsetError

TRUTH_FILE = "synth_truth.npz"
GENERATOR = "hotset.synth/1"
_CHUNK = FILES_PER_FOLDER  # pixel RNG granularity; fixed so bytes never depend on it
_BETA = (2.0, 3.0)  # difficulty distribution: mean 0.4, a tail towards 1
_EASY_BETA = (1.0, 12.0)  # the easy share's difficulty: mean 0.08
_CONFUSER_WEIGHT = 0.7  # confuser prototype weight = 0.7 * d (wins over the true one near d > 0.6)
_NOISE_WEIGHT = 0.9  # smooth-noise weight = 0.9 * d
_PIXEL_NOISE = (0.15, 0.45)  # white-noise std = a + b * d, in prototype-std units
_CONTRAST = 0.2  # pixel = 0.5 + contrast * signal (signal has unit std)


@dataclass(frozen=True)
class SynthConfig:
    """Arguments of ``hotset data synth``; validated on construction."""

    n: int = 50_000
    image_size: int = 32
    classes: int = 10
    noise: float = 0.1
    seed: int = 0
    format: str = "png"
    channels: int = 3
    sizes: str = "small"
    #: share of the samples whose difficulty is redrawn from Beta(1, 12): easy ones
    easy: float = 0.0
    #: which independent draw of samples from the seed's classes (0: the data set as
    #: always; another: a held-out test set of the same task)
    draw: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.n, int) or self.n < 1:
            raise HotsetError(f"--n must be a positive integer, got {self.n!r}")
        if not isinstance(self.image_size, int) or not 4 <= self.image_size <= 1024:
            raise HotsetError(f"--image-size must be between 4 and 1024, got {self.image_size!r}")
        if not isinstance(self.classes, int) or not 2 <= self.classes <= 10_000:
            raise HotsetError(f"--classes must be between 2 and 10000, got {self.classes!r}")
        if not 0.0 <= float(self.noise) < 1.0:
            raise HotsetError(f"--noise must be in [0, 1), got {self.noise!r}")
        if isinstance(self.easy, bool) or not 0.0 <= float(self.easy) <= 1.0:
            raise HotsetError(f"--easy must be in [0, 1], got {self.easy!r}")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise HotsetError(f"--seed must be a non-negative integer, got {self.seed!r}")
        if isinstance(self.draw, bool) or not isinstance(self.draw, int) or self.draw < 0:
            raise HotsetError(f"--draw must be a non-negative integer, got {self.draw!r}")
        check_format(self.format)
        if self.channels not in (1, 3):
            raise HotsetError(f"--channels must be 1 or 3, got {self.channels!r}")
        size_model(self.sizes)


@dataclass(frozen=True)
class SynthTruth:
    """Per-sample ground truth behind the generated images (indexed by id)."""

    true_label: np.ndarray  # int64: the class whose prototype dominates at low difficulty
    label: np.ndarray  # int64: the recorded label (== true_label unless flipped)
    flipped: np.ndarray  # bool
    difficulty: np.ndarray  # float32 in (0, 1)
    confuser: np.ndarray  # int64: the other class mixed in
    shift: np.ndarray  # int64 (n, 2): (dy, dx) shift of the true prototype, edges repeated

    def save(self, path: Path) -> None:
        np.savez(path, **asdict(self))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SynthTruth:
        """From the dataset directory or the ``synth_truth.npz`` path."""
        p = Path(path)
        if p.is_dir():
            p = p / TRUTH_FILE
        if not p.is_file():
            raise HotsetError(f"no synthetic ground truth at {str(p)!r}")
        with np.load(p, allow_pickle=False) as z:
            return cls(**{name: z[name] for name in z.files})


def _upsample_matrix(coarse: int, size: int) -> np.ndarray:
    """Linear interpolation from ``coarse`` cell-centred points to ``size`` pixels (size x coarse)."""
    pos = (np.arange(size) + 0.5) * coarse / size - 0.5
    pos = np.clip(pos, 0.0, coarse - 1.0)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, coarse - 1)
    frac = pos - lo
    mat = np.zeros((size, coarse))
    mat[np.arange(size), lo] += 1.0 - frac
    mat[np.arange(size), hi] += frac
    return mat


def _smooth_fields(rng: np.random.Generator, count: int, channels: int, size: int) -> np.ndarray:
    """``count`` smooth random float32 images (count, C, H, W), each with mean 0 and std 1.

    A 4x4 and an 8x8 Gaussian grid upsampled and summed, plus a per-channel
    offset (a colour): blobs and colours, like objects, not pixel noise.
    """
    out = np.zeros((count, channels, size, size), dtype=np.float32)
    for grid, weight in ((min(4, size), 1.0), (min(8, size), 0.5)):
        up = _upsample_matrix(grid, size).astype(np.float32)
        coarse = rng.standard_normal((count, channels, grid, grid), dtype=np.float32)
        out += np.float32(weight) * (up @ coarse @ up.T)
    out += np.float32(0.7) * rng.standard_normal((count, channels, 1, 1), dtype=np.float32)
    flat = out.reshape(count, -1)
    flat -= flat.mean(axis=1, keepdims=True)
    flat /= np.sqrt(np.einsum("ij,ij->i", flat, flat) / flat.shape[1])[:, None] + np.float32(1e-6)
    return out


def prototypes(cfg: SynthConfig) -> np.ndarray:
    """The per-class prototype signals (classes, C, H, W), mean 0 and std 1 each."""
    return _smooth_fields(
        np.random.default_rng([cfg.seed, 0]), cfg.classes, cfg.channels, cfg.image_size
    )


def _stream(cfg: SynthConfig, *key: int) -> list[int]:
    """The seed sequence of one per-sample generator: ``[seed, *key]`` for draw 0 (what
    the generator always used), ``[seed, *key, draw]`` for another draw."""
    return [cfg.seed, *key] if cfg.draw == 0 else [cfg.seed, *key, cfg.draw]


def ground_truth(cfg: SynthConfig) -> SynthTruth:
    """Draw every per-sample parameter (cheap, O(n)) from ``default_rng([seed, 1])``."""
    rng = np.random.default_rng(_stream(cfg, 1))
    n, k = cfg.n, cfg.classes
    true_label = rng.permutation(np.arange(n, dtype=np.int64) % k)  # balanced classes
    difficulty = rng.beta(*_BETA, size=n).astype(np.float32)
    if cfg.easy > 0:  # its own generator: the draws below stay those of easy=0
        extra = np.random.default_rng(_stream(cfg, 3))
        easy = extra.permutation(n)[: round(cfg.easy * n)]
        difficulty[easy] = extra.beta(*_EASY_BETA, size=len(easy)).astype(np.float32)
    confuser = (true_label + rng.integers(1, k, size=n)) % k
    max_shift = np.rint(difficulty * cfg.image_size / 8).astype(np.int64)
    shift = np.stack(
        [rng.integers(-max_shift, max_shift + 1), rng.integers(-max_shift, max_shift + 1)], axis=1
    )
    flipped = np.zeros(n, dtype=bool)
    flipped[rng.permutation(n)[: round(cfg.noise * n)]] = True
    label = true_label.copy()
    label[flipped] = (true_label[flipped] + rng.integers(1, k, size=int(flipped.sum()))) % k
    return SynthTruth(true_label, label, flipped, difficulty, confuser.astype(np.int64), shift)


def render(
    cfg: SynthConfig, truth: SynthTruth, protos: np.ndarray, start: int, stop: int
) -> np.ndarray:
    """uint8 pixels (stop-start, H, W, C) of ids ``start..stop-1``; ``start`` must begin a chunk."""
    if start % _CHUNK:
        raise HotsetError(f"render: start {start} is not a multiple of {_CHUNK}")
    parts = []
    for c0 in range(start, stop, _CHUNK):
        c1 = min(c0 + _CHUNK, stop, cfg.n)
        parts.append(_render_chunk(cfg, truth, protos, c0, c1))
    if not parts:
        raise HotsetError(f"render: empty id range {start}..{stop}")
    return np.concatenate(parts)


def _render_chunk(
    cfg: SynthConfig, truth: SynthTruth, protos: np.ndarray, start: int, stop: int
) -> np.ndarray:
    rng = np.random.default_rng(_stream(cfg, 2, start // _CHUNK))
    m, size, ch = stop - start, cfg.image_size, cfg.channels
    f32 = np.float32
    d = truth.difficulty[start:stop].astype(f32)[:, None, None]
    flat_protos = protos.astype(f32).reshape(cfg.classes, ch, size * size)
    # shift the true prototype (edge pixels repeat, no wrap-around seam) in one gather
    dy, dx = truth.shift[start:stop, 0], truth.shift[start:stop, 1]
    rows = np.clip(np.arange(size)[None, :] - dy[:, None], 0, size - 1)
    cols = np.clip(np.arange(size)[None, :] - dx[:, None], 0, size - 1)
    where = (rows[:, :, None] * size + cols[:, None, :]).reshape(m, 1, size * size)
    obj = np.take_along_axis(flat_protos[truth.true_label[start:stop]], where, axis=2)
    w_true, w_conf, w_noise = 1 - d, f32(_CONFUSER_WEIGHT) * d, f32(_NOISE_WEIGHT) * d
    signal = w_true * obj
    signal += w_conf * flat_protos[truth.confuser[start:stop]]
    signal += w_noise * _smooth_fields(rng, m, ch, size).reshape(m, ch, size * size)
    signal /= np.sqrt(w_true**2 + w_conf**2 + w_noise**2)
    # white pixel noise: uniform with unit std (3x cheaper to draw than Gaussian)
    white = rng.random((m, ch, size * size), dtype=f32)
    white -= f32(0.5)
    white *= f32(np.sqrt(12.0)) * (f32(_PIXEL_NOISE[0]) + f32(_PIXEL_NOISE[1]) * d)
    signal += white
    signal *= f32(_CONTRAST * 255.0)
    signal += f32(0.5 * 255.0 + 0.5)  # +0.5: truncation below rounds to nearest
    np.clip(signal, 0, 255, out=signal)
    pixels = signal.astype(np.uint8).reshape(m, ch, size, size)
    return np.ascontiguousarray(pixels.transpose(0, 2, 3, 1))


def _encode_chunk(
    out: DatasetDir,
    keys: list[str],
    pixels: np.ndarray,
    cfg: SynthConfig,
    start: int,
    targets: np.ndarray | None,
) -> tuple[list[int], list[str]]:
    sizes, hashes = [], []
    for offset, (key, px) in enumerate(zip(keys, pixels, strict=True)):
        data = encode_image(px, cfg.format)
        if targets is not None:
            i = start + offset
            data = pad_to(data, int(targets[i]), cfg.format, seed=cfg.seed, sample_id=i)
        out.write(key, data)
        sizes.append(len(data))
        hashes.append(content_hash(data))
    return sizes, hashes


def meta_for(cfg: SynthConfig) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "format": cfg.format,
        "image_size": cfg.image_size,
        "channels": cfg.channels,
        "num_classes": cfg.classes,
        "class_names": [f"class{k}" for k in range(cfg.classes)],
        "generator": GENERATOR,
        "seed": cfg.seed,
        "synth": {"n": cfg.n, "noise": cfg.noise, "difficulty_beta": list(_BETA)},
        "truth_file": TRUTH_FILE,
    }
    if cfg.draw > 0:  # only then: the default sets' dataset.json stays as it was
        meta["synth"]["draw"] = cfg.draw
    if cfg.easy > 0:  # only then: the default sets' dataset.json stays as it was
        meta["synth"].update(easy=cfg.easy, easy_difficulty_beta=list(_EASY_BETA))
    model = size_model(cfg.sizes)
    if model is not None:  # only then: the small sets' dataset.json stays as it was
        meta["sizes"] = {"model": cfg.sizes, **model.describe()}
    return meta


def make_synth(
    out: str | os.PathLike[str],
    cfg: SynthConfig | None = None,
    *,
    force: bool = False,
    progress: bool = False,
    workers: int | None = None,
) -> Manifest:
    """Generate the dataset into ``out`` (all-or-nothing) and return its manifest.

    A place that cannot be written (``/proc/x``, a read-only mount, a full disk)
    is a :class:`HotsetError` naming ``out`` and the system's reason, which the
    CLI prints as one line, not a traceback.
    """
    cfg = cfg if cfg is not None else SynthConfig()
    try:
        return _make_synth(out, cfg, force=force, progress=progress, workers=workers)
    except OSError as exc:
        raise HotsetError(
            f"cannot write the data set to {os.fspath(out)!r}: {exc} "
            "(give --out a place in a writable directory)"
        ) from None


def _make_synth(
    out: str | os.PathLike[str],
    cfg: SynthConfig,
    *,
    force: bool,
    progress: bool,
    workers: int | None,
) -> Manifest:
    truth = ground_truth(cfg)
    protos = prototypes(cfg)
    keys = [sample_key(i, cfg.n, cfg.format) for i in range(cfg.n)]
    model = size_model(cfg.sizes)
    targets = None if model is None else model.draw(cfg.n, cfg.seed)
    workers = workers if workers is not None else max(1, min(4, os.cpu_count() or 1))
    sizes: list[int] = []
    hashes: list[str] = []
    from tqdm import tqdm

    with (
        DatasetDir(out, force=force) as build,
        ThreadPoolExecutor(max_workers=workers) as pool,
        tqdm(total=cfg.n, desc="synth", unit="img", file=sys.stderr, disable=not progress) as bar,
    ):
        pending = []
        for start in range(0, cfg.n, _CHUNK):
            stop = min(start + _CHUNK, cfg.n)
            pixels = _render_chunk(cfg, truth, protos, start, stop)
            pending.append(
                pool.submit(_encode_chunk, build, keys[start:stop], pixels, cfg, start, targets)
            )
            # keep at most ~2 chunks per worker in flight so memory stays flat
            while len(pending) > 2 * workers:
                _collect(pending.pop(0), sizes, hashes, bar)
        for fut in pending:
            _collect(fut, sizes, hashes, bar)
        manifest = Manifest(np.arange(cfg.n), keys, sizes, truth.label, hashes, meta_for(cfg))
        manifest.save(build.path)
        truth.save(build.path / TRUTH_FILE)
        build.commit()
    return manifest


def _collect(fut: Any, sizes: list[int], hashes: list[str], bar: Any) -> None:
    s, h = fut.result()
    sizes.extend(s)
    hashes.extend(h)
    bar.update(len(s))
