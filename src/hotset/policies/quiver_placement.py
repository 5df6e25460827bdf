"""Quiver's benefit-aware placement (FAST'20 §5.3): who gets cache space, measured.

A job whose GPU time hides its I/O gains nothing from a cache; one that waits on
the store gains a lot. Quiver measures instead of modelling: a *probe* runs a
job's first mini-batches with the cache rejecting its lookups (``quiver[probe=N]``
plans them as storage reads) and the next ones with it, and the benefit is
``b = t_miss / t_hit``, the ratio of the mean mini-batch times.

Space is then given per data set, choosing among three options only, since
with substitutable hits any size between two chunks and the whole data set
brings the same speed as two chunks:

* ``full``: the whole data set (no storage reads after the first epoch);
* ``chunks``: two chunks, double-buffered (cache-hit speed, the data set read
  about once per epoch);
* ``none``.

Greedy by benefit per byte: the data sets whose jobs save the most GPU time
per byte first get two chunks, then, while space is left, the whole data set
in the same order. The GPU time a job saves is ``(b - 1) * gpus`` (the paper's
``b * n`` counts a job that gains nothing, ``b = 1``, as saving its GPUs); a
job below ``min_benefit`` is counted as gaining nothing, and a data set only
such jobs read gets no space. Everything here is pure: the measuring is the
driver's, the decision is a function of the measurements.

:func:`place_job` closes the loop for one job (:mod:`hotset.policies.quiver_loop`):
:func:`place` over every job's record on the namespace's probe board (records are
plain values, :func:`record_of` / :func:`from_record`), then whether the job
itself caches at all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeGuard

from hotset.errors import HotsetError

OPTIONS = ("full", "chunks", "none")


@dataclass(frozen=True)
class ProbeResult:
    """One job's probe: mean mini-batch seconds without (``t_miss``) and with the cache."""

    job: str
    dataset: str
    t_miss: float
    t_hit: float
    gpus: int = 1

    def __post_init__(self) -> None:
        for name in ("t_miss", "t_hit"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not value > 0:
                raise HotsetError(f"probe of job {self.job!r}: {name} must be > 0 s, got {value!r}")
        if isinstance(self.gpus, bool) or not isinstance(self.gpus, int) or self.gpus < 1:
            raise HotsetError(f"probe of job {self.job!r}: gpus must be >= 1, got {self.gpus!r}")

    @property
    def benefit(self) -> float:
        """``t_miss / t_hit``: how many times faster the job runs from the cache."""
        return self.t_miss / self.t_hit


def probe_result(
    job: str, dataset: str, batch_seconds: Sequence[float], *, probe: int, gpus: int = 1
) -> ProbeResult:
    """A job's probe from its mini-batch times: the first ``probe`` without the cache,
    the next ``probe`` with it (the first of each window is dropped: it holds start-up)."""
    if probe < 2:
        raise HotsetError(f"probe: need at least 2 batches a window, got {probe}")
    if len(batch_seconds) < 2 * probe:
        raise HotsetError(
            f"probe of job {job!r}: {len(batch_seconds)} batch times, need {2 * probe} "
            f"(probe={probe} without the cache, then {probe} with it)"
        )
    miss = list(batch_seconds[1:probe])
    hit = list(batch_seconds[probe + 1 : 2 * probe])
    return ProbeResult(job, dataset, sum(miss) / len(miss), sum(hit) / len(hit), gpus)


@dataclass(frozen=True)
class DataSetSpace:
    """What caching a data set costs: its bytes, and two of its chunks."""

    size_bytes: int
    chunk_bytes: int

    def cost(self, option: str) -> int:
        if option == "full":
            return self.size_bytes
        if option == "chunks":
            return min(2 * self.chunk_bytes, self.size_bytes)
        return 0


def saved_gpus(probes: Sequence[ProbeResult], *, min_benefit: float = 1.1) -> dict[str, float]:
    """Per data set, the GPU time its jobs save when it is cached: sum of ``(b - 1) * gpus``."""
    out: dict[str, float] = {}
    for p in probes:
        gain = (p.benefit - 1.0) * p.gpus if p.benefit >= min_benefit else 0.0
        out[p.dataset] = out.get(p.dataset, 0.0) + gain
    return out


def place(
    datasets: Mapping[str, DataSetSpace],
    probes: Sequence[ProbeResult],
    *,
    budget_bytes: int,
    min_benefit: float = 1.1,
) -> dict[str, str]:
    """Each data set's option (``full``, ``chunks`` or ``none``) within ``budget_bytes``."""
    if isinstance(budget_bytes, bool) or not isinstance(budget_bytes, int) or budget_bytes < 0:
        raise HotsetError(f"place: budget_bytes must be an integer >= 0, got {budget_bytes!r}")
    if not min_benefit >= 1.0:
        raise HotsetError(f"place: min_benefit must be >= 1, got {min_benefit!r}")
    unknown = sorted({p.dataset for p in probes} - set(datasets))
    if unknown:
        raise HotsetError(f"place: probes name data sets with no size: {', '.join(unknown)}")
    gain = saved_gpus(probes, min_benefit=min_benefit)
    chosen = dict.fromkeys(datasets, "none")
    left = budget_bytes
    worth = [d for d in datasets if gain.get(d, 0.0) > 0]
    # two chunks first, by saved GPU time per byte (ties: name, so the result is a function)
    for d in sorted(worth, key=lambda d: (-gain[d] / max(1, datasets[d].cost("chunks")), d)):
        cost = datasets[d].cost("chunks")
        if cost <= left:
            chosen[d], left = "chunks", left - cost
    # then the whole data set, in the same order, while space is left
    for d in sorted(worth, key=lambda d: (-gain[d] / max(1, datasets[d].cost("full")), d)):
        if chosen[d] != "chunks":
            continue
        extra = datasets[d].cost("full") - datasets[d].cost("chunks")
        if extra <= left:
            chosen[d], left = "full", left - extra
    return chosen


# -- closing the loop: one job's decision from the namespace's probe board ---------------
#: what one board record holds, each a plain number or string (what the board stores as
#: JSON and a policy's state records): a job's probe and its data set's space
RECORD_FIELDS = ("job", "dataset", "t_miss", "t_hit", "gpus", "size_bytes", "chunk_bytes")


@dataclass(frozen=True)
class Placement:
    """What :func:`place_job` decided for one job.

    ``option`` is its data set's (``full``, ``chunks`` or ``none``); ``caching`` is
    False when the job itself gains less than ``min_benefit`` or its data set gets no
    space: the job then admits nothing and reads from storage.
    """

    option: str
    caching: bool
    benefit: float
    #: bytes the job may hold for its data set's chunks: two chunks for ``chunks``,
    #: None (its whole budget, as without placement) for ``full``, 0 with caching off
    cap_bytes: int | None


def record_of(probe: ProbeResult, space: DataSetSpace) -> dict[str, str | int | float]:
    """A probe and its data set's space as one board record (plain values only)."""
    return {
        "job": probe.job,
        "dataset": probe.dataset,
        "t_miss": float(probe.t_miss),
        "t_hit": float(probe.t_hit),
        "gpus": int(probe.gpus),
        "size_bytes": int(space.size_bytes),
        "chunk_bytes": int(space.chunk_bytes),
    }


def from_record(record: Mapping[str, object]) -> tuple[ProbeResult, DataSetSpace]:
    """A board record back as a probe and a space; a bad record is a HotsetError."""
    missing = [f for f in RECORD_FIELDS if f not in record]
    if missing:
        raise HotsetError(f"probe record lacks {', '.join(missing)}: {dict(record)!r}")
    job, dataset = record["job"], record["dataset"]
    if not isinstance(job, str) or not isinstance(dataset, str):
        raise HotsetError(f"probe record: job and dataset must be strings, got {dict(record)!r}")
    sizes = [v for v in (record["size_bytes"], record["chunk_bytes"]) if _count(v)]
    if len(sizes) != 2:
        raise HotsetError(f"probe record: sizes must be integers >= 0, got {dict(record)!r}")
    t_miss, t_hit, gpus = record["t_miss"], record["t_hit"], record["gpus"]
    for t in (t_miss, t_hit):
        if not isinstance(t, int | float) or isinstance(t, bool) or not math.isfinite(t):
            raise HotsetError(f"probe record: times must be finite numbers, got {dict(record)!r}")
    probe = ProbeResult(job, dataset, t_miss, t_hit, gpus)  # type: ignore[arg-type]
    return probe, DataSetSpace(sizes[0], sizes[1])


def _count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def place_job(
    own: Mapping[str, object],
    board: Sequence[Mapping[str, object]],
    *,
    budget_bytes: int,
    min_benefit: float = 1.1,
) -> Placement:
    """One job's placement: :func:`place` over every job's probe on the board (the
    job's own record ``own`` replaces any of its on the board, so a job whose
    publish failed still counts), then the job's own switch.

    A data set's space is the largest any record gives for it (records of one data
    set agree but for a job's budget). Pure: the same records give the same decision.
    """
    mine, my_space = from_record(own)
    probes: dict[str, ProbeResult] = {}
    spaces: dict[str, DataSetSpace] = {}
    for record in [*board, own]:
        probe, space = from_record(record)
        probes[probe.job] = probe
        have = spaces.get(probe.dataset)
        if have is None or (space.size_bytes, space.chunk_bytes) > (
            have.size_bytes,
            have.chunk_bytes,
        ):
            spaces[probe.dataset] = space
    ordered = [probes[j] for j in sorted(probes)]
    option = place(spaces, ordered, budget_bytes=budget_bytes, min_benefit=min_benefit)[
        mine.dataset
    ]
    caching = option != "none" and mine.benefit >= min_benefit
    cap: int | None = None if option == "full" else my_space.cost("chunks")
    return Placement(option, caching, mine.benefit, cap if caching else 0)
