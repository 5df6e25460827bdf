"""The headline job: real training through the real loader over a slow store.

Every row trains the same small CNN (same initial weights) for the same number
of epochs on the same synthetic training split, reading it through one job-wide
modeled server (:class:`~hotset.storage.shared_throttle.SharedThrottledStore`:
real sleeping, ``latency_ms`` per request, ``concurrency`` requests in flight
across all DataLoader workers). Rows:

* ``torch`` -- a plain ``torch.utils.data.DataLoader`` (``shuffle=True``), what a
  PyTorch user writes;
* one row per hotset system, its cache in shared memory (the embedded default,
  no server), with the training loop's real per-sample losses fed back;
* the validation split is decoded once from local files and never cached.

Samples/s and stall are wall-clock measurements on this machine; storage reads
and hit ratios are counts. Nothing in this module is simulated.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hotset.errors import HotsetError

DEFAULT_SYSTEMS = ("pytorch", "lru", "minio", "shade")


def prepare(out: Path, *, n: int, seed: int, progress: bool = True) -> Path:
    """Generate (or reuse) the synthetic dataset under ``out``."""
    from hotset.data import Manifest
    from hotset.data.synth import SynthConfig, make_synth

    data_dir = out / f"synth-{n}-s{seed}"
    if data_dir.is_dir():
        try:
            if len(Manifest.load(data_dir)) == n:
                return data_dir
        except HotsetError:
            pass
    make_synth(data_dir, SynthConfig(n=n, seed=seed), force=True, progress=progress)
    return data_dir


class _Split:
    """The training manifest (ids 0..n_train-1) and the decoded validation tensors."""

    def __init__(self, data_dir: Path, val_frac: float) -> None:
        import torch

        from hotset.data import Manifest
        from hotset.data.decode import decode_many
        from hotset.storage import LocalStore

        full = Manifest.load(data_dir)
        n_val = max(1, int(len(full) * val_frac))
        n_train = len(full) - n_val
        if n_train < 1:
            raise HotsetError(f"val_frac={val_frac} leaves no training samples")
        keys = list(full.keys)
        self.meta = dict(full.meta)
        self.train = Manifest(
            np.arange(n_train),
            keys[:n_train],
            full.sizes[:n_train],
            full.labels[:n_train],
            list(full.hashes[:n_train]),
            self.meta,
        )
        local = LocalStore(data_dir)
        self.local = local
        blobs = local.read_many(keys[n_train:])
        self.val_x = torch.from_numpy(decode_many(blobs, keys[n_train:]))
        self.val_y = torch.from_numpy(np.array(full.labels[n_train:], dtype=np.int64))


class _Trainer:
    """The same model, optimiser and schedule for every row (as in the simulator)."""

    def __init__(self, meta: dict[str, Any], *, seed: int, lr: float, epochs: int) -> None:
        import torch

        from hotset.sim.models import make_model

        torch.manual_seed(seed)
        self.net = make_model("cnn", meta)
        self.opt = torch.optim.SGD(self.net.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4)
        self.base_lr, self.epochs = lr, epochs

    def set_epoch(self, epoch: int) -> None:
        lr = self.base_lr * (1 + math.cos(math.pi * epoch / self.epochs)) / 2
        for group in self.opt.param_groups:
            group["lr"] = lr

    def step(self, x: Any, y: Any, w: Any | None) -> Any:
        import torch.nn.functional as F

        self.net.train()
        loss = F.cross_entropy(self.net(x), y, reduction="none")
        weighted = loss if w is None else loss * w.to(loss.dtype)
        self.opt.zero_grad()
        weighted.mean().backward()
        self.opt.step()
        return loss.detach()

    def accuracy(self, x: Any, y: Any) -> float:
        import torch

        self.net.eval()
        with torch.no_grad():
            pred = self.net(x).argmax(dim=1)
        return float((pred == y).float().mean())


def _plain_loader(split: _Split, store: Any, *, workers: int, batch_size: int, seed: int) -> Any:
    import torch
    from torch.utils.data import DataLoader

    from hotset.bench.loader import PlainDataset

    ds = PlainDataset(store, list(split.train.keys), np.asarray(split.train.labels))
    return DataLoader(
        ds,  # type: ignore[arg-type]  # map-style by duck typing, as PyTorch users write it
        batch_size=batch_size,
        shuffle=True,
        num_workers=workers,
        generator=torch.Generator().manual_seed(seed),
    )


def run_row(
    name: str,
    split: _Split,
    store: Any,
    *,
    cache_frac: float,
    epochs: int,
    batch_size: int,
    workers: int,
    seed: int,
    lr: float,
    log: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Train one row; ``name == "torch"`` is the plain PyTorch DataLoader.

    ``log`` hears one line per epoch, so a run of minutes is never silent.
    """
    from hotset.bench.loader import timed_batches
    from hotset.torch import HotsetDataset
    from hotset.torch import loader as make_loader

    trainer = _Trainer(split.meta, seed=seed, lr=lr, epochs=epochs)
    stall = 0.0
    samples = 0
    start = time.perf_counter()
    reads0 = None
    if name == "torch":
        dl = _plain_loader(split, store, workers=workers, batch_size=batch_size, seed=seed)
        for epoch in range(epochs):
            trainer.set_epoch(epoch)
            s, k = timed_batches(iter(dl), 0.0, lambda b: trainer.step(b[0], b[1], None))
            stall += s
            samples += k
            log(f"  {name} epoch {epoch + 1}/{epochs}: {k} samples, stall {s:.1f} s")
        hit_ratio: float | None = None
        reads = samples
        reads0 = len(split.train)
        distinct = float(len(split.train))  # shuffle=True: a permutation every epoch
    else:
        data = HotsetDataset(manifest=split.train, store=store, decode="image")
        # a system without a cache (capabilities.caches False) opens none, whatever the size
        with make_loader(
            data,
            system=name,
            cache=cache_frac,
            batch_size=batch_size,
            num_workers=workers,
            seed=seed,
        ) as ld:
            for epoch in range(epochs):
                ld.set_epoch(epoch)
                trainer.set_epoch(epoch)

                def on_batch(batch: Any) -> None:
                    x, y, ids, w = batch
                    ld.update(ids, trainer.step(x, y, w))

                s, k = timed_batches(iter(ld), 0.0, on_batch)
                stall += s
                samples += k
                accuracy = trainer.accuracy(split.val_x, split.val_y)
                ld.record_validation(accuracy)
                row = ld.report()[-1]
                log(
                    f"  {name} epoch {epoch + 1}/{epochs}: exact hits "
                    f"{row['exact_hit_ratio']:.2f}, {row['unique_ids_trained']} distinct, "
                    f"stall {s:.1f} s, val acc {accuracy:.3f}"
                )
            report = ld.report()
        later = report[1:] or report
        requests = sum(r["requests"] for r in later)
        hit_ratio = sum(r["exact_hits"] for r in later) / max(1, requests)
        reads = sum(r["storage_requests"] + r["rebuild_reads"] for r in report)
        reads0 = report[0]["storage_requests"]
        distinct = sum(r["unique_ids_trained"] for r in report) / len(report)
    wall = time.perf_counter() - start
    accuracy = trainer.accuracy(split.val_x, split.val_y)
    return {
        "system": name,
        "exact_hit_ratio": None if hit_ratio is None else round(hit_ratio, 4),
        "storage_reads_per_epoch": round(reads / epochs, 1),
        "storage_reads_epoch1": reads0,
        # coverage beside the hit ratio: distinct samples trained per epoch
        "unique_ids_trained_per_epoch": round(distinct, 1),
        "samples_per_s": round(samples / wall, 1),
        "stall_share": round(stall / wall, 3),
        "stall_seconds": round(stall, 2),
        "val_accuracy": round(accuracy, 4),
        "wall_seconds": round(wall, 2),
    }


