"""``hotset bench pipeline``: does the data path keep a real model step busy?

Every row trains the same model (:mod:`hotset.bench.trainstep`: ResNet-50 where
torchvision imports, a small convnet otherwise) on the same generated photo-like
JPEGs (:mod:`hotset.data.photos`: ImageNet's dimensions and file sizes), with the
same batch size and DataLoader workers. Rows:

* ``model-only`` -- the step on one batch already on the device, repeated: the
  accelerator's limit, what every other row is a share of;
* ``no-io`` -- a DataLoader over the JPEG bytes in memory with the standard
  per-sample transform in its workers (:mod:`hotset.bench.sample_transform`):
  decoding and augmenting as PyTorch users do, with no storage at all;
* ``torch`` -- the same DataLoader over the store model, tuned as a careful user
  would (:mod:`hotset.bench.torch_baseline`: at least the store's requests in flight);
* ``SYSTEM/worker`` and ``SYSTEM/device`` for each hotset system: the real loader
  over the store model with ``augment=RandomResizedCrop(size)``, the workers
  cropping to uint8 (``augment_on="worker"``) or the training process decoding and
  augmenting on the device (``"device"``: nvJPEG where torchvision imports).

Each row reports samples/s after the first epoch (and overall, and per epoch), its
ratio to ``model-only`` and to ``no-io``, the share of the time the loop waited for
data (``stall_share``, after the first epoch), CPU seconds per sample in the
training process and in its workers apart (:mod:`hotset.bench.cputime`), storage
requests and MB per epoch, exact hits, substitutions and fetched ahead apart, and whether every
sample arrived once per epoch.

Timing: the clock stops at each epoch's end only after the device has finished
what was queued (``torch.cuda.synchronize``), so queued work is never counted as
done. Within an epoch nothing waits for the device but a learning system's
``update``, which reads the losses: the loop gives each batch's losses once the
next batch's step is queued (by their ids, as a loop that prefetches batches does),
so that read waits for the step before, never leaving the device idle.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hotset.bench.cputime import CpuTimes, cpu_times
from hotset.bench.pipeline_options import DEFAULT_SYSTEMS, PATHS, PipelineOptions
from hotset.bench.trainstep import TrainStep, build_model, model_only
from hotset.errors import HotsetError

__all__ = [
    "DEFAULT_SYSTEMS", "PATHS", "PipelineOptions", "Setup", "resolve_device", "run", "with_ratios",
]  # fmt: skip

Log = Callable[[str], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class Setup:
    """What every row shares: the data, the store model, the transform and the step."""

    data: Any  # HotsetDataset over the local files
    store: Any  # StoreModel
    spec: Any  # RandomResizedCrop
    step: TrainStep
    workers: int
    batch_size: int
    epochs: int
    cache_frac: float
    seed: int
    io_threads: int
    classes: int
    #: the model the step trains, as resolved (``auto`` picked one)
    model: str = ""

    @property
    def cuda(self) -> bool:
        return self.step.device.type == "cuda"

    @property
    def n(self) -> int:
        return len(self.data.manifest)


@dataclass
class Epochs:
    """What one row's training loop measured, epoch by epoch."""

    seconds: list[float] = dataclasses.field(default_factory=list)
    samples: list[int] = dataclasses.field(default_factory=list)
    stall: list[float] = dataclasses.field(default_factory=list)
    every_id: bool = True


def _train(setup: Setup, epoch_batches: Callable[[int], Iterator[Any]], feedback: Any) -> Epochs:
    """Train ``setup.epochs`` epochs on ``epoch_batches(epoch)``'s ``(x, y, ids)``."""
    out = Epochs()
    for epoch in range(setup.epochs):
        start, stall = time.perf_counter(), 0.0
        seen: list[np.ndarray] = []
        batches = epoch_batches(epoch)
        late = None  # the previous batch's (ids, losses), given once this batch's step is queued
        while True:
            t0 = time.perf_counter()
            try:
                x, y, ids = next(batches)
            except StopIteration:
                break
            stall += time.perf_counter() - t0
            loss = setup.step(x, y)
            if feedback is not None:
                if late is not None:
                    feedback(*late)
                late = (ids, loss)
            seen.append(np.asarray(ids))
        if late is not None:
            feedback(*late)
        setup.step.sync()
        out.seconds.append(time.perf_counter() - start)
        out.stall.append(stall)
        ids_seen = np.concatenate(seen) if seen else np.zeros(0, dtype=np.int64)
        out.samples.append(len(ids_seen))
        out.every_id &= bool(np.array_equal(np.sort(ids_seen), np.arange(setup.n)))
    return out


