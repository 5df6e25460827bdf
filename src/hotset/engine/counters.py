"""One set of counter names for every driver, and the coverage beside every hit ratio.

The trace simulator, the live-training simulator, the loader and the benchmark
tables all count with :class:`EpochCounts` and print the same keys:

* ``requests`` = ``exact_hits + substitutions + fetched_ahead + storage_reads``:
  what each request was served from, never merged. An *exact hit* is the requested
  id served from bytes the cache kept since an earlier use (what Belady's MIN
  bounds); a *substitution* another cached id served in its place; *fetched ahead*
  the first use of bytes read from storage before they were asked for (a prefetched
  unit, or members a chunk or ranged read admitted: :mod:`hotset.engine.ahead`);
  a *storage read* a request whose bytes were read from storage for it;
* ``storage_requests``: what the store was asked (a sample, a chunk, a package
  or a prefetch counts one), ``storage_bytes``: the bytes those requests moved;
  ``unit_reads``: how many of those requests read a whole unit (chunk or package),
  so ``storage_requests - unit_reads`` single samples were read;
* ``pack_reads``/``pack_bytes``: what a packer (iCACHE's dynamic packaging) read
  from storage to write packages, in the background: not in ``storage_*``;
* ``unique_ids_trained``: distinct ids served this epoch, ``never_trained``:
  ids not served in any epoch so far. A cache that wins by training a subset
  shows it here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hotset.engine.arrays import IntArray
from hotset.engine.outcome import Outcome
from hotset.engine.plan import BatchPlan
from hotset.engine.state_ids import state_ids
from hotset.errors import HotsetError

#: the per-epoch counters, in the order every JSON row and table shows them
COUNTER_KEYS = (
    "requests",
    "exact_hits",
    "substitutions",
    "fetched_ahead",
    "storage_reads",
    "storage_requests",
    "storage_bytes",
    "unit_reads",
    "pack_reads",
    "pack_bytes",
)
COVERAGE_KEYS = ("unique_ids_trained", "never_trained")


@dataclass
class EpochCounts:
    """What one epoch's requests were served from, and what the store was asked."""

    requests: int = 0
    exact_hits: int = 0
    substitutions: int = 0
    fetched_ahead: int = 0
    storage_reads: int = 0
    storage_requests: int = 0
    storage_bytes: int = 0
    unit_reads: int = 0
    pack_reads: int = 0
    pack_bytes: int = 0

    def add_plan(self, plan: BatchPlan) -> None:
        requests, hits, subs, ahead, reads = plan.served_counts()
        self.requests += requests
        self.exact_hits += hits
        self.substitutions += subs
        self.fetched_ahead += ahead
        self.storage_reads += reads
        self.storage_requests += plan.storage_requests
        self.storage_bytes += plan.storage_bytes
        self.unit_reads += len(plan.unit_reads) + len(plan.prefetch)
        self.pack_reads += plan.pack_requests
        self.pack_bytes += plan.pack_bytes

    def add_outcomes(self, counts: Any, *, requests: int) -> None:
        """Add per-outcome counts (``counts[Outcome.X]``) of ``requests`` requests of a
        policy that reads nothing ahead (a replay: every HIT is an exact hit)."""
        self.requests += requests
        self.exact_hits += int(counts[Outcome.HIT])
        self.substitutions += int(counts[Outcome.SUBSTITUTION])
        self.fetched_ahead += int(counts[Outcome.PREFETCHED])
        self.storage_reads += int(counts[Outcome.MISS])

    def check(self, where: str) -> None:
        """Raise if the outcomes do not add up to the requests (an accounting bug)."""
        served = self.exact_hits + self.substitutions + self.fetched_ahead + self.storage_reads
        if served != self.requests:
            raise AssertionError(f"{where}: hit accounting does not add up: {self}")

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    @property
    def exact_hit_ratio(self) -> float:
        return self.exact_hits / self.requests if self.requests else 0.0


class Coverage:
    """Which ids were trained this epoch and which never were (bool arrays over ids)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._epoch = np.zeros(n, dtype=bool)
        self._ever = np.zeros(n, dtype=bool)

    def add(self, served: IntArray) -> None:
        self._epoch[served] = True

    def close_epoch(self) -> dict[str, int]:
        """This epoch's coverage row; the next epoch starts empty."""
        self._ever |= self._epoch
        row = {
            "unique_ids_trained": int(self._epoch.sum()),
            "never_trained": int(self.n - self._ever.sum()),
        }
        self._epoch[:] = False
        return row

    def peek(self) -> dict[str, int]:
        """The row so far, without closing the epoch."""
        ever = self._ever | self._epoch
        return {
            "unique_ids_trained": int(self._epoch.sum()),
            "never_trained": int(self.n - ever.sum()),
        }

    def state_dict(self) -> dict[str, Any]:
        return {"epoch": np.flatnonzero(self._epoch), "ever": np.flatnonzero(self._ever)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`; every id is checked first (an id of -1 wrapped to
        the last id before, a float was truncated), and a refusal changes nothing."""
        for key in ("epoch", "ever"):
            if key not in state:
                raise HotsetError(f"loader state: coverage lacks {key!r}")
        epoch = state_ids(state["epoch"], self.n, "loader state: coverage['epoch']")
        ever = state_ids(state["ever"], self.n, "loader state: coverage['ever']")
        self._epoch[:] = False
        self._ever[:] = False
        self._epoch[epoch] = True
        self._ever[ever] = True
