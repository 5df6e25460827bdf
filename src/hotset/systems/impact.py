"""ImPACT (IEEE TC'25): iCACHE's caches + importance-informed prefetch with the hybrid evaluator.

====================  ======================================================================
``impact``            warm-up (full epochs, static caching) until S is stable; then S in a
                      static buffer, re-evaluated before every draw; IIS selection over the
                      hybrid estimates; H/L caches with dynamic packages
``impact_history``    the same, but S is never re-evaluated: history-only estimates
``impact_realtime``   the same, but every sample is re-evaluated before each draw (read
                      from storage when the cache does not hold it): exact estimates
====================  ======================================================================

One :class:`~hotset.importance.rank_variance.RankTracker` is shared by the sampler
(:class:`~hotset.samplers.impact.ImpactSampler`: full epochs until the tracker is
done) and the cache (:class:`~hotset.policies.impact.ImpactCache`: buffers S once
known). Importance is the raw per-sample loss, as in iCACHE.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hotset.engine.budget import Budget
from hotset.engine.packages import PACKAGE_BYTES
from hotset.importance.rank_variance import MAX_WARM_UP, OVERLAP, S_SHARE
from hotset.importance.scorers import LossScorer
from hotset.importance.table import ImportanceTable
from hotset.policies.icache.policy import H_SHARE, H_START
from hotset.policies.impact import ImpactCache, ImpactHistoryCache, ImpactRealtimeCache
from hotset.samplers.iis import BETA, DEFAULT_COVERAGE_EPOCHS, WINDOW
from hotset.samplers.impact import SAMPLERS, ImpactSampler
from hotset.samplers.rho import RHO_SHARE, irreducible_option
from hotset.systems.base import System, SystemSpec, with_defaults
from hotset.systems.icache import OPTION_DOCS as ICACHE_DOCS
from hotset.systems.options import SystemOption, declare

#: every option an impact system accepts, with the papers' values
DEFAULTS: dict[str, Any] = {
    "beta": BETA,
    "window": WINDOW,
    "h_share": H_SHARE,
    "h_start": H_START,
    "lookahead": True,
    "package_bytes": PACKAGE_BYTES,
    "s_share": S_SHARE,
    "overlap": OVERLAP,
    "max_warm_up": MAX_WARM_UP,
    #: beyond the paper, on by default: every sample asked for at least once every 10
    #: epochs (ImPACT has no full epochs after its warm-up); 0 is the paper's behaviour
    "coverage_epochs": DEFAULT_COVERAGE_EPOCHS,
    #: the selection rule: iCACHE's percentile rule (Selective-Backprop, the paper's [14]),
    #: or keep-probability proportional to the loss (docs/systems/impact.md says why)
    "sampler": SAMPLERS[0],
    #: sampler=rho: the share of ids with a known loss kept (RHO-loss's n_b / n_B)
    "rho_share": RHO_SHARE,
    #: sampler=rho: a .npy array of one irreducible loss per id (none: given later, by
    #: loader.system.set_irreducible or, in the simulators, a held-out model)
    "irreducible": None,
}


def _system(name: str, cache: type[ImpactCache]) -> Callable[..., System]:
    def build(
        *, n: int, budget: Budget, seed: int, batch_size: int = 128, **options: Any
    ) -> System:
        opts = with_defaults(name, options, DEFAULTS)
        policy = cache(
            budget,
            n=n,
            seed=seed,
            h_share=opts["h_share"],
            h_start=opts["h_start"],
            lookahead=opts["lookahead"],
            package_bytes=opts["package_bytes"],
            s_share=opts["s_share"],
            overlap=opts["overlap"],
            max_warm_up=opts["max_warm_up"],
        )
        sampler = ImpactSampler(
            n,
            tracker=policy.tracker,
            seed=seed,
            beta=opts["beta"],
            window=opts["window"],
            coverage_epochs=opts["coverage_epochs"],
            sampler=opts["sampler"],
            rho=irreducible_option(name, n, rho=opts["sampler"] == "rho", path=opts["irreducible"]),
            rho_share=opts["rho_share"],
        )
        return System(
            name=name,
            sampler=sampler,
            policy=policy,
            table=ImportanceTable(n),
            scorer=LossScorer(),
            options={"batch_size": batch_size, **opts},
        )

    build.__name__ = f"build_{name}"
    build.__doc__ = f"ImPACT system {name!r} (see the module docstring)."
    return build


SPECS: list[SystemSpec] = [
    SystemSpec(
        "impact",
        "ImPACT: warm-up until S is stable, S buffered and re-evaluated each epoch, IIS over "
        "hybrid estimates, iCACHE's H/L caches",
        "ImPACT IEEE TC'25 §III",
        _system("impact", ImpactCache),
    ),
    SystemSpec(
        "impact_history",
        "ImPACT ablation: history-only importance estimates (S never re-evaluated)",
        "ImPACT IEEE TC'25 §V-E (hybrid vs history)",
        _system("impact_history", ImpactHistoryCache),
    ),
    SystemSpec(
        "impact_realtime",
        "ImPACT ablation: every sample re-evaluated before each draw (exact estimates, a "
        "forward pass over the data set and a read of each uncached sample per epoch)",
        "ImPACT IEEE TC'25 §V-E (realtime)",
        _system("impact_realtime", ImpactRealtimeCache),
    ),
]

#: what each option means and its type (``hotset systems --options impact``); the
#: defaults are :data:`DEFAULTS`, the ones ``build`` uses
_DOCS: dict[str, tuple[str, str]] = {
    **{key: ICACHE_DOCS[key] for key in DEFAULTS if key in ICACHE_DOCS},
    "s_share": ("number", "share of the cache the set S (samples re-evaluated) fills"),
    "overlap": ("number", "share of ids two successive S' must share to end the warm-up"),
    "max_warm_up": ("int", "the most warm-up epochs (full epochs) before S is fixed"),
    "coverage_epochs": (
        "int",
        "every sample not trained for this many epochs is selected (0: off, the paper's behaviour)",
    ),
    "sampler": (
        "|".join(SAMPLERS),
        "selection rule: percentile (iCACHE's, keep with percentile(loss) ** beta), loss "
        "(keep with probability proportional to the loss, 1 / (1 + beta) of the ids) or rho "
        "(RHO-loss, the paper's [22]: the top rho_share by loss minus irreducible loss)",
    ),
    "rho_share": ("number", "sampler=rho: share of the ids with a known loss kept each epoch"),
    "irreducible": (
        "none|path",
        "sampler=rho: .npy array of one irreducible loss per id (none: set later with "
        "loader.system.set_irreducible; the simulators train a held-out model)",
    ),
}
OPTIONS: dict[str, tuple[SystemOption, ...]] = {
    spec.name: declare(DEFAULTS, _DOCS) for spec in SPECS
}
