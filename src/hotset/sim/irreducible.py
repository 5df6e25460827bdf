"""Irreducible losses for RHO-loss in the live simulator: a small model on held-out halves.

Why: ``sampler=rho`` (:mod:`hotset.samplers.rho`) ranks ids by training loss minus
the loss of a model trained on held-out data. The loader's user brings that
model; the simulator has to make one. RHO-loss (Mindermann et al., ICML 2022)
trains the irreducible-loss model on a holdout split, and shows it can do without
one: split the training set in two halves, train a model on each, and score each
half with the model that did not see it. The simulator does that, so no training
sample is taken away from the run it is compared in:

* the halves are a seeded permutation of the training ids (``[seed, 43]``);
* each model is the simulator's small model for the images (``"auto"``: an MLP for
  8x8, the small CNN otherwise; RHO-loss finds a small irreducible-loss model good
  enough), trained :data:`IL_EPOCHS` epochs with the run's optimiser settings;
* each id's irreducible loss is the cross-entropy, in eval mode, of the model
  trained on the other half.

What it costs, charged on the run's modeled clock before its first epoch
(:func:`charge`): one read of every training sample from the modeled store (the
models train on the bytes held in memory), the models' steps at the run's compute
per step, and the scoring pass at a third of a step per batch. The figure is
reported as the run's ``setup``, and the benchmarks add it to the time to accuracy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

#: epochs each held-out model trains (a small model, as RHO-loss allows)
IL_EPOCHS = 5
#: the seed salt of the halves and the models' initialisation
_SALT = 43

FloatArray = npt.NDArray[np.float64]


def holdout_losses(
    x: Any,
    y: Any,
    *,
    make_net: Any,
    seed: int,
    batch_size: int,
    lr: float,
    epochs: int = IL_EPOCHS,
) -> FloatArray:
    """Each training id's loss under the model trained on the half it is not in.

    ``x``, ``y``: the training tensors (ids are their rows); ``make_net()`` a fresh
    model. Deterministic for a seed (one intra-op thread, seeded init and order).
    """
    import torch

    n = len(y)
    halves = np.array_split(np.random.default_rng([seed, _SALT]).permutation(n), 2)
    out = np.full(n, np.nan, dtype=np.float64)
    for part, (fit, score) in enumerate(((halves[0], halves[1]), (halves[1], halves[0]))):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed * 1000 + _SALT + part)
            net = make_net()
        _fit(net, x, y, fit, seed=seed + part, batch_size=batch_size, lr=lr, epochs=epochs)
        out[score] = _losses(net, x, y, score, batch_size)
    return out


def _fit(
    net: Any, x: Any, y: Any, ids: Any, *, seed: int, batch_size: int, lr: float, epochs: int
) -> None:
    import torch

    from hotset.importance.loss import per_sample_cross_entropy

    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4)
    net.train()
    for epoch in range(epochs):
        for group in opt.param_groups:
            group["lr"] = lr * 0.5 * (1.0 + math.cos(math.pi * epoch / epochs))
        order = np.random.default_rng([seed, _SALT, epoch]).permutation(ids)
        for start in range(0, len(order), batch_size):
            index = torch.from_numpy(order[start : start + batch_size])
            loss = per_sample_cross_entropy(net(x[index]), y[index]).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()


def _losses(net: Any, x: Any, y: Any, ids: Any, batch_size: int) -> FloatArray:
    import torch

    from hotset.importance.loss import per_sample_cross_entropy

    net.eval()
    parts = []
    with torch.no_grad():
        for start in range(0, len(ids), batch_size):
            index = torch.from_numpy(np.asarray(ids[start : start + batch_size]))
            parts.append(per_sample_cross_entropy(net(x[index]), y[index]).double().cpu().numpy())
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float64)


def steps(n: int, batch_size: int, epochs: int = IL_EPOCHS) -> tuple[int, int]:
    """(training steps of both models, scoring batches) for ``n`` training ids."""
    halves = (n + 1) // 2, n // 2
    train = sum(epochs * math.ceil(h / batch_size) for h in halves if h)
    return train, math.ceil(n / batch_size)


def charge(
    store: Any,
    keys: list[str],
    *,
    batch_size: int,
    compute_seconds: float,
    measured: float | None = None,
) -> dict[str, Any]:
    """Charge the held-out models on the virtual clock (module docstring); what was charged.

    ``measured``: the seconds their training and scoring took on the device, charged
    instead of ``compute_seconds`` per step (the live simulator's ``measure_compute``).
    """
    start = store.now
    store.read_many(keys)
    store.sync()
    read_seconds = store.now - start
    train, score = steps(len(keys), batch_size)
    compute = compute_seconds * (train + score / 3) if measured is None else measured
    if compute > 0:
        store.advance(compute)
    return {
        "irreducible_reads": len(keys),
        "irreducible_model_epochs": IL_EPOCHS,
        "irreducible_steps": train,
        "read_seconds": read_seconds,
        "modeled_seconds": store.now - start,
    }


__all__ = ["IL_EPOCHS", "charge", "holdout_losses", "steps"]