def _row(name: str, setup: Setup, epochs: Epochs, cpu: CpuTimes, **extra: Any) -> dict[str, Any]:
    """A row's speed, stall and CPU figures from what its loop measured."""
    later = slice(1, None) if len(epochs.seconds) > 1 else slice(None)
    wall, samples = sum(epochs.seconds[later]), sum(epochs.samples[later])
    total = sum(epochs.samples)
    per = [
        round(k / s, 1) if s > 0 else None
        for k, s in zip(epochs.samples, epochs.seconds, strict=True)
    ]
    return {
        "name": name,
        "samples_per_s": round(samples / wall, 1) if wall > 0 else None,
        "samples_per_s_overall": round(total / sum(epochs.seconds), 1),
        "per_epoch_samples_per_s": per,
        "stall_share": round(sum(epochs.stall[later]) / wall, 3) if wall > 0 else None,
        "cpu_s_per_sample_main": round(cpu.main / total, 6) if total else None,
        "cpu_s_per_sample_workers": (
            None if cpu.descendants is None or not total else round(cpu.descendants / total, 6)
        ),
        "every_id_every_epoch": epochs.every_id,
        "wall_seconds": round(sum(epochs.seconds), 3),
        **extra,
    }


def model_only_row(setup: Setup) -> dict[str, Any]:
    """The model step alone on a batch already on the device."""
    steps = max(5, (setup.n // setup.batch_size) * max(1, setup.epochs - 1))
    before = cpu_times()
    start = time.perf_counter()
    rate = model_only(
        setup.step,
        batch_size=setup.batch_size,
        size=setup.spec.size,
        classes=setup.classes,
        steps=steps,
    )
    cpu = cpu_times() - before
    samples = steps * setup.batch_size
    return {
        "name": "model-only",
        "samples_per_s": round(rate, 1),
        "samples_per_s_overall": round(rate, 1),
        "per_epoch_samples_per_s": None,
        "stall_share": 0.0,
        "cpu_s_per_sample_main": round(cpu.main / samples, 6),
        "cpu_s_per_sample_workers": None,
        "every_id_every_epoch": None,
        "wall_seconds": round(time.perf_counter() - start, 3),
        "steps": steps,
        "storage_requests_per_epoch": 0,
        "storage_mb_per_epoch": 0.0,
    }


def plain_row(name: str, setup: Setup, store: Any, how: Any, transform: Any) -> dict[str, Any]:
    """A PyTorch DataLoader row (``no-io`` or ``torch``): the per-sample transform in its
    workers, read as ``how`` (a :class:`~hotset.bench.torch_baseline.Baseline`) says."""
    from hotset.bench.sample_transform import TransformedDataset
    from hotset.bench.torch_baseline import dataloader

    manifest = setup.data.manifest
    ds = TransformedDataset(
        store, list(manifest.keys), np.asarray(manifest.labels),
        transform=transform, threads=how.threads_per_worker,
    )  # fmt: skip
    dl = dataloader(ds, how, batch_size=setup.batch_size, seed=setup.seed)
    before = cpu_times()
    try:
        epochs = _train(setup, lambda _epoch: iter(dl), None)
    finally:
        ds.close()  # (each epoch's workers were joined when its iterator ran out)
    mb = manifest.total_bytes / 1e6
    return _row(
        name, setup, epochs, cpu_times() - before,
        storage_requests_per_epoch=setup.n, storage_mb_per_epoch=round(mb, 3),
        exact_hit_ratio=None, substitution_ratio=None, **how.fields(setup.store.max_concurrency),
    )  # fmt: skip


def hotset_row(system: str, path: str, setup: Setup) -> dict[str, Any]:
    """One hotset system's row, augmenting on ``path`` (``"worker"`` or ``"device"``)."""
    import torch

    from hotset.systems.registry import parse_system
    from hotset.torch import loader as make_loader

    name, options = parse_system(system)
    before = cpu_times()
    with make_loader(
        setup.data.with_store(setup.store.throttle(setup.data.store)),
        system=name, system_options=options, cache=setup.cache_frac,
        batch_size=setup.batch_size, num_workers=setup.workers, seed=setup.seed,
        io_threads=setup.io_threads, check_store="off", pin_memory=setup.cuda,
        augment=setup.spec, augment_on=path, device=str(setup.step.device),
    ) as ld:  # fmt: skip
        learns = ld.system.capabilities.learns

        def feedback(ids: Any, loss: Any) -> None:
            ld.update(ids, loss)  # reads the losses: a device sync, as any such loop has

        if ld.system.capabilities.evaluates:  # ImPACT's set S: a stand-in forward pass
            ld.evaluate_with(lambda _x, _y, ids: torch.rand(len(ids)) + 0.1)

        def epoch_batches(epoch: int) -> Iterator[Any]:
            ld.set_epoch(epoch)
            return ((x, y, ids) for x, y, ids, _w in ld)

        epochs = _train(setup, epoch_batches, feedback if learns else None)
        report = ld.report()
    requests = sum(r["requests"] for r in report)
    return _row(
        f"{system}/{path}", setup, epochs, cpu_times() - before, system=system, path=path,
        storage_requests_per_epoch=round(
            sum(r["storage_requests"] + r["rebuild_reads"] for r in report) / len(report), 1
        ),
        storage_mb_per_epoch=round(
            sum(r["storage_bytes"] + r["rebuild_bytes"] + r["pack_bytes"] for r in report)
            / len(report) / 1e6, 3,
        ),
        exact_hit_ratio=round(sum(r["exact_hits"] for r in report) / requests, 4),
        substitution_ratio=round(sum(r["substitutions"] for r in report) / requests, 4),
        fetched_ahead_ratio=round(sum(r["fetched_ahead"] for r in report) / requests, 4),
    )  # fmt: skip


def with_ratios(table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row with its samples/s over ``model-only``'s and over ``no-io``'s."""
    rates = {row["name"]: row["samples_per_s"] for row in table}
    top, ceiling = rates.get("model-only"), rates.get("no-io")

    def ratio(rate: float | None, base: float | None) -> float | None:
        return round(rate / base, 3) if rate and base else None

    return [
        row
        | {
            "vs_model_only": ratio(row["samples_per_s"], top),
            "vs_no_io": ratio(row["samples_per_s"], ceiling),
        }
        for row in table
    ]


def _check_budget(data: Any, systems: Sequence[str], cache_frac: float, batch: int) -> None:
    """The cache budget every caching system gets must hold one batch (the loader's rule)."""
    from hotset.systems.registry import capabilities_of, parse_system
    from hotset.torch.checks import check_budget
    from hotset.units import parse_budget

    sizes = np.asarray(data.manifest.sizes, dtype=np.int64)
    if any(capabilities_of(parse_system(s)[0]).caches for s in systems):
        check_budget(parse_budget(cache_frac, total=int(sizes.sum()), name="cache"), sizes, batch)


def _dataset(cfg: Any, where: Path, systems: Sequence[str], seed: int, log: Log) -> Any:
    """The photos of ``cfg`` under ``where`` (made there unless already made with ``cfg``),
    packed into chunks when a system reads them, opened without retries."""
    from hotset.bench.workloads import ensure_packed, needs_chunks
    from hotset.data.manifest import Manifest
    from hotset.data.photos import PHOTOS_GENERATOR, make_photos
    from hotset.torch import open_dataset

    meta = Manifest.load(where / "manifest.csv").meta if (where / "manifest.csv").is_file() else {}
    if meta and meta.get("generator") != PHOTOS_GENERATOR:
        raise HotsetError(f"--data {str(where)!r} holds another data set; give a new directory")
    if meta.get("photos", {}).get("config") != dataclasses.asdict(cfg):
        log(f"pipeline: generating {cfg.n} JPEGs of {cfg.width}x{cfg.height} in {where} ...")
        start = time.perf_counter()
        make_photos(where, cfg, force=bool(meta))  # replaces only a photo set made otherwise
        log(f"pipeline: generated in {time.perf_counter() - start:.1f} s")
    if needs_chunks(systems):
        ensure_packed(where, seed=seed)
    return open_dataset(where, decode="bytes", retries=0)


def resolve_device(name: str) -> Any:
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except (RuntimeError, ValueError):
        raise HotsetError(f"device must be auto, cpu or cuda[:N], got {name!r:.80}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise HotsetError(f"device {name!r}: CUDA is not available here")
    return device


def _device_name(device: Any) -> str:
    import platform

    import torch

    if device.type == "cuda":
        return str(torch.cuda.get_device_name(device))
    return f"CPU ({platform.processor() or platform.machine()})"


#: ``run()``'s options: the command line's defaults
DEFAULT_OPTIONS = PipelineOptions()


def run(
    opts: PipelineOptions = DEFAULT_OPTIONS,
    *,
    store: Any,
    log: Log = _stderr,
) -> dict[str, Any]:
    """Measure every row once (see the module docstring) over ``store`` (a
    :class:`~hotset.storage.presets.StoreModel`); the photos are generated into
    ``opts.data_dir`` if given, reused from there when it already holds exactly that set."""
    where = resolve_device(opts.device)
    sizes = opts.sizes(where.type)
    photos = opts.photos(sizes)
    with tempfile.TemporaryDirectory(prefix="hotset-pipeline-") as tmp:
        folder = Path(opts.data_dir) if opts.data_dir is not None else Path(tmp) / "photos"
        data = _dataset(photos, folder, opts.systems, opts.seed, log)
        # before any row, not at the 6th
        _check_budget(data, opts.systems, opts.cache_frac, sizes.batch_size)
        setup = _setup(data, store, photos.classes, sizes.model, where, size=opts.crop_size,
                       batch_size=sizes.batch_size, workers=sizes.workers, epochs=sizes.epochs,
                       cache_frac=opts.cache_frac, seed=opts.seed,
                       io_threads=opts.io_threads)  # fmt: skip
        table, transform_name = _rows(setup, opts.systems, opts.paths, log)
    return {
        "params": _params(setup, photos, sizes.model, transform_name),
        "table": with_ratios(table),
        "notes": _notes(setup, transform_name),
    }


def _setup(data: Any, store: Any, classes: int, model: str, device: Any, **common: Any) -> Setup:
    import torch

    from hotset.vision.augment import RandomResizedCrop

    cuda = device.type == "cuda"
    if cuda:
        torch.backends.cudnn.benchmark = True  # the model-only row lets it pick its kernels
    net, resolved = build_model(model, classes)
    step = TrainStep(net, device, bf16=cuda, channels_last=cuda)
    spec = RandomResizedCrop(common.pop("size"), channels_last=cuda)
    return Setup(
        data=data, store=store, spec=spec, step=step, classes=classes, model=resolved, **common
    )


def _no_io_row(setup: Setup, transform: Any) -> dict[str, Any]:
    """The DataLoader over the bytes already in memory: the standard transform, no I/O."""
    from hotset.bench.loader import MemoryStore
    from hotset.bench.torch_baseline import untuned

    inner = setup.data.store
    memory = MemoryStore({k: inner.read(k) for k in setup.data.manifest.keys})
    how = dataclasses.replace(untuned(workers=setup.workers), pin_memory=setup.cuda)
    row = plain_row("no-io", setup, memory, how, transform)
    return row | {"storage_requests_per_epoch": 0, "storage_mb_per_epoch": 0.0}


def _torch_row(setup: Setup, transform: Any) -> dict[str, Any]:
    """The tuned DataLoader over the store model (at least its requests in flight)."""
    from hotset.bench.torch_baseline import tuned

    how = tuned(setup.store.max_concurrency, workers=setup.workers, io_threads=setup.io_threads)
    how = dataclasses.replace(how, pin_memory=setup.cuda)
    return plain_row("torch", setup, setup.store.throttle(setup.data.store), how, transform)


def _rows(
    setup: Setup, systems: Sequence[str], paths: Sequence[str], log: Log
) -> tuple[list[dict[str, Any]], str]:
    """Every row, in order, each logged as it finishes."""
    from hotset.bench.sample_transform import sample_transform

    transform, transform_name = sample_transform(setup.spec)
    jobs: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("model-only", functools.partial(model_only_row, setup)),
        ("no-io", functools.partial(_no_io_row, setup, transform)),
        ("torch", functools.partial(_torch_row, setup, transform)),
    ]
    for system in systems:
        for path in paths:
            jobs.append((f"{system}/{path}", functools.partial(hotset_row, system, path, setup)))
    table = []
    for name, job in jobs:
        log(f"pipeline: {name} ...")
        row = job()
        log(f"pipeline: {name}: {row['samples_per_s']} samples/s ({row['wall_seconds']:.1f} s)")
        table.append(row)
    return table, transform_name


def _params(setup: Setup, photos: Any, model: str, transform_name: str) -> dict[str, Any]:
    import torch

    from hotset.vision.decode import torchvision_decodes

    manifest = setup.data.manifest
    sizes = np.asarray(manifest.sizes, dtype=np.float64)
    device = setup.step.device
    return {
        "device": str(device),
        "device_name": _device_name(device),
        "model": setup.model or model,
        "bf16_autocast": setup.step.bf16,
        "channels_last": setup.step.channels_last,
        "batch_size": setup.batch_size,
        "workers": setup.workers,
        "epochs": setup.epochs,
        "cache_frac": setup.cache_frac,
        "seed": setup.seed,
        "io_threads": setup.io_threads,
        "crop_size": setup.spec.size,
        "store": setup.store.as_dict(),
        "images": {
            "n": len(manifest),
            "width": photos.width,
            "height": photos.height,
            "portrait_share": photos.portrait,
            "jpeg_quality": photos.quality,
            "mean_bytes": round(float(sizes.mean())),
            "std_bytes": round(float(sizes.std())),
            "total_mb": round(float(sizes.sum()) / 1e6, 3),
        },
        "per_sample_transform": transform_name,
        "device_path_decoder": "torchvision.io.decode_jpeg" if torchvision_decodes() else "Pillow",
        "torch": torch.__version__,
        "cuda": torch.version.cuda if setup.cuda else None,
    }


def _notes(setup: Setup, transform_name: str) -> list[str]:
    store = setup.store
    link = "" if math.isinf(store.bandwidth_mb_s) else f", one {store.bandwidth_mb_s:g} MB/s link"
    return [
        f"store model {store.describe()}: {store.latency_ms:g} ms per request, "
        f"{store.max_concurrency} requests in flight across all workers{link} (real clock)",
        "samples_per_s and stall_share count the epochs after the first (the first holds "
        "worker start-up and, for hotset's systems, the cold cache); samples_per_s_overall "
        "every epoch; each epoch's clock stops after the device finished its queued work",
        f"no-io and torch: the standard per-sample transform in the workers ({transform_name}), "
        "float32 batches handed over; torch reads through the store model with a thread pool "
        "per worker (at least the store's requests in flight); hotset rows: "
        "augment=RandomResizedCrop (hotset.vision), worker = workers decode and crop to uint8, "
        "device = the training process decodes and augments on the device",
        "cpu_s_per_sample_main: user+system seconds of the training process (all its threads) "
        "per delivered sample, via getrusage(RUSAGE_SELF); cpu_s_per_sample_workers: of its "
        "descendant processes (DataLoader workers), via RUSAGE_CHILDREN for reaped ones plus "
        "/proc/<pid>/stat for live ones; the whole row, loader start and end included",
        "storage requests and MB are per epoch, averaged over the epochs (rebuild reads and "
        "packing reads included); no-io reads none; torch reads every sample every epoch",
    ]
