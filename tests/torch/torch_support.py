"""Helpers the loader tests share (no pytest here: cheap to import)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from hotset.systems.base import System


def loss_of(ids: Any, epoch: int) -> np.ndarray:
    """A deterministic stand-in for per-sample losses: a hash of (id, epoch) in [0.1, 1.1)."""
    arr = np.asarray(ids, dtype=np.int64)
    return ((arr * 2654435761 + epoch * 40503) % 1000) / 1000.0 + 0.1


def bytes_and_twin(
    dataset_dir: Any, system: str, *, frac: float, seed: int, **options: Any
) -> tuple[Any, list[bytes], int, System]:
    """A bytes-decoding data set, each sample's stored bytes, a cache of ``frac`` of its
    bytes, and the system a loader would build for it (the engine's twin)."""
    import hotset
    from hotset.policies.base import Budget
    from hotset.systems.registry import build_system

    data = hotset.open_dataset(dataset_dir, decode="bytes")
    n = len(data.manifest)
    sizes = np.asarray(data.manifest.sizes, dtype=np.int64)
    capacity = int(frac * sizes.sum())
    budget = Budget(capacity_bytes=capacity, sizes=sizes)
    twin = build_system(system, n=n, budget=budget, seed=seed, **options)
    return data, [data[i][0] for i in range(n)], capacity, twin


def epoch_once_byte_exact(loader: Any, epoch: int, truth: list[bytes]) -> None:
    """One epoch of a ``decode="bytes"`` loader: every sample's bytes are the file's,
    and every id of the data set comes exactly once."""
    loader.set_epoch(epoch)
    seen: list[int] = []
    for x, _y, ids, _w in loader:
        for blob, sid in zip(x, ids.tolist(), strict=True):
            assert blob == truth[sid], f"epoch {epoch}: id {sid} bytes differ"
        seen += ids.tolist()
    assert sorted(seen) == list(range(len(truth))), f"epoch {epoch}: not each sample once"


def run_epoch(loader: Any, epoch: int, *, feedback: bool = True) -> list[tuple[Any, ...]]:
    """One epoch through the loader, giving ``loss_of`` feedback after every batch."""
    loader.set_epoch(epoch)
    batches = []
    for x, y, ids, w in loader:
        if feedback:
            loader.update(ids, torch.from_numpy(loss_of(ids.numpy(), epoch)))
        batches.append((x, y, ids.clone(), w.clone()))
    return batches


def reference_epoch(
    system: System, epoch: int, *, batch_size: int, lag: int, feedback: bool = True
) -> list[tuple[int, int, int, bool, tuple[int, ...]]]:
    """The simulator's loop, with feedback applied ``lag`` batches late (as the loader does).

    Returns one row per access: (requested, outcome, served, admitted, evicted).
    """
    order = np.asarray(system.begin_epoch(epoch), dtype=np.int64)
    rows: list[tuple[int, int, int, bool, tuple[int, ...]]] = []
    queue: list[tuple[int, np.ndarray, np.ndarray]] = []
    total, count = 0.0, 0
    n_batches = -(-len(order) // batch_size)

    def apply(until: int | None) -> None:
        nonlocal queue, total, count
        ready = [q for q in queue if until is None or q[0] <= until]
        queue = [q for q in queue if not (until is None or q[0] <= until)]
        for _, ids, losses in ready:
            system.feedback(ids, losses, epoch=epoch)
            total += float(losses.sum())
            count += len(losses)

    for k in range(n_batches):
        apply(k - lag - 1)
        served = []
        for sid in order[k * batch_size : (k + 1) * batch_size].tolist():
            d = system.access(sid)
            rows.append((sid, int(d.outcome), int(d.served), bool(d.admitted), tuple(d.evicted)))
            served.append(int(d.served))
        if feedback:
            ids = np.asarray(served, dtype=np.int64)
            queue.append((k, ids, loss_of(ids, epoch)))
    apply(None)
    system.end_epoch(train_loss=total / count if count else float("nan"), val_accuracy=None)
    return rows
