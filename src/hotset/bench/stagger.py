"""When the jobs of ``bench multijob`` start: together (lockstep) or spread out (staggered).

Why: jobs a user launches by hand or from a scheduler rarely start in the same
second. Started together, every job asks for the same chunk at about the same time,
so one job's read lands in a shared namespace just before the others need it; spread
out, a job may ask for a chunk that another job's put has not reached yet, or that
was evicted after another job used it. ``bench multijob`` runs every arrangement
both ways so the two sit side by side; this module says how far apart the staggered
starts are. The offsets are real: a staggered job sleeps before its first epoch, on
the real clock, while the others already read (see ``hotset.bench.multijob``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hotset.errors import HotsetError

_FORMS = "'none', 'epoch', '<F>epoch' (e.g. 0.5epoch) or '<S>s' (e.g. 0.5s)"


@dataclass(frozen=True)
class Stagger:
    """How far apart staggered jobs start: a fixed ``seconds`` between consecutive
    starts, or the starts spread evenly over ``epochs`` epochs (job j of J starts
    ``j / J * epochs`` epochs after job 0), an epoch being the matching lockstep row's
    (the slowest job's wall time over the epoch count); exactly one is set."""

    seconds: float | None = None
    epochs: float | None = None

    def gap_s(self, *, epoch_s: float, jobs: int) -> float:
        """Seconds between consecutive job starts, given the lockstep epoch's seconds."""
        if self.seconds is not None:
            return self.seconds
        assert self.epochs is not None
        return self.epochs * epoch_s / jobs

    def describe(self) -> str:
        """For the result's notes, e.g. ``0.5 s apart`` or ``spread over 1 epoch``."""
        if self.seconds is not None:
            return f"{self.seconds:g} s apart"
        return f"spread evenly over {self.epochs:g} lockstep epoch(s)"


#: the default: the starts spread evenly over one lockstep epoch (``--stagger epoch``)
DEFAULT_STAGGER = Stagger(epochs=1.0)


def parse_stagger(text: str) -> Stagger | None:
    """``--stagger``'s value: None for ``none`` (lockstep rows only), else a :class:`Stagger`.

    A bad value is a HotsetError naming it and the accepted forms.
    """
    value = text.strip().lower()
    if value == "none":
        return None
    if value.endswith("epoch"):
        number, kind = value[: -len("epoch")] or "1", "epochs"
    elif value.endswith("s"):
        number, kind = value[:-1], "seconds"
    else:
        raise HotsetError(f"--stagger: expected {_FORMS}, got {text!r}")
    try:
        amount = float(number)
    except ValueError:
        raise HotsetError(f"--stagger: expected {_FORMS}, got {text!r}") from None
    if not (math.isfinite(amount) and amount > 0):
        raise HotsetError(
            f"--stagger: the spread must be a positive number, got {text!r} "
            "(use 'none' for lockstep rows only)"
        )
    return Stagger(**{kind: amount})
