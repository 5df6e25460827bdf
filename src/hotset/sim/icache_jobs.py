"""iCACHE's multi-job experiment (HPCA'23 §V-H, Fig. 14), simulated: two jobs, one cache.

Why: §III-D's claim is that keying a shared cache by one job's importance
starves the other job, and that the adjusted importance (AIV) of the jobs the
cache speeds up serves both. The paper runs ShuffleNet (I/O-bound, "A") and
ResNet50 (compute-heavier, "B") on one CIFAR10 and one cache under four schemes:

* ``default``: LRU;
* ``inda`` / ``indb``: the H-cache keyed by job A's / job B's importance only;
* ``icache``: the H-cache keyed by the AIV of the cache-eligible jobs
  (``icache[multijob=true]``, :mod:`hotset.policies.icache.multijob`), each job's
  ``Ratio_benefit`` measured at the start of every epoch by its first ``probe``
  mini-batches read without the cache and the next ``probe`` with it
  (:func:`hotset.policies.quiver.placement.probe_result`, Quiver's probe).

Everything is **modeled**, nothing trained or read: each job samples by IIS
(:class:`~hotset.samplers.iis.IISSampler`, the same in every scheme, so only the
cache differs) from its own importance table, fed by
:class:`~hotset.sim.losses.SyntheticLosses` (job B's difficulty correlates
with A's by ``correlation`` in log space: two models find mostly the same
samples hard). The cache is the H-cache alone
(:class:`~hotset.policies.icache.ICache` with one heap over the whole budget,
no L-cache, so every hit is exact). A mini-batch takes
``max(compute, I/O)`` (the loader prefetches while the model computes), its I/O
``ceil(misses / concurrency) * latency``. The two jobs share the cache, not the
store: each job's reads see the modeled store alone. They run at once: the job
whose modeled clock is behind takes the next batch, so the faster job is epochs
ahead, as in the paper. A job's epoch end publishes its (benefit, RIV) and the
cache takes the new keys at the next epoch boundary (its shadow heap).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.engine.budget import Budget
from hotset.engine.outcome import Outcome
from hotset.engine.policy import Policy
from hotset.engine.roles import TakesImportance
from hotset.errors import HotsetError
from hotset.importance.multijob import BENEFIT_PROBE, ELIGIBLE_ABOVE, JobImportance
from hotset.importance.table import ImportanceTable
from hotset.policies.icache import ICache
from hotset.policies.quiver.placement import probe_result
from hotset.policies.registry import make_policy
from hotset.samplers.base import EpochContext
from hotset.samplers.iis import IISSampler
from hotset.sim.losses import SyntheticLosses

SCHEMES = ("default", "inda", "indb", "icache")
#: the paper's benefit probe: 20 mini-batches without the cache, then 20 with it
PROBE = BENEFIT_PROBE


@dataclass(frozen=True)
class JobModel:
    """One job: its name, its modeled compute per mini-batch, its losses' seed."""

    name: str
    compute_ms: float
    seed: int


@dataclass(frozen=True)
class Setup:
    """Everything one run of the experiment depends on."""

    n: int = 10_000
    item_bytes: int = 3072
    cache_frac: float = 0.3
    batch_size: int = 32
    epochs: int = 12
    latency_ms: float = 1.0
    concurrency: int = 4
    jobs: tuple[JobModel, ...] = (JobModel("A", 2.0, 1), JobModel("B", 9.0, 2))
    correlation: float = 0.5
    probe: int = PROBE
    threshold: float = ELIGIBLE_ABOVE
    seed: int = 0

    def check(self) -> None:
        if self.n < 2 or self.batch_size < 1 or self.epochs < 1 or self.concurrency < 1:
            raise HotsetError(f"icache multijob: bad sizes in {self!r}")
        if not 0 < self.cache_frac <= 1:
            raise HotsetError(
                f"icache multijob: cache_frac must be in (0, 1], got {self.cache_frac}"
            )
        if not -1 <= self.correlation <= 1:
            raise HotsetError(
                f"icache multijob: correlation must be in [-1, 1], got {self.correlation}"
            )
        if self.probe < 2:
            raise HotsetError(f"icache multijob: probe must be >= 2 batches, got {self.probe}")
        if len({j.name for j in self.jobs}) != len(self.jobs) or len(self.jobs) < 1:
            raise HotsetError("icache multijob: give one or more jobs with distinct names")

    def io_seconds(self, misses: int) -> float:
        return math.ceil(misses / self.concurrency) * self.latency_ms / 1000.0