def run(
    *,
    out: Path,
    n: int = 5000,
    epochs: int = 7,
    cache_frac: float = 0.2,
    systems: tuple[str, ...] = DEFAULT_SYSTEMS,
    seed: int = 0,
    workers: int = 2,
    batch_size: int = 128,
    latency_ms: float = 2.0,
    concurrency: int = 4,
    lr: float = 0.05,
    val_frac: float = 0.2,
    log: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Every row of the headline table; see the module docstring for what each means."""
    from hotset.storage.shared_throttle import SharedThrottledStore

    if epochs < 1:
        raise HotsetError(f"--epochs must be at least 1, got {epochs}")
    if not 0 < cache_frac <= 1:
        raise HotsetError(f"--cache-frac must be in (0, 1], got {cache_frac}")
    data_dir = prepare(out, n=n, seed=seed)
    split = _Split(data_dir, val_frac)
    store = SharedThrottledStore(split.local, latency_ms=latency_ms, max_concurrency=concurrency)
    rows = []
    for name in ("torch", *systems):
        log(
            f"training {epochs} epochs through {'the plain DataLoader' if name == 'torch' else name} ..."
        )
        rows.append(
            run_row(
                name,
                split,
                replace_store(store),
                cache_frac=cache_frac,
                epochs=epochs,
                batch_size=batch_size,
                workers=workers,
                seed=seed,
                lr=lr,
                log=log,
            )
        )
    base = rows[0]["samples_per_s"]
    for row in rows:
        row["speedup_vs_torch"] = round(row["samples_per_s"] / base, 2) if base else None
    return {
        "params": {
            "n_train": len(split.train),
            "n_val": len(split.val_y),
            "epochs": epochs,
            "cache_frac": cache_frac,
            "workers": workers,
            "batch_size": batch_size,
            "latency_ms": latency_ms,
            "concurrency": concurrency,
            "seed": seed,
            "dataset": str(data_dir),
        },
        "table": rows,
        "notes": [
            "Real training (small CNN, CPU) through the real loader; the store sleeps "
            f"{latency_ms} ms per request with {concurrency} requests in flight job-wide.",
            "exact_hit_ratio counts epochs 2..E; substitutions and storage reads are never merged "
            "into it. samples/s and stall are wall-clock on this machine.",
        ],
    }


def replace_store(store: Any) -> Any:
    """A fresh throttle per row, so one row's queue never delays the next."""
    return type(store)(
        store.inner,
        latency_ms=store.latency_ms,
        bandwidth_mb_s=store.bandwidth_mb_s,
        max_concurrency=store.max_concurrency,
    )


def plot(result: dict[str, Any], path: Path) -> Path:
    """The headline table as bars: throughput vs torch, exact hits, distinct samples trained."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["table"]
    names = [r["system"] for r in rows]
    panels = (
        ("samples/s vs torch", [r["speedup_vs_torch"] or 0 for r in rows]),
        ("exact-hit ratio (epochs 2..E)", [r["exact_hit_ratio"] or 0 for r in rows]),
        ("distinct samples trained / epoch", [r["unique_ids_trained_per_epoch"] for r in rows]),
        ("validation accuracy", [r["val_accuracy"] for r in rows]),
    )
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.6))
    for ax, (title, values) in zip(axes, panels, strict=True):
        ax.bar(names, values, color=[f"C{i % 10}" for i in range(len(names))])
        ax.set_title(title, fontsize=9)
        ax.tick_params(axis="x", labelrotation=45, labelsize=8)
        ax.grid(axis="y", alpha=0.3)
    p = result["params"]
    fig.suptitle(
        f"hotset demo: {p['n_train']} samples, {p['epochs']} epochs, cache {p['cache_frac']:.0%}, "
        f"{p['latency_ms']:g} ms per request",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
