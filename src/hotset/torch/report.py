"""The loader's per-epoch report: the engine's counters, what the workers did, coverage.

Outcome counts come from each batch's plan (as the simulators count them);
store requests and bytes are what actually happened -- the workers' reads, plus
the main process's read-ahead and unit prefetch, wasted reads included --
so a loader row can be read next to a simulator row. Rebuild reads (an id the
policy holds but the cache lost) are counted apart, and so are degraded reads
(a cached id read from storage because the cache failed or was backing off;
``cache_errors`` counts the cache calls that failed): a run that survived a
cache outage says so instead of passing for a cold cache. ``integrity_errors``
counts cache entries that did not hash to their key (bytes another writer put
there): each was dropped and read again from storage (a rebuild read), so a
poisoned cache shows up here rather than in what training received.
``refused_puts``/``refused_bytes`` count admissions a Redis namespace turned
away over budget: other jobs' entries filled a shared one, or bytes this job did
not put (another client's, or entries the server evicted without the byte
counter knowing) filled it; ``cache_resyncs`` counts the times the namespace's
byte counter was set to what its entries hold before such a refusal.
``pool_hits``/``pool_bytes`` count samples whose bytes a shared namespace
held (put there by another job or rank) and so were not read from storage:
planned single-sample misses, and the members a planned unit read was wanted
for when the pool held all of them -- the unit, then not read, counts once in
``pool_unit_hits`` (Quiver §5.2's co-operative miss handling). Still misses of
this job's policy, never hits. ``claimed_units`` counts unit loads left to another
job that was reading the same unit (:mod:`hotset.coordination.claims`). ``skipped`` counts samples left out of their batch because their read failed
for good (``on_error="skip"``); :meth:`HotsetLoader.skipped` names them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from hotset.torch.prefetch import PrefetchCounts
from hotset.torch.readahead import ReadAheadCounts

#: what each request was served from: the engine's counters (hotset.engine.counters)
_OUTCOME_COUNTERS = ("requests", "exact_hits", "substitutions", "fetched_ahead", "storage_reads")
#: what the workers did: store requests and bytes (read-ahead's and prefetch's are
#: added from the main process), rebuilds, reads served by read-ahead
_IO_COUNTERS = (
    "storage_requests",
    "storage_bytes",
    "unit_reads",
    "pack_reads",
    "pack_bytes",
    "rebuild_reads",
    "rebuild_bytes",
    "staged_reads",
    "degraded_reads",
    "degraded_bytes",
    "cache_errors",
    "integrity_errors",
    "refused_puts",
    "refused_bytes",
    "cache_resyncs",
    "skipped",
    "pool_hits",
    "pool_bytes",
    "pool_unit_hits",
    "claimed_units",
)
_COUNTERS = ("batches", *_OUTCOME_COUNTERS, *_IO_COUNTERS)
#: counted from the read-ahead and the unit prefetcher, not from the workers' batch info
_READAHEAD_COUNTERS = (
    "readahead_reads",
    "readahead_bytes",
    "readahead_wasted",
    "readahead_wasted_bytes",
    "prefetch_requests",
    "prefetch_bytes",
    "prefetch_wasted",
)


class EpochStats:
    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.counts = dict.fromkeys(_COUNTERS + _READAHEAD_COUNTERS, 0)
        self.coverage: dict[str, int] = {"unique_ids_trained": 0, "never_trained": 0}
        self._ra_seen = ReadAheadCounts()
        self._pf_seen = PrefetchCounts()
        self.stall_seconds = 0.0
        self.wall_seconds = 0.0
        self.finished = False
        #: the kind of order the sampler made (PADS: relaxed, aggressive, guardrail, ...)
        self.order = ""

    def add(self, info: Mapping[str, Any], stall: float) -> None:
        c = self.counts
        c["batches"] += 1
        for key, value in zip(_OUTCOME_COUNTERS, info["outcomes"], strict=True):
            c[key] += value
        for key in _IO_COUNTERS:
            c[key] += int(info.get(key, 0))  # a batch that never touched a cache has none
        self.stall_seconds += stall

    def baseline(self, ra: ReadAheadCounts, pf: PrefetchCounts) -> None:
        """Read-ahead's and prefetch's counts are cumulative: count from here on."""
        self._ra_seen = dataclasses.replace(ra)
        self._pf_seen = dataclasses.replace(pf)

    def absorb(self, ra: ReadAheadCounts, pf: PrefetchCounts) -> None:
        """Add what read-ahead and prefetch did since the last call: store requests too."""
        seen, c = self._ra_seen, self.counts
        if ra == seen and pf == self._pf_seen:
            return  # nothing new (read-ahead and prefetch idle): no copies
        reads, nbytes = ra.reads - seen.reads, ra.bytes - seen.bytes
        c["readahead_reads"] += reads
        c["readahead_bytes"] += nbytes
        c["readahead_wasted"] += ra.wasted - seen.wasted
        c["readahead_wasted_bytes"] += ra.wasted_bytes - seen.wasted_bytes
        pseen = self._pf_seen
        preqs, pbytes = pf.requests - pseen.requests, pf.bytes - pseen.bytes
        c["prefetch_requests"] += preqs
        c["prefetch_bytes"] += pbytes
        c["prefetch_wasted"] += pf.wasted - pseen.wasted
        c["storage_requests"] += reads + preqs
        c["unit_reads"] += preqs
        c["storage_bytes"] += nbytes + pbytes
        self._ra_seen = dataclasses.replace(ra)
        self._pf_seen = dataclasses.replace(pf)

    def row(self) -> dict[str, Any]:
        c = self.counts
        row: dict[str, Any] = {"epoch": self.epoch, **c, **self.coverage}
        row["exact_hit_ratio"] = c["exact_hits"] / c["requests"] if c["requests"] else 0.0
        row["stall_seconds"] = self.stall_seconds
        row["wall_seconds"] = self.wall_seconds
        row["stall_share"] = self.stall_seconds / self.wall_seconds if self.wall_seconds else 0.0
        row["samples_per_s"] = c["requests"] / self.wall_seconds if self.wall_seconds else 0.0
        row["finished"] = self.finished
        row["order"] = self.order
        return row

    def state(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "counts": dict(self.counts),
            "coverage": dict(self.coverage),
            "stall_seconds": self.stall_seconds,
            "wall_seconds": self.wall_seconds,
            "finished": self.finished,
            "order": self.order,
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> EpochStats:
        out = cls(int(state["epoch"]))
        # "prefetched": the name of fetched_ahead in states saved before it was widened
        out.counts.update(
            {
                ("fetched_ahead" if k == "prefetched" else k): int(v)
                for k, v in state["counts"].items()
            }
        )
        out.coverage.update({k: int(v) for k, v in state["coverage"].items()})
        out.stall_seconds = float(state["stall_seconds"])
        out.wall_seconds = float(state["wall_seconds"])
        out.finished = bool(state["finished"])
        out.order = str(state.get("order", ""))
        return out


#: (header, row key, format) of each column of :func:`summary_table`
#: the four kinds of serving add up to ``samples``; the store's side is requests and MB,
#: the same numbers as ``report()``'s ``storage_requests`` and ``storage_bytes``
_SUMMARY_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("epoch", "epoch", "{:d}"),
    ("samples", "requests", "{:d}"),
    ("exact hits", "exact_hits", "{:d}"),
    ("substituted", "substitutions", "{:d}"),
    ("fetched ahead", "fetched_ahead", "{:d}"),
    ("read on demand", "storage_reads", "{:d}"),
    ("storage requests", "storage_requests", "{:d}"),
    ("storage MB", "storage_mb", "{:.1f}"),
    ("distinct trained", "unique_ids_trained", "{:d}"),
    ("never trained", "never_trained", "{:d}"),
    ("train loss", "train_loss", "{:.4f}"),
    ("val acc", "val_accuracy", "{:.2%}"),
    ("stall s", "stall_seconds", "{:.2f}"),
    ("samples/s", "samples_per_s", "{:.0f}"),
)


def summary_table(
    rows: list[dict[str, Any]], *, train_loss: list[float], val_accuracy: list[float]
) -> str:
    """Report rows as an aligned text table; loss and accuracy per epoch where known.

    ``train_loss``/``val_accuracy`` are the system's per-epoch lists (one entry
    per finished epoch, in order), so row ``i`` of a finished epoch takes entry ``i``.
    """
    body = []
    for i, row in enumerate(rows):
        values = dict(row)
        loss = train_loss[i] if i < len(train_loss) else None
        # NaN: an epoch that got no losses (a system that does not learn needs none)
        values["train_loss"] = loss if loss is not None and loss == loss else None
        values["val_accuracy"] = val_accuracy[i] if i < len(val_accuracy) else None
        values["storage_mb"] = row["storage_bytes"] / 1e6
        cells = []
        for _, key, fmt in _SUMMARY_COLUMNS:
            value = values.get(key)
            cells.append("-" if value is None else fmt.format(value))
        body.append(cells)
    heads = [h for h, _, _ in _SUMMARY_COLUMNS]
    widths = [max([len(h), *(len(r[j]) for r in body)]) for j, h in enumerate(heads)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(heads, widths, strict=True))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in body]
    if not body:
        lines.append("(no epoch run yet)")
    return "\n".join(lines)
