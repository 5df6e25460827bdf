"""The multi-node simulator: private and pooled caches over K lockstep ranks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from hotset.errors import HotsetError
from hotset.sim.nodes import NODE_KEYS, Costs, NodeSim, run_nodes
from hotset.systems.registry import capabilities_of, system_names
from layout_support import make_layout

SIZES = np.random.default_rng(3).integers(500, 1500, 2400).astype(np.int64)
LAYOUT = make_layout(SIZES, 16, seed=0)

#: systems a node can run (not offline bounds)
RUNNABLE = [
    name
    for name in system_names()
    if capabilities_of(name).realizable and not capabilities_of(name).needs_future
]
#: systems that train every sample once per epoch (a random permutation, sharded)
EXACTLY_ONCE = ["pytorch", "fifo", "lru", "lfu", "minio"]


def _run(system: str, nodes: int, scope: str, **kw: Any) -> dict[str, Any]:
    layout = LAYOUT if capabilities_of(system).reads_units else None
    args: dict[str, Any] = {"cache_frac": 0.1, "epochs": 3, "batch_size": 32, "layout": layout}
    args.update(kw)
    return run_nodes(system, nodes=nodes, scope=scope, sizes=SIZES, **args)


@pytest.mark.parametrize("scope", ["private", "pooled"])
@pytest.mark.parametrize("system", RUNNABLE)
def test_every_system_runs_on_nodes_and_its_counts_add_up(system: str, scope: str) -> None:
    if capabilities_of(system).plans_world and scope == "private":
        with pytest.raises(HotsetError, match="simulate it with scope pooled"):
            _run(system, 3, scope)  # its ranks share one memory by its own protocol
        return
    result = _run(system, 3, scope)
    again = _run(system, 3, scope)
    assert result["epochs"] == again["epochs"]  # deterministic
    for row in result["epochs"]:
        served = row["exact_hits"] + row["substitutions"] + row["fetched_ahead"]
        assert served + row["storage_reads"] == row["requests"]
        assert row["remote_hits"] <= row["cache_serves"] <= served
        assert row["storage_requests"] >= 0 and row["storage_bytes"] >= 0
        if scope == "private":
            assert row["remote_hits"] == row["remote_bytes"] == row["remote_put_bytes"] == 0


@pytest.mark.parametrize("system", ["pytorch", "lru", "minio", "shade"])
def test_one_node_is_the_same_whichever_the_scope(system: str) -> None:
    private, pooled = _run(system, 1, "private"), _run(system, 1, "pooled")
    assert private["epochs"] == pooled["epochs"]


@pytest.mark.parametrize("scope", ["private", "pooled"])
@pytest.mark.parametrize("nodes", [2, 4])
@pytest.mark.parametrize("system", EXACTLY_ONCE)
def test_each_sample_is_trained_once_per_epoch_across_nodes(
    system: str, nodes: int, scope: str
) -> None:
    for row in _run(system, nodes, scope)["epochs"]:
        assert row["requests"] == row["unique_ids_trained"] == len(SIZES)


def test_a_pool_holds_what_its_nodes_hold_together() -> None:
    """MinIO at 10% per node: a node's own cache hits about 10%, a pool of 4 about 40%.

    From the second epoch on: each rank chooses its subset among its first shard.
    """
    private = _run("minio", 4, "private")["epochs"][-1]
    pooled = _run("minio", 4, "pooled")["epochs"][-1]
    assert private["exact_hit_ratio"] == pytest.approx(0.1, abs=0.03)
    assert pooled["exact_hit_ratio"] == pytest.approx(0.4, abs=0.03)
    # three quarters of the pool's entries live on another node than the one asking
    assert pooled["remote_hit_share"] == pytest.approx(0.75, abs=0.05)
    assert pooled["storage_requests"] < private["storage_requests"]


def test_ranks_of_a_learning_system_hold_one_table_and_draw_one_order() -> None:
    sim = NodeSim("shade", nodes=3, scope="private", sizes=SIZES, cache_frac=0.1, batch_size=32)
    for _ in range(3):
        sim.run_epoch()
        tables = [s.table.snapshot().scores for s in sim.systems]
        assert all(np.array_equal(tables[0], t) for t in tables[1:])
        orders = [p.order for p in sim.planners]
        assert len(np.intersect1d(orders[0], orders[1])) < len(orders[0])  # shards differ
    assert not np.allclose(tables[0], tables[0][0])  # the losses moved the scores


def test_costs_grow_with_reads_and_remote_bytes() -> None:
    slow = _run("lru", 2, "pooled", costs=Costs(storage_latency_ms=10.0))
    fast = _run("lru", 2, "pooled", costs=Costs(storage_latency_ms=1.0))
    assert (
        slow["after_first"]["modeled_epoch_seconds"] > fast["after_first"]["modeled_epoch_seconds"]
    )
    assert set(NODE_KEYS) <= set(slow["after_first"])
    assert any("contention" in line for line in slow["model"])  # says what it leaves out


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"nodes": 0}, "node count"),
        ({"nodes": True}, "node count"),
        ({"scope": "shared"}, "scope must be one of"),
        ({"cache_frac": 1.5}, "cache_frac"),
        ({"batch_size": 0}, "batch_size"),
        ({"epochs": 0}, "epochs"),
        ({"system": "belady"}, "offline bound"),
        ({"costs": "fast"}, "costs"),
    ],
)
def test_bad_input_is_a_clear_error(kw: dict[str, Any], match: str) -> None:
    args: dict[str, Any] = {
        "system": "lru",
        "nodes": 2,
        "scope": "pooled",
        "sizes": SIZES,
        "cache_frac": 0.1,
        "epochs": 1,
    }
    args.update(kw)
    with pytest.raises(HotsetError, match=match):
        run_nodes(args.pop("system"), **args)


def test_bad_costs_name_the_value() -> None:
    with pytest.raises(HotsetError, match="net_gb_s must be positive, got 0"):
        Costs(net_gb_s=0)
    with pytest.raises(HotsetError, match="storage_latency_ms must be a finite number"):
        Costs(storage_latency_ms=float("nan"))


@pytest.mark.parametrize("nodes", [1, 2])
def test_coverage_counts_what_base_trains_not_what_it_reads(nodes: int) -> None:
    """``base`` reads every sample; the ones IIS does not select weigh 0 and train nothing."""
    result = _run("base", nodes, "private", options={"warm_up": 1, "window": 16})
    n = len(SIZES)
    warm, *selecting = result["epochs"]
    assert warm["unique_ids_trained"] == n
    assert all(row["requests"] == n for row in result["epochs"])
    assert any(row["unique_ids_trained"] < n for row in selecting), selecting
