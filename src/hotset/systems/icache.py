"""iCACHE (HPCA'23 §III-A–D) and the ablations the paper evaluates.

===================  =====================================================================
``icache``           IIS sampler (raw-loss importance) + H-cache (min-heap) / L-cache (subst.)
``icache_iis_lru``   IIS sampler alone, LRU cache
``icache_h``         IIS sampler + H-cache only (the whole budget is one importance heap)
``icache_st_hc``     as ``icache``, but an L miss is substituted by an H resident
``icache_static_pack`` as ``icache``, but the L-cache loads fixed packages made once
===================  =====================================================================

``icache[multijob=true]`` (§III-D) keys the cache by the adjusted importance of
the jobs sharing it (:mod:`hotset.policies.icache.multijob`); on a Redis namespace
several jobs join, the loader probes, publishes and reads their benefit and RIV
(:mod:`hotset.coordination.jobs_link`).

Every icache system but ``icache_iis_lru`` holds H residents the epoch still
plans out of the heap (``lookahead``, beyond the paper);
``icache[lookahead=False]`` is the paper's H-cache rule.

Importance is the raw per-sample loss (:class:`LossScorer`); the sampler reads only
the samples it keeps (:mod:`hotset.samplers.iis`), the cache is
:class:`hotset.policies.icache.packed.PackedICache`: the H-cache of
:class:`hotset.policies.icache.ICache` and an L-cache loaded from packages of
>= 1 MB (:mod:`hotset.policies.icache.packing`), written to the data store under
``.hotset-packages/`` by the driver.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hotset.engine.budget import Budget
from hotset.engine.packages import PACKAGE_BYTES
from hotset.engine.policy import Policy
from hotset.errors import HotsetError
from hotset.importance.multijob import BENEFIT_PROBE, ELIGIBLE_ABOVE
from hotset.importance.scorers import LossScorer
from hotset.importance.table import ImportanceTable
from hotset.policies.icache.packed import ICacheRules, PackedICache
from hotset.policies.icache.policy import H_SHARE, H_START, ICache
from hotset.policies.registry import make_policy
from hotset.samplers.iis import BETA, REUSE_FACTOR, WARM_UP, WINDOW, IISSampler
from hotset.systems.base import System, SystemSpec, with_defaults
from hotset.systems.options import SystemOption, declare

#: every option an icache system accepts, with the authors' values
DEFAULTS: dict[str, Any] = {
    "beta": BETA,
    "window": WINDOW,
    "warm_up": WARM_UP,
    "reuse_factor": REUSE_FACTOR,
    "h_share": H_SHARE,
    "h_start": H_START,
    "lookahead": True,
    "package_bytes": PACKAGE_BYTES,
    #: the authors' rules hotset leaves off by default (docs/systems/icache.md)
    "full_fill": False,
    "l_floor": False,
    #: §III-D: key the cache by the adjusted importance of the jobs sharing it
    "multijob": False,
    "eligible_above": ELIGIBLE_ABOVE,
    #: §III-D: mini-batches read without the cache, then as many with it, per epoch
    "benefit_probe": BENEFIT_PROBE,
}


Cache = Callable[[Budget, int, int, dict[str, Any], IISSampler, int], Policy]


def _probe_requests(opts: dict[str, Any], batch_size: int) -> int:
    """The requests of each epoch planned without the cache: ``benefit_probe``
    mini-batches under ``multijob`` (§III-D's T_cacheless), none otherwise."""
    probe = opts["benefit_probe"]
    if isinstance(probe, bool) or not isinstance(probe, int) or probe < 0 or probe == 1:
        raise HotsetError(
            f"icache: benefit_probe must be a number of mini-batches >= 2 (the paper's: "
            f"{BENEFIT_PROBE}), or 0 (no probe: no benefit measured), got {probe!r}"
        )
    return probe * batch_size if opts["multijob"] else 0


def _system(name: str, cache: Cache) -> Callable[..., System]:
    def build(
        *, n: int, budget: Budget, seed: int, batch_size: int = 128, **options: Any
    ) -> System:
        opts = with_defaults(name, options, DEFAULTS)
        sampler = IISSampler(
            n,
            seed=seed,
            beta=opts["beta"],
            window=opts["window"],
            warm_up=opts["warm_up"],
            reuse_factor=opts["reuse_factor"],
        )
        return System(
            name=name,
            sampler=sampler,
            policy=cache(budget, n, seed, opts, sampler, batch_size),
            table=ImportanceTable(n),
            scorer=LossScorer(),
            options={"batch_size": batch_size, **opts},
        )

    build.__name__ = f"build_{name}"
    build.__doc__ = f"iCACHE system {name!r} (see the module docstring)."
    return build


def _icache(*, packaging: str | None = "dynamic", **fixed: Any) -> Cache:
    """An iCACHE cache; ``packaging=None``: the H-cache alone (no L traffic to pack)."""

    def make(
        budget: Budget,
        n: int,
        seed: int,
        opts: dict[str, Any],
        sampler: IISSampler,
        batch_size: int,
    ) -> Policy:
        given: dict[str, Any] = {
            "h_share": opts["h_share"],
            "h_start": opts["h_start"],
            "lookahead": opts["lookahead"],
        } | fixed
        rules: dict[str, Any] = {
            "full_fill": opts["full_fill"],
            "full_epoch": sampler.is_full_epoch,
            "multijob": opts["multijob"],
            "eligible_above": opts["eligible_above"],
            "probe_requests": _probe_requests(opts, batch_size),
        }
        if packaging is None:  # no L-cache, so no l_floor to check or apply
            return ICache(budget, seed=seed, **given, **rules)
        return PackedICache(
            budget,
            n=n,
            seed=seed,
            packaging=packaging,
            package_bytes=opts["package_bytes"],
            rules=ICacheRules(l_floor=opts["l_floor"], **rules),
            **given,
        )

    return make


def _lru(
    budget: Budget, _n: int, seed: int, opts: dict[str, Any], _s: IISSampler, _b: int
) -> Policy:
    """IIS's LRU cache: no heap, so nothing for the jobs' importance to key."""
    if opts["multijob"]:
        raise HotsetError("icache_iis_lru: multijob needs an importance heap; use icache")
    return make_policy("lru", budget, seed=seed)


SPECS: list[SystemSpec] = [
    SystemSpec(
        "icache",
        "iCACHE: IIS sampling (loss percentile^0.33), H min-heap cache + L cache loaded from "
        "dynamic packages, served by substitution",
        "iCACHE HPCA'23 §III-A–D",
        _system("icache", _icache()),
    ),
    SystemSpec(
        "icache_iis_lru",
        "iCACHE ablation: IIS sampling alone, LRU cache",
        "iCACHE HPCA'23 §V (IIS only)",
        _system("icache_iis_lru", _lru),
    ),
    SystemSpec(
        "icache_h",
        "iCACHE ablation: IIS sampling, H-cache only (one importance min-heap, no substitution)",
        "iCACHE HPCA'23 §V (H-cache only)",
        _system("icache_h", _icache(packaging=None, h_share=1.0, h_start=1.0, resize=False)),
    ),
    SystemSpec(
        "icache_st_hc",
        "iCACHE ablation: L misses substituted by H residents instead of L residents",
        "iCACHE HPCA'23 §V (ST_HC vs ST_LC)",
        _system("icache_st_hc", _icache(substitute_to="h")),
    ),
    SystemSpec(
        "icache_static_pack",
        "iCACHE ablation: the L-cache loads fixed packages made once (static packaging)",
        "iCACHE HPCA'23 §III-C, §V (static vs dynamic packaging)",
        _system("icache_static_pack", _icache(packaging="static")),
    ),
]

#: what each option means and its type (``hotset systems --options icache``); the
#: defaults are :data:`DEFAULTS`, the ones ``build`` uses
OPTION_DOCS: dict[str, tuple[str, str]] = {
    "beta": ("number", "a sample is kept with probability (its loss percentile) ** beta"),
    "window": ("int", "the last losses a sample's percentile is taken among"),
    "warm_up": ("int", "full epochs (every sample read) before IIS selects"),
    "reuse_factor": ("int", "every reuse_factor-th epoch is a full epoch"),
    "h_share": ("number", "top share of an epoch's planned ids, by importance, that is H"),
    "h_start": ("number", "share of the budget the H-cache starts with (L gets the rest)"),
    "lookahead": (
        "bool",
        "hold H residents the epoch still plans out of the heap (false: the paper's H rule)",
    ),
    "package_bytes": ("int", "bytes of a package the L-cache is loaded from"),
    "full_fill": (
        "bool",
        "full epochs fill the caches without eviction or substitution (the authors' rule)",
    ),
    "l_floor": (
        "bool",
        "the L-cache never shrinks below one package (min(package_bytes, half the budget))",
    ),
    "multijob": (
        "bool",
        "key the cache by the adjusted importance (AIV) of the jobs sharing it, given "
        "with update_jobs() (§III-D)",
    ),
    "eligible_above": (
        "number",
        "a job counts in the AIV when its benefit T_cacheless / T_cache is above this",
    ),
    "benefit_probe": (
        "int",
        "under multijob, each epoch's first N mini-batches skip the cache, the next N use "
        "it: the job's benefit is their time ratio",
    ),
}
OPTIONS: dict[str, tuple[SystemOption, ...]] = {
    spec.name: declare(DEFAULTS, OPTION_DOCS) for spec in SPECS
}
