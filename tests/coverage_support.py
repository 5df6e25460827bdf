"""Drive an importance system as a driver does and record what it trained (no pytest here).

Shared by the coverage tests and by the script that pinned the paper's orders
(``python tests/coverage_support.py`` prints the digests of
:data:`PINNED` on whatever code is importable).
"""

from __future__ import annotations

import hashlib

import numpy as np
import numpy.typing as npt

from hotset.policies.base import Budget
from hotset.systems.registry import build_system

Ids = npt.NDArray[np.int64]
BATCH = 16


def skewed_losses(ids: Ids, n: int) -> npt.NDArray[np.float64]:
    """Hard samples stay hard: the lowest fifth of the ids lose 3x more, as a real
    model's hard samples would, so importance keeps drawing the same ones."""
    return 1.0 + (ids < n // 5) * 2.0 + ((ids * 7919) % 97) / 97.0


def drive(
    name: str, *, n: int, cache_frac: float, epochs: int, seed: int, **options: object
) -> tuple[list[Ids], list[Ids]]:
    """(orders, trained ids) of each epoch of system ``name`` at ``cache_frac``.

    Every planned id goes through ``access`` and the *served* id is trained and fed
    back (a substituting policy trains another id than it was asked for); the mean
    training loss falls by 1% an epoch and no accuracy is given, so SHADE's
    adaptivity sees no steep decline and no stagnant curve (no shuffle epoch).
    """
    sizes = np.full(n, 100, dtype=np.int64)
    budget = Budget(capacity_bytes=int(cache_frac * sizes.sum()), sizes=sizes)
    system = build_system(name, n=n, budget=budget, seed=seed, batch_size=BATCH, **options)
    orders: list[Ids] = []
    trained: list[Ids] = []
    for epoch in range(epochs):
        order = system.begin_epoch(epoch)
        served = np.array([system.access(int(s)).served for s in order.tolist()], dtype=np.int64)
        for start in range(0, len(served), BATCH):
            ids = served[start : start + BATCH]
            system.feedback(ids, skewed_losses(ids, n), epoch=epoch)
        system.end_epoch(train_loss=1.5 * 0.99**epoch, val_accuracy=None)
        orders.append(order)
        trained.append(np.unique(served))
    return orders, trained


def longest_gap(trained: list[Ids], n: int) -> int:
    """The most consecutive epochs any id went untrained, counted from epoch 0.

    Every id trained at least once in every window of ``K`` consecutive epochs
    <=> the longest gap is at most ``K - 1``.
    """
    gap = np.zeros(n, dtype=np.int64)
    worst = 0
    for ids in trained:
        hit = np.zeros(n, dtype=bool)
        hit[ids] = True
        gap = np.where(hit, 0, gap + 1)
        worst = max(worst, int(gap.max()))
    return worst


def orders_digest(name: str, **options: object) -> str:
    """sha256 of the orders of 14 epochs of ``name`` over 300 samples at 40% cache, seed 5
    (more than a 10-epoch coverage window, so that a guard has had to act)."""
    orders, _ = drive(name, n=300, cache_frac=0.4, epochs=14, seed=5, **options)
    digest = hashlib.sha256()
    for order in orders:
        digest.update(np.asarray(order, dtype="<i8").tobytes())
    return digest.hexdigest()


#: (system, options) whose orders the old default gave, pinned in the tests
PINNED: tuple[tuple[str, dict[str, object]], ...] = (
    ("shade", {}),
    ("shade", {"adaptive": False}),
    ("sh_app", {}),
    ("emul_quiv", {}),
    # a window below n and a steep beta, so that the selection drops easy ids for long
    ("impact", {"window": 16, "beta": 3.0}),
)
#: the option that gives each family the paper's behaviour
OPT_OUT: dict[str, dict[str, object]] = {"impact": {"coverage_epochs": 0}}


def opt_out(name: str) -> dict[str, object]:
    """``{"coverage_floor": 0}`` for a SHADE-family system, ``{"coverage_epochs": 0}`` for ImPACT's."""
    return OPT_OUT.get(name.split("_")[0], {"coverage_floor": 0})


if __name__ == "__main__":
    for system, opts in PINNED:
        print(system, opts, orders_digest(system, **opts))
