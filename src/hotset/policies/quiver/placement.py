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

:func:`place_job` closes the loop for one job (:mod:`hotset.policies.quiver.loop`):
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

#: the largest benefit a job counts with: a job 1,000x faster from the cache is beyond
#: anything measured (14x to 53x in ``bench placement``), so one record claiming more
#: (``t_hit`` near 0) weighs no more than that
MAX_BENEFIT = 1000.0


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
        benefit = min(p.benefit, MAX_BENEFIT)
        gain = (benefit - 1.0) * p.gpus if benefit >= min_benefit else 0.0
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
#: a board record's bounds, each beyond anything a real job publishes (a record outside
#: them is no job's and is skipped): names, a mini-batch's seconds, GPUs (a rank is one),
#: a data set's bytes (2**60: an exabyte; a claim of 10**30 bytes is no data set's)
MAX_NAME = 200
MAX_BATCH_S = 86_400.0
MAX_GPUS = 1024
MAX_DATASET_BYTES = 2**60
#: the most other jobs' records one placement counts (the board reads as many)
MAX_BOARD = 64


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
    """A board record back as a probe and a space; a record outside the bounds above
    (or missing a field) is a HotsetError naming what is wrong."""
    if not isinstance(record, Mapping):
        raise HotsetError(f"a probe record is a mapping, got {type(record).__name__}")
    missing = [f for f in RECORD_FIELDS if f not in record]
    if missing:
        raise HotsetError(f"probe record lacks {', '.join(missing)}: {_short(record)}")
    job, dataset = record["job"], record["dataset"]
    if not _name(job) or not _name(dataset):
        raise HotsetError(
            f"probe record: job and dataset must be strings of 1-{MAX_NAME} characters, "
            f"got {_short(record)}"
        )
    size, chunk = record["size_bytes"], record["chunk_bytes"]
    if not _count(size, MAX_DATASET_BYTES) or not _count(chunk, size):
        raise HotsetError(
            f"probe record: size_bytes must be an integer in 0..2**60 and chunk_bytes one "
            f"in 0..size_bytes, got {_short(record)}"
        )
    t_miss, t_hit, gpus = record["t_miss"], record["t_hit"], record["gpus"]
    for t in (t_miss, t_hit):
        if not _number(t) or not 0 < t <= MAX_BATCH_S:
            raise HotsetError(
                f"probe record: times must be finite numbers in (0, {MAX_BATCH_S:.0f}] s, "
                f"got {_short(record)}"
            )
    if not _count(gpus, MAX_GPUS) or gpus < 1:
        raise HotsetError(f"probe record: gpus must be in 1..{MAX_GPUS}, got {_short(record)}")
    probe = ProbeResult(job, dataset, float(t_miss), float(t_hit), gpus)  # type: ignore[arg-type]
    return probe, DataSetSpace(size, chunk)


def clean_record(record: Mapping[str, object]) -> dict[str, str | int | float]:
    """``record`` checked (:func:`from_record`) and cut to :data:`RECORD_FIELDS`: what a
    policy keeps of it, so a record padded with other fields costs its state nothing."""
    probe, space = from_record(record)
    return record_of(probe, space)


def _short(record: Mapping[str, object]) -> str:
    text = repr(dict(record))
    return text if len(text) <= 300 else text[:300] + "..."


def _name(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_NAME


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _count(value: object, most: object) -> TypeGuard[int]:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return ok and isinstance(most, int) and value <= most  # type: ignore[operator]


def counted(
    own: Mapping[str, object], board: Sequence[Mapping[str, object]]
) -> list[dict[str, str | int | float]]:
    """The records of ``board`` a placement counts, cleaned (:func:`clean_record`), by
    job id, at most :data:`MAX_BOARD`: a record that is not one is skipped, so are the
    job's own (``own`` stands for it) and a record of the job's data set that gives it
    another size (one data set has one size: that record is no job's of it)."""
    mine, my_space = from_record(own)
    kept: dict[str, dict[str, str | int | float]] = {}
    for record in board:
        try:
            clean = clean_record(record)
        except HotsetError:
            continue
        same_set = clean["dataset"] == mine.dataset
        if clean["job"] == mine.job or (same_set and clean["size_bytes"] != my_space.size_bytes):
            continue
        kept[str(clean["job"])] = clean
    return [kept[j] for j in sorted(kept)[:MAX_BOARD]]


def place_job(
    own: Mapping[str, object],
    board: Sequence[Mapping[str, object]],
    *,
    budget_bytes: int,
    min_benefit: float = 1.1,
) -> Placement:
    """One job's placement: :func:`place` over the job's own record and the records of
    the board it counts (:func:`counted`; the own record replaces any of the job's on
    the board, so a job whose publish failed still counts), then the job's own switch.

    The job's data set's space is its own record's; another data set's is the largest
    any record gives for it (records of one data set agree but for a job's budget).
    Pure: the same records give the same decision.
    """
    mine, my_space = from_record(own)
    probes: dict[str, ProbeResult] = {mine.job: mine}
    spaces: dict[str, DataSetSpace] = {}
    for record in counted(own, board):
        probe, space = from_record(record)
        probes[probe.job] = probe
        have = spaces.get(probe.dataset)
        if have is None or (space.size_bytes, space.chunk_bytes) > (
            have.size_bytes,
            have.chunk_bytes,
        ):
            spaces[probe.dataset] = space
    spaces[mine.dataset] = my_space
    ordered = [probes[j] for j in sorted(probes)]
    option = place(spaces, ordered, budget_bytes=budget_bytes, min_benefit=min_benefit)[
        mine.dataset
    ]
    caching = option != "none" and mine.benefit >= min_benefit
    cap: int | None = None if option == "full" else my_space.cost("chunks")
    return Placement(option, caching, mine.benefit, cap if caching else 0)