@dataclass
class _Job:
    """One job's running state and counters."""

    model: JobModel
    sampler: IISSampler
    table: ImportanceTable
    losses: SyntheticLosses
    clock: float = 0.0
    epoch: int = 0
    order: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    at: int = 0
    batch: int = 0
    batch_seconds: list[float] = field(default_factory=list)
    benefit: float | None = None
    #: what the job published at its last epoch end (``icache``): the cache's input
    published: JobImportance | None = None
    epochs: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, float] = field(default_factory=dict)


def _jobs(setup: Setup) -> list[_Job]:
    """Each job's sampler, table and losses; B's difficulty correlates with A's."""
    out: list[_Job] = []
    base = None
    for j in setup.jobs:
        losses = SyntheticLosses(setup.n, seed=setup.seed * 1000 + j.seed)
        if base is None:
            base = np.log(losses.difficulty)
        else:
            rho = setup.correlation
            own = np.log(losses.difficulty)
            losses.difficulty = np.exp(rho * base + math.sqrt(1 - rho * rho) * own)
        sampler = IISSampler(setup.n, seed=setup.seed * 1000 + j.seed)
        out.append(_Job(j, sampler, ImportanceTable(setup.n), losses))
    return out


def _cache(setup: Setup, scheme: str) -> Policy:
    items = max(1, int(setup.cache_frac * setup.n))
    budget = Budget(capacity_items=items)
    if scheme == "default":
        return make_policy("lru", budget, seed=setup.seed)
    multijob = scheme == "icache"
    return ICache(  # the H-cache alone: one heap over the whole budget, no L-cache
        budget,
        seed=setup.seed,
        h_start=1.0,
        h_share=1.0,
        resize=False,
        lookahead=False,
        multijob=multijob,
        eligible_above=setup.threshold,
    )


def _start_epoch(job: _Job) -> None:
    snap = job.table.snapshot()
    ctx = EpochContext(
        epoch=job.epoch, scores=snap.scores, losses=snap.losses, last_epoch=snap.last_epoch
    )
    job.order = job.sampler.order(ctx)
    job.at = job.batch = 0
    job.batch_seconds = []
    job.counts = dict.fromkeys(("requests", "hits", "misses", "probe_reads"), 0.0)
    job.counts["distinct"] = float(len(np.unique(job.order)))
    job.counts["seconds"] = 0.0


def _step(setup: Setup, job: _Job, cache: Policy, probing: bool) -> None:
    """One mini-batch of ``job``: its accesses, its modeled time, its losses."""
    ids = job.order[job.at : job.at + setup.batch_size]
    job.at += len(ids)
    hits = 0
    if probing:  # read from storage, the cache neither asked nor changed
        job.counts["probe_reads"] += len(ids)
    else:
        for sid in ids.tolist():
            hits += cache.access(int(sid)).outcome is Outcome.HIT
    misses = len(ids) - hits
    seconds = max(job.model.compute_ms / 1000.0, setup.io_seconds(misses))
    job.clock += seconds
    job.batch += 1
    job.batch_seconds.append(seconds)
    job.counts["requests"] += len(ids)
    job.counts["hits"] += hits
    job.counts["misses"] += misses
    job.counts["seconds"] += seconds
    job.table.update(ids, job.losses(ids), epoch=job.epoch)


