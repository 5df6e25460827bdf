"""Quiver (FAST'20): a cache shared by jobs, served by substitution from two chunks.

The sampler is the framework's seeded permutation; :class:`hotset.policies.quiver.Quiver`
serves each request with the requested sample if it is cached, else with the
cached unused sample planned earliest (a substitutable hit), and loads the next
striped chunk of the data set while the current one is consumed, so the job runs
at cache-hit speed on a cache of two chunks and still trains every sample once per
epoch. A packed data set (``hotset data pack``) is loaded a chunk file per request;
without one, sample by sample. Several jobs share one cache with
``namespace="..."``: they follow the same chunk cycle, a job started later joining
it at the chunk the others load now (Algorithm 1's ``getCurrentChunk``), and find
each other's loads in the pool (co-operative misses, §5.2). ``emul_quiv`` stays
SHADE's emulation.
"""

from __future__ import annotations

from typing import Any

from hotset.engine.budget import Budget
from hotset.importance.table import ImportanceTable
from hotset.policies.quiver import Quiver
from hotset.samplers.random import RandomSampler
from hotset.systems.base import System, SystemSpec, with_defaults
from hotset.systems.options import SystemOption, declare

#: Quiver's options and their defaults (``hotset systems --options quiver``)
DEFAULTS: dict[str, Any] = {
    "probe": 0,
    "evict_after_s": 30.0,
    "lookahead": None,
    "mask_failures": False,
    "placement": False,
    "min_benefit": 1.1,
    "reprobe_epochs": 0,
    "fresh_order": True,
}


def build_quiver(
    *, n: int, budget: Budget, seed: int, batch_size: int = 128, **options: Any
) -> System:
    """Quiver: random order, substitutable hits, double-buffered striped chunks.

    ``probe=N`` plans the job's first N batches without the cache (every request a
    storage read), so their mini-batch times against the next N measure what the
    cache is worth to the job (§5.3; :mod:`hotset.policies.quiver.placement`).
    ``evict_after_s`` bounds how long a chunk one job released waits in a shared
    cache for slower jobs still using it (§5.1's forced eviction).
    ``lookahead=N`` serves substitutes only from the next N batches of unused planned
    ids, Algorithm 1's window (the paper's N: 10); None, the default, from every
    pending id (more substitutable hits, the same once-per-epoch guarantee).
    ``mask_failures`` (§4.8): entries the cache failed to return are substituted by
    cached ones still there and loaded back with the chunk cycle; False (the default)
    serves every planned cache read that fails from storage, in the batch. Off by
    default because masking makes decisions depend on what the cache lost, which a
    checkpoint does not record: a job resumed on a shared namespace whose entries
    changed meanwhile would not go on exactly as the interrupted one.
    ``placement`` closes §5.3's loop (needs ``probe >= 2``): the job publishes its probe
    on its namespace's board and, at each epoch's start, applies ``place()`` to every
    job's probe there; a job gaining less than ``min_benefit`` (or whose data set gets
    no space) turns its caching off. ``reprobe_epochs=E`` probes again every E epochs
    (0, the default: never; a probe costs ``probe`` batches read from storage, and a
    job's benefit changes only when the load on the store does).
    ``fresh_order`` (the default) gives a job alone a fresh order every epoch: the units
    of the chunks not in the cache are dealt afresh among them at each epoch's start;
    false keeps the paper's fixed stripes (consecutive epochs then correlate at rho
    0.96-1.00). Jobs sharing a cache keep the fixed cycle either way.
    """
    opts = with_defaults("quiver", options, DEFAULTS)
    return System(
        name="quiver",
        sampler=RandomSampler(n, seed=seed),
        policy=Quiver(
            budget,
            seed=seed,
            batch_size=batch_size,
            probe=opts["probe"],
            evict_after_s=opts["evict_after_s"],
            lookahead=opts["lookahead"],
            mask_failures=opts["mask_failures"],
            placement=opts["placement"],
            min_benefit=opts["min_benefit"],
            reprobe_epochs=opts["reprobe_epochs"],
            fresh_order=opts["fresh_order"],
        ),
        table=ImportanceTable(n),
        options={"batch_size": batch_size},
    )


SPECS: list[SystemSpec] = [
    SystemSpec(
        "quiver",
        "Quiver: substitutable hits over two striped chunks loaded in turn; shared across jobs",
        "Quiver FAST'20 §4.7, §5.1-5.2, Algorithm 1",
        build_quiver,
    ),
]

OPTIONS: dict[str, tuple[SystemOption, ...]] = {
    "quiver": declare(
        DEFAULTS,
        {
            "probe": (
                "int",
                "the job's first N batches skip the cache, to measure what it is worth (§5.3)",
            ),
            "evict_after_s": (
                "number",
                "seconds a chunk another job released waits in a shared cache for slower jobs",
            ),
            "lookahead": (
                "int|none",
                "substitutes from the next N batches of unused ids (Algorithm 1: 10); "
                "none: every pending id",
            ),
            "mask_failures": (
                "bool",
                "substitute around cache entries lost to a failure, reload them with the "
                "chunks (§4.8); false: read each failed cache read from storage",
            ),
            "placement": (
                "bool",
                "apply benefit-aware placement from the namespace's probe board at each "
                "epoch's start (§5.3; needs probe >= 2); false: the probe is only measured",
            ),
            "min_benefit": (
                "number",
                "with placement: a job whose t_miss / t_hit is below this turns caching off",
            ),
            "reprobe_epochs": (
                "int",
                "with placement: probe again every N >= 2 epochs (a probe spans two; 0: never)",
            ),
            "fresh_order": (
                "bool",
                "a job alone deals the chunks' units afresh every epoch, so no sample comes at "
                "the same point of every epoch; false: the paper's fixed stripes",
            ),
        },
    )
}
