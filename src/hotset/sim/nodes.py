"""Many nodes by simulation: K data-parallel ranks over private or pooled caches.

Why: a user deciding between a cache per node and one pooled cache (Redis
Cluster across the job's nodes) wants hit ratios, storage reads and network
traffic for *their* node count and data set size, long before renting 64
nodes. This drives the one engine (:class:`~hotset.engine.planner.Planner`)
for every rank, in lockstep, and costs each step with a simple model.

Scopes
------
``private``: each node holds its own cache of ``cache_frac`` of the data set's
bytes; rank ``r`` runs its own system over its shard of each epoch's order, as
the loader does under ``torchrun`` with the shared-memory cache. A learning
system gets every rank's feedback at the end of each epoch
(:func:`~hotset.importance.merge.merge_rank_feedback`, the loader's own merge),
so every rank draws the same global order.

``pooled``: the nodes' memories form one cache of ``K * cache_frac`` of the
bytes. One policy over the pool's whole budget sees every rank's requests, a
step's ``K`` batches together (a global directory, as iCACHE §III-E has); an
entry is stored once, on the node its id hashes to (as Redis Cluster's hash
slots place keys). A hit on an entry homed elsewhere is a *remote* hit and costs
network time; an admission homed elsewhere is a remote put.

What the model leaves out (also in every result's ``model`` field): contention
at the shared store (each node's client has its own latency, concurrency and
bandwidth); network congestion (one round trip per node and step plus bytes at
the link rate); overlap of I/O with compute (a step lasts as long as the
slowest node's I/O, plus compute); real training (a learning system gets losses
from :class:`~hotset.sim.losses.SyntheticLosses`, and no validation accuracy).
The loader on a shared Redis namespace today runs one policy per rank and looks
planned misses up in the pool; ``pooled`` is the global-directory design it
approximates, not a replay of it. A system with its own protocol across ranks
(``capabilities.plans_world``: Brand §3.4) runs pooled as itself, one system
per rank over the job's memory, with no remote counts of this model's.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.counters import Coverage
from hotset.engine.outcome import Outcome
from hotset.engine.owners import owner_ranks
from hotset.engine.plan import BatchPlan
from hotset.engine.planner import Planner
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError
from hotset.importance.merge import RankFeedback, merge_rank_feedback
from hotset.sim.losses import SyntheticLosses
from hotset.systems.base import System
from hotset.systems.registry import build_system, capabilities_of

SCOPES = ("private", "pooled")

_HIT, _SUB, _MISS, _PRE = (int(o) for o in Outcome)

#: per-node counters of an epoch, in the order of a result row
NODE_KEYS = (
    "requests",
    "exact_hits",
    "substitutions",
    "fetched_ahead",
    "storage_reads",
    "remote_hits",
    "cache_serves",
    "storage_requests",
    "storage_bytes",
    "remote_bytes",
    "remote_put_bytes",
)
#: row of each counter in a step's (counter x node) array
_ROW = {key: i for i, key in enumerate(NODE_KEYS)}


@dataclass(frozen=True)
class Costs:
    """Per-node storage client, node link and compute; seconds from counts and bytes."""

    storage_latency_ms: float = 2.0
    storage_mb_s: float = 100.0
    storage_concurrency: int = 4
    net_latency_ms: float = 0.1
    net_gb_s: float = 1.25  # a 10 GbE link
    compute_ms_per_batch: float = 0.0

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise HotsetError(f"nodes: {name} must be a finite number >= 0, got {value!r}")
        for name in ("storage_mb_s", "storage_concurrency", "net_gb_s"):
            if getattr(self, name) <= 0:
                raise HotsetError(f"nodes: {name} must be positive, got {getattr(self, name)!r}")

    def storage_seconds(self, requests: float, nbytes: float) -> float:
        if requests <= 0:
            return 0.0
        waves = math.ceil(requests / self.storage_concurrency)
        return waves * self.storage_latency_ms / 1e3 + nbytes / (self.storage_mb_s * 1e6)

    def remote_seconds(self, requests: float, nbytes: float) -> float:
        if requests <= 0:
            return 0.0
        return self.net_latency_ms / 1e3 + nbytes / (self.net_gb_s * 1e9)


@dataclass
class _Step:
    """One lockstep step: per-node counters (rows of NODE_KEYS) and their I/O time."""

    counts: npt.NDArray[np.float64]
    seconds: float = 0.0


class NodeSim:
    """K ranks of one system over ``scope`` caches; :meth:`run_epoch` gives one result row."""

    def __init__(
        self,
        system: str,
        *,
        nodes: int,
        scope: str,
        sizes: IntArray,
        cache_frac: float,
        seed: int = 0,
        batch_size: int = 128,
        options: Mapping[str, Any] | None = None,
        costs: Costs | None = None,
        layout: UnitLayout | None = None,
    ) -> None:
        _check(nodes=nodes, scope=scope, cache_frac=cache_frac, batch_size=batch_size)
        self.sizes = np.asarray(sizes, dtype=np.int64)
        n = len(self.sizes)
        if n < nodes:
            raise HotsetError(f"nodes: {nodes} nodes need at least {nodes} samples, got {n}")
        self.nodes, self.scope, self.batch_size = nodes, scope, batch_size
        if costs is not None and not isinstance(costs, Costs):
            raise HotsetError(f"nodes: costs must be a Costs, got {costs!r:.80}")
        self.costs = costs or Costs()
        self.per_node_bytes = math.floor(cache_frac * int(self.sizes.sum()))
        world_protocol = capabilities_of(system).plans_world and nodes > 1
        if world_protocol and scope == "private":
            raise HotsetError(
                f"nodes: system {system!r} shares the nodes' memories by its own protocol "
                "(owner ranks): simulate it with scope pooled"
            )
        #: a planner per rank (a private cache each, or a protocol over the job's memory)
        self._per_rank = scope == "private" or world_protocol
        copies = nodes if self._per_rank else 1
        pool = self.per_node_bytes * (1 if self._per_rank else nodes)
        self.systems: list[System] = [
            build_system(
                system,
                n=n,
                budget=Budget(capacity_bytes=pool, sizes=self.sizes),
                seed=seed,
                batch_size=batch_size,
                layout=layout,
                **dict(options or {}),
            )
            for _ in range(copies)
        ]
        caps = self.systems[0].capabilities
        if caps.needs_future or not caps.realizable:
            raise HotsetError(
                f"nodes: system {system!r} is an offline bound, not a cache a node can run"
            )
        step = batch_size * (1 if self._per_rank else nodes)
        self.planners = [
            Planner(s, n=n, batch_size=step, lag=0, sizes=self.sizes) for s in self.systems
        ]
        self.learns = caps.learns
        self.losses = SyntheticLosses(n, seed=seed) if self.learns else None
        self.home = owner_ranks(np.arange(n, dtype=np.int64), nodes)
        self.coverage = Coverage(n)
        self.epoch = 0

    # -- epochs -------------------------------------------------------------------
    def run_epoch(self) -> dict[str, Any]:
        epoch = self.epoch
        starts = [s.table.state_dict() if self.learns else None for s in self.systems]
        for rank, planner in enumerate(self.planners):
            planner.begin(epoch, rank=rank, world_size=len(self.planners))
        totals = np.zeros((len(NODE_KEYS), self.nodes))
        seconds = 0.0
        steps = max(p.n_batches for p in self.planners)
        for k in range(steps):
            step = self._private_step(k) if self._per_rank else self._pooled_step()
            totals += step.counts
            seconds += step.seconds + self.costs.compute_ms_per_batch / 1e3
        self._finish(epoch, starts)
        self.epoch += 1
        row: dict[str, Any] = {"epoch": epoch + 1}
        row.update({key: int(totals[i].sum()) for i, key in enumerate(NODE_KEYS)})
        served = row["requests"]
        hits = row["exact_hits"]
        row["exact_hit_ratio"] = hits / served if served else 0.0
        # of the requests the (pooled) cache served -- hits, substitutions, fetched-ahead
        # uses -- the share another node's part served
        cached = row["cache_serves"]
        row["remote_hit_share"] = row["remote_hits"] / cached if cached else 0.0
        row["storage_requests_busiest_node"] = int(
            totals[NODE_KEYS.index("storage_requests")].max()
        )
        row.update(self.coverage.close_epoch())
        row["modeled_epoch_seconds"] = seconds
        return row

    def _finish(self, epoch: int, starts: list[dict[str, Any] | None]) -> None:
        if not self.learns or len(self.planners) == 1:
            for planner in self.planners:
                planner.finish(val_accuracy=None)
            return
        parts: list[RankFeedback] = [
            {
                "ids": [fb.ids for fb in p.feedback.log],
                "losses": [fb.losses for fb in p.feedback.log],
                "val": None,
            }
            for p in self.planners
        ]
        for planner, system, start in zip(self.planners, self.systems, starts, strict=True):
            assert start is not None

            def share(
                _log: object, _val: float | None, s: System = system, st: dict[str, Any] = start
            ) -> tuple[float, float | None]:
                return merge_rank_feedback(s, parts, start_table=st, epoch=epoch)

            planner.finish(val_accuracy=None, share=share)

    # -- one step -----------------------------------------------------------------
    def _private_step(self, k: int) -> _Step:
        """Batch ``k`` of every rank, each on its own node's cache."""
        step = _Step(np.zeros((len(NODE_KEYS), self.nodes)))
        slowest = 0.0
        for rank, planner in enumerate(self.planners):
            if k >= planner.n_batches:
                continue
            plan = planner.plan_next()
            col = step.counts[:, rank]
            requests, hits, subs, ahead, reads = plan.served_counts()
            for key, value in (
                ("requests", requests),
                ("exact_hits", hits),
                ("substitutions", subs),
                ("fetched_ahead", ahead),
                ("storage_reads", reads),
                ("cache_serves", int((plan.outcomes <= _SUB).sum())),
                ("storage_requests", plan.storage_requests),
                ("storage_bytes", plan.storage_bytes),
            ):
                col[_ROW[key]] = value
            slowest = max(
                slowest, self.costs.storage_seconds(plan.storage_requests, plan.storage_bytes)
            )
            self._trained(planner, plan, [plan.served])
        step.seconds = slowest
        return step

    def _pooled_step(self) -> _Step:
        """One plan of ``K`` batches over the pool; position ``j`` is rank ``j // B``'s."""
        planner = self.planners[0]
        plan = planner.plan_next()
        nodes, b = self.nodes, self.batch_size
        req = np.arange(len(plan)) // b
        served, outcomes, sizes = plan.served, plan.outcomes, self.sizes
        kinds = plan.served_as()  # what the counters call each: a fetched-ahead HIT apart
        step = _Step(np.zeros((len(NODE_KEYS), nodes)))
        c = step.counts

        def per_node(mask: npt.NDArray[np.bool_], weights: Any = None) -> Any:
            return np.bincount(req[mask], weights=weights, minlength=nodes)

        c[_ROW["requests"]] = np.bincount(req, minlength=nodes)
        for key, outcome in (
            ("exact_hits", _HIT),
            ("substitutions", _SUB),
            ("fetched_ahead", _PRE),
            ("storage_reads", _MISS),
        ):
            c[_ROW[key]] = per_node(kinds == outcome)
        c[_ROW["cache_serves"]] = per_node(outcomes <= _SUB)
        remote = (outcomes <= _SUB) & (self.home[served] != req)
        c[_ROW["remote_hits"]] = per_node(remote)
        c[_ROW["remote_bytes"]] = per_node(remote, sizes[served[remote]])
        # who asked first for each id: storage reads and puts are charged to that node
        asked = np.concatenate([plan.requested, served])
        ids, first = np.unique(asked, return_index=True)
        asker = np.concatenate([req, req])[first]

        def node_of(some: IntArray) -> IntArray:
            """The first asker of each id; node 0 for an id no one asked (a unit's fill)."""
            at = np.minimum(np.searchsorted(ids, some), len(ids) - 1)
            return np.where(ids[at] == some, asker[at], 0).astype(np.int64)

        reads = plan.reads
        read_node = node_of(reads)
        c[_ROW["storage_requests"]] = np.bincount(read_node, minlength=nodes)
        c[_ROW["storage_bytes"]] = np.bincount(read_node, weights=sizes[reads], minlength=nodes)
        # unit reads and prefetches: spread over the nodes (their requester is not one node)
        c[_ROW["storage_requests"]] += (plan.storage_requests - len(reads)) / nodes
        c[_ROW["storage_bytes"]] += (plan.storage_bytes - int(sizes[reads].sum())) / nodes
        puts = plan.puts[plan.puts < len(sizes)]
        if len(puts):
            put_node = node_of(puts)
            away = self.home[puts] != put_node
            c[_ROW["remote_put_bytes"]] = np.bincount(
                put_node[away], weights=sizes[puts][away], minlength=nodes
            )
        remote_bytes = c[_ROW["remote_bytes"]] + c[_ROW["remote_put_bytes"]]
        step.seconds = max(
            self.costs.storage_seconds(c[_ROW["storage_requests"], r], c[_ROW["storage_bytes"], r])
            + self.costs.remote_seconds(c[_ROW["remote_hits"], r], remote_bytes[r])
            for r in range(nodes)
        )
        self._trained(planner, plan, [served[r * b : (r + 1) * b] for r in range(nodes)])
        return step

    def _trained(self, planner: Planner, plan: BatchPlan, parts: list[IntArray]) -> None:
        """Coverage, and each rank's batch scored on its own (as each rank would)."""
        start = 0
        for part in parts:
            weights = plan.weights[start : start + len(part)]
            start += len(part)
            if not len(part):
                continue
            self.coverage.add(part[weights > 0])  # a weight of 0 trains nothing (``base``)
            if self.losses is not None:
                planner.give(plan.index, part, self.losses(part))