def _measure(setup: Setup, job: _Job) -> None:
    """The job's ``Ratio_benefit`` from this epoch's probe (kept if the epoch was short)."""
    if len(job.batch_seconds) >= 2 * setup.probe:
        got = probe_result(job.model.name, "data", job.batch_seconds, probe=setup.probe)
        job.benefit = got.benefit


def _publish(setup: Setup, jobs: list[_Job], cache: Policy, scheme: str, who: _Job) -> None:
    """``who`` finished an epoch: the cache gets the keys its scheme uses."""
    if scheme == "icache":
        if who.benefit is not None:  # what it measured this epoch, and its losses now
            losses = who.table.snapshot().losses
            who.published = JobImportance.from_scores(who.model.name, who.benefit, losses)
        snaps = [j.published for j in jobs if j.published is not None]
        cache.update_jobs(snaps)  # type: ignore[attr-defined]
    elif scheme in ("inda", "indb"):
        owner = jobs[0] if scheme == "inda" else jobs[1]
        if who is owner:
            assert isinstance(cache, TakesImportance)  # an iCACHE cache (_cache)
            cache.update_importance(owner.table.snapshot().losses)


def run_scheme(setup: Setup, scheme: str) -> list[dict[str, Any]]:
    """Both jobs under ``scheme`` until each has trained ``epochs`` epochs; per-job rows."""
    if scheme not in SCHEMES:
        raise HotsetError(f"icache multijob: scheme must be one of {SCHEMES}, got {scheme!r}")
    if scheme in ("inda", "indb") and len(setup.jobs) < 2:
        raise HotsetError(f"icache multijob: {scheme} needs two jobs")
    setup.check()
    jobs, cache = _jobs(setup), _cache(setup, scheme)
    boundaries = 0
    cache.begin_epoch(boundaries)
    for job in jobs:
        _start_epoch(job)
    while True:
        live = [j for j in jobs if j.epoch < setup.epochs]
        if not live:
            break
        job = min(live, key=lambda j: (j.clock, j.model.name))
        _step(setup, job, cache, scheme == "icache" and job.batch < setup.probe)
        if job.at < len(job.order):
            continue
        if scheme == "icache":
            _measure(setup, job)
        job.epochs.append({**job.counts, "benefit": job.benefit})
        _publish(setup, jobs, cache, scheme, job)
        boundaries += 1
        cache.end_epoch()
        cache.begin_epoch(boundaries)
        job.epoch += 1
        if job.epoch < setup.epochs:
            _start_epoch(job)
    return [_row(setup, scheme, j, cache) for j in jobs]


def _row(setup: Setup, scheme: str, job: _Job, cache: Policy) -> dict[str, Any]:
    """A job's averages over its epochs (all, the cold first one included)."""
    eps = job.epochs
    req = sum(e["requests"] for e in eps)
    hits = sum(e["hits"] for e in eps)
    asked = sum(e["requests"] - e["probe_reads"] for e in eps)
    benefits = [e["benefit"] for e in eps if e["benefit"] is not None]
    return {
        "scheme": scheme,
        "job": job.model.name,
        "compute_ms": job.model.compute_ms,
        "cache_frac": setup.cache_frac,
        "epochs": len(eps),
        "epoch_seconds": round(sum(e["seconds"] for e in eps) / len(eps), 4),
        "completion_seconds": round(job.clock, 3),
        "hit_ratio": round(hits / req, 4),
        "hit_ratio_cached_batches": round(hits / asked, 4) if asked else 0.0,
        "coverage": round(sum(e["distinct"] for e in eps) / len(eps) / setup.n, 4),
        "mb_read_per_epoch": round(
            sum(e["misses"] for e in eps) * setup.item_bytes / len(eps) / 1e6, 3
        ),
        "probe_reads_per_epoch": round(sum(e["probe_reads"] for e in eps) / len(eps), 1),
        "benefit_last": round(benefits[-1], 3) if benefits else None,
        "eligible_epochs": sum(1 for b in benefits if b > setup.threshold),
        "aiv_keys": cache.summary().get("multijob_keys") if scheme == "icache" else None,
    }
