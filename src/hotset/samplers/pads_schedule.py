"""SHADE's adaptivity (FAST'23 §4.2.1), as this project reads the paper's words.

The paper: "SHADE keeps track of the loss convergence of the model in real-time
to decide the number of repetitive sample accesses in order to boost the hit
rate without sacrificing the accuracy of the model. To do so, on noticing a
steep decline in the loss convergence curve or a stagnant accuracy curve, SHADE
intentionally shuffles the important samples to avoid training against a small
subset of the most important samples." The authors' code has none of it (a
fixed ``rep_factor``). The paper gives no numbers, so these are ours:

* **steep decline**: the last epoch's mean loss fell by more than
  ``steep_decline`` (25%) of the epoch before's -> a *shuffle* epoch;
* **stagnant accuracy**: at least ``TREND + 1`` validation accuracies, and the
  mean of the last ``TREND`` (3) changes is within ``stagnant`` (0.2 pt) of 0
  -> a *shuffle* epoch;
* a shuffle epoch is a uniform permutation of all ids (no importance draw, no
  repetition): every sample is trained once, the subset cannot lock in;
* otherwise the **repetitions follow convergence**: with ``d`` the last
  relative decline, ``rep = 1 + (rep_factor - 1) * (1 - d / steep_decline)``,
  rounded down to a multiple of 0.5 -- a loss still falling fast gets few
  repetitions (the model learns from fresh samples), a flattening loss gets up
  to ``rep_factor`` (the cached hard samples are worth repeating). Before two
  losses exist there is no trend and ``rep_factor`` applies, as in the code.

Pure: a function of the epoch's losses and accuracies, so every rank (and a
resumed job) decides the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: the accuracy trend looks at this many most recent epoch-to-epoch changes
TREND = 3


@dataclass(frozen=True)
class Schedule:
    """What one epoch does: ``kind`` is "pads" or "shuffle"; why, and how many repeats."""

    kind: str
    rep_factor: float
    reason: str


def adaptive_schedule(
    train_loss: tuple[float, ...],
    val_accuracy: tuple[float, ...],
    *,
    rep_factor: float,
    steep_decline: float,
    stagnant: float,
) -> Schedule:
    """The epoch's schedule from the finished epochs' losses and accuracies (module doc)."""
    decline = None
    if len(train_loss) >= 2 and train_loss[-2] > 0:
        decline = (train_loss[-2] - train_loss[-1]) / train_loss[-2]
        if decline > steep_decline:
            return Schedule("shuffle", 1.0, f"steep loss decline ({decline:.1%})")
    if len(val_accuracy) > TREND:
        change = float(np.diff(np.asarray(val_accuracy, dtype=np.float64))[-TREND:].mean())
        if abs(change) <= stagnant:
            return Schedule("shuffle", 1.0, f"stagnant accuracy ({change:+.4f} per epoch)")
    if decline is None:
        return Schedule("pads", rep_factor, "no loss trend yet")
    share = min(max(decline / steep_decline, 0.0), 1.0)
    rep = 1.0 + (rep_factor - 1.0) * (1.0 - share)
    rep = max(1.0, math.floor(rep * 2) / 2)
    return Schedule("pads", rep, f"loss decline {decline:.1%}")
