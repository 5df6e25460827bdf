"""``hotset bench sim``: how fast each policy replays a trace, in accesses per second.

The workload is the one the package exists for: fresh random permutations of
``n`` ids, epoch after epoch, cut to ``accesses`` accesses, with a cache of
``cache_frac * n`` items. Each policy replays the whole trace once through
:meth:`Policy.replay` (Belady's future is computed first and timed with it,
since a real run pays for it too). Timings are wall-clock on one core.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from hotset.bench.sim_options import SimBenchOptions
from hotset.engine.budget import Budget
from hotset.engine.outcome import Outcome
from hotset.engine.roles import NeedsFuture, missing_role
from hotset.policies.registry import make_policy

#: the policies measured by default (every classic one)
DEFAULT_POLICIES = ("nocache", "fifo", "lru", "lfu", "minio", "belady", "oracle")


def permutation_trace(*, accesses: int, n: int, seed: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    """``accesses`` ids from back-to-back seeded permutations of ``0..n-1``."""
    epochs = -(-accesses // n)
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.permutation(n) for _ in range(epochs)])[:accesses].astype(np.int64)


#: the options of a run without any (every default)
DEFAULT_OPTIONS = SimBenchOptions()


def run(opts: SimBenchOptions = DEFAULT_OPTIONS) -> dict[str, Any]:
    """Time one replay per policy; rows carry accesses/s and the hit ratio reached."""
    accesses, n, cache_frac, seed = opts.accesses, opts.n, opts.cache_frac, opts.seed
    names = list(opts.policies) if opts.policies else list(DEFAULT_POLICIES)
    trace = permutation_trace(accesses=accesses, n=n, seed=seed)
    capacity = max(1, int(cache_frac * n))
    table: list[dict[str, Any]] = []
    for name in names:
        policy = make_policy(name, Budget(capacity_items=capacity), seed=seed)
        start = time.perf_counter()
        if policy.capabilities.needs_future:
            if not isinstance(policy, NeedsFuture):
                raise missing_role(policy, "NeedsFuture", "needs_future")
            policy.set_future(trace)
        out = policy.replay(trace)
        seconds = time.perf_counter() - start
        hits = int(np.count_nonzero(out == Outcome.HIT))
        table.append(
            {
                "policy": name,
                "accesses": accesses,
                "seconds": round(seconds, 4),
                "accesses_per_s": round(accesses / seconds) if seconds > 0 else float("inf"),
                "hit_ratio": hits / accesses,
            }
        )
    return {
        "params": {"accesses": accesses, "n": n, "cache_frac": cache_frac, "seed": seed},
        "table": table,
        "notes": [
            f"random permutation per epoch of n={n} ids, cache {capacity} items "
            f"({cache_frac:g} of the data), one replay per policy on one core",
            "targets: lru and fifo >= 1,000,000 accesses/s, belady >= 300,000 accesses/s",
        ],
    }