def run_nodes(
    system: str,
    *,
    nodes: int,
    scope: str,
    sizes: IntArray,
    cache_frac: float,
    epochs: int,
    seed: int = 0,
    batch_size: int = 128,
    options: Mapping[str, Any] | None = None,
    costs: Costs | None = None,
    layout: UnitLayout | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Simulate ``epochs`` epochs; a result with per-epoch rows, totals and the model's limits."""
    if not isinstance(epochs, int) or epochs < 1:
        raise HotsetError(f"nodes: epochs must be a positive integer, got {epochs!r}")
    sim = NodeSim(
        system,
        nodes=nodes,
        scope=scope,
        sizes=sizes,
        cache_frac=cache_frac,
        seed=seed,
        batch_size=batch_size,
        options=options,
        costs=costs,
        layout=layout,
    )
    rows = []
    for _ in range(epochs):
        rows.append(sim.run_epoch())
        if progress:
            r = rows[-1]
            print(
                f"{system} {scope} x{nodes}: epoch {r['epoch']}/{epochs} "
                f"hits {r['exact_hit_ratio']:.3f} reads {r['storage_requests']}",
                file=sys.stderr,
            )
    later = rows[1:] or rows
    return {
        "system": system,
        "nodes": nodes,
        "scope": scope,
        "n": len(sim.sizes),
        "dataset_bytes": int(sim.sizes.sum()),
        "cache_frac_per_node": cache_frac,
        "cache_bytes_per_node": sim.per_node_bytes,
        "cache_bytes_total": sim.per_node_bytes * nodes,
        "batch_size_per_rank": batch_size,
        "seed": seed,
        "costs": asdict(sim.costs),
        "losses": "synthetic (hotset.sim.losses)" if sim.learns else "not used",
        "model": MODEL_LIMITS,
        "epochs": rows,
        "after_first": {
            key: sum(r[key] for r in later) / len(later)
            for key in (*NODE_KEYS, "unique_ids_trained", "modeled_epoch_seconds")
        },
    }


MODEL_LIMITS = (
    "simulated: no bytes move; counts are the engine's decisions, times a cost model",
    "storage: each node's own client (latency, concurrency, bandwidth); contention at the "
    "shared store is not modeled",
    "network: one round trip per node and step for its remote hits and puts, bytes at the "
    "link rate; no congestion",
    "lockstep: a step lasts the slowest node's I/O plus compute; no overlap of I/O and compute",
    "learning systems get synthetic per-sample losses (hotset.sim.losses) and no validation "
    "accuracy",
    "pooled: one policy over the pool sees every rank's requests (a global directory); the "
    "loader on a shared Redis namespace runs one policy per rank with pool lookups instead",
)


def scopes_for(system: str, nodes: int) -> tuple[str, ...]:
    """The scopes worth comparing for ``system`` (a name or spec) on ``nodes`` nodes.

    One node has nothing to pool; a system whose ranks share one memory by its own
    protocol (``capabilities.plans_world``: Brand §3.4) runs pooled only.
    """
    from hotset.systems.registry import parse_system

    if nodes == 1:
        return ("private",)
    return ("pooled",) if capabilities_of(parse_system(system)[0]).plans_world else SCOPES


def _check(*, nodes: int, scope: str, cache_frac: float, batch_size: int) -> None:
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise HotsetError(f"nodes: the node count must be a positive integer, got {nodes!r}")
    if scope not in SCOPES:
        raise HotsetError(f"nodes: scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    if not (isinstance(cache_frac, int | float) and 0 < cache_frac <= 1):
        raise HotsetError(f"nodes: cache_frac must be in (0, 1], got {cache_frac!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise HotsetError(f"nodes: batch_size must be a positive integer, got {batch_size!r}")
