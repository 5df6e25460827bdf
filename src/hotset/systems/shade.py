"""SHADE (FAST'23) and the variants its evaluation compares it with.

``shade``      log-rank per-sample scores (§4.2.1) + PADS sampler + APP cache
``sh_pqlfu``   §6.2 (1): batch-loss scores, plain importance sampling, evict least (loss, frequency)
``sh_pq``      §6.2 (2): batch-loss scores, plain importance sampling, evict least loss
``sh_lru``     §6.2 (3): batch-loss scores, plain importance sampling, LRU
``sh_lfu``     §6.2 (4): batch-loss scores, plain importance sampling, LFU
``sh_rand``    §6.2 (5): batch-loss scores, plain importance sampling, random eviction
``sh_app``     §6.2 (6): batch-loss scores, plain importance sampling, APP
``emul_coor``  §6.6: per-sample-loss importance sampling, CoorDL-style fill-and-keep cache
``emul_quiv``  §6.6: per-sample-loss importance sampling, Quiver-style substitution

"Plain importance sampling" is :class:`PADSSampler` with ``pads=False``: the same
seeded multinomial draw over ``score + ls_param``, strided across ranks, without
the frequency sort, the mode switch or cache-aware repetition. The §6.2 variants
score every sample of a batch with the batch's mean loss (the coarse-grained
default the paper argues against); §6.6 says its emulations use loss-based
importance sampling, so they score each sample by its own loss.

``rep_factor`` defaults to 3.0, the value the authors' launch scripts pass
(``-rep``, default 3.0); the paper gives no number. ``shade`` is adaptive by
default (repetitions follow the loss, shuffle epochs on a steep loss decline
or stagnant accuracy, aggressive mode as the authors' code means it);
``shade[adaptive=false]`` is the authors' fixed arithmetic. Every PADS system
also takes the guards ``coverage_floor``, ``anneal_from``, ``unbiased`` and
``guardrail``/``guard_threshold``
(:mod:`hotset.samplers.pads`).

Every PADS system keeps a coverage floor by default (``coverage_floor`` 0.1:
every sample trained at least once in every 10 consecutive epochs), because
without it SHADE at larger caches trains a fixed subset: on 4,499 synth samples
at 40% cache, epochs 4-10 were all hits and 1,417 samples were never trained.
``coverage_floor=0`` is the paper's behaviour, order for order.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from hotset.engine.budget import Budget
from hotset.engine.policy import Policy
from hotset.errors import HotsetError
from hotset.importance.scorers import BatchLossScorer, LogRankScorer, LossScorer, Scorer
from hotset.importance.table import ImportanceTable
from hotset.policies.app import APP
from hotset.policies.registry import make_policy
from hotset.policies.shade_variants import (
    FillKeep,
    Priority,
    PriorityLFU,
    RandomEvict,
    SubstituteFromCache,
)
from hotset.samplers.pads import DEFAULT_COVERAGE_FLOOR, Adaptivity, PADSSampler, SubsetGuards
from hotset.systems.base import System, SystemSpec, with_defaults
from hotset.systems.options import SystemOption, declare

#: SHADE's defaults; every option a SHADE-family system accepts is listed here
#: guards against training a subset (see hotset.samplers.pads): the coverage floor
#: is on (``coverage_floor=0`` is the paper's behaviour), the others off;
#: ``unbiased`` yields ``1 / (N p_i)`` loss weights through the loader's ``w``
GUARD_DEFAULTS: dict[str, Any] = {
    "coverage_floor": DEFAULT_COVERAGE_FLOOR,
    "anneal_from": None,
    "unbiased": False,
    "guardrail": 0.0,
    "guard_threshold": 0.1,
}
#: ``adaptive``: the paper's adaptivity (hotset.samplers.pads_schedule); False keeps
#: the authors' fixed-repetition arithmetic. ``aggressive`` None: "head" (the authors'
#: meaning) when adaptive, else "blocks" (the arithmetic hotset shipped first)
SHADE_DEFAULTS: dict[str, Any] = {
    "rep_factor": 3.0,
    "ls_init_frac": 0.01,
    "adaptive": True,
    "steep_decline": 0.25,
    "stagnant": 0.002,
    "aggressive": None,
    **GUARD_DEFAULTS,
}
VARIANT_DEFAULTS: dict[str, Any] = {"ls_init_frac": 0.01, **GUARD_DEFAULTS}


def _guards(opts: dict[str, Any]) -> SubsetGuards:
    """The guards a SHADE-family system's options set (:data:`GUARD_DEFAULTS`)."""
    return SubsetGuards(
        coverage_floor=opts["coverage_floor"],
        anneal_from=opts["anneal_from"],
        guardrail=opts["guardrail"],
        guard_threshold=opts["guard_threshold"],
    )


def _unbiased(system: str, opts: dict[str, Any]) -> bool:
    value = opts["unbiased"]
    if not isinstance(value, bool):
        raise HotsetError(f"system {system!r}: unbiased must be True or False, got {value!r}")
    return value


def build_shade(
    *, n: int, budget: Budget, seed: int, batch_size: int = 128, **options: Any
) -> System:
    """SHADE with every technique on: log-rank scores, PADS, APP."""
    opts = with_defaults("shade", options, SHADE_DEFAULTS)
    return System(
        name="shade",
        sampler=PADSSampler(
            n,
            seed=seed,
            rep_factor=opts["rep_factor"],
            ls_init_frac=opts["ls_init_frac"],
            batch_size=batch_size,
            guards=_guards(opts),
            adaptivity=Adaptivity(
                adaptive=opts["adaptive"],
                steep_decline=opts["steep_decline"],
                stagnant=opts["stagnant"],
            ),
            aggressive=opts["aggressive"] or ("head" if opts["adaptive"] is True else "blocks"),
        ),
        policy=APP(budget, seed=seed),
        table=ImportanceTable(n),
        scorer=LogRankScorer(),
        weighted=_unbiased("shade", opts),
        options={"batch_size": batch_size, "policy": "app", **opts},
    )


def _variant(
    system: str,
    policy_name: str,
    make: Callable[[Budget, int], Policy],
    scorer: Callable[[], Scorer],
) -> Callable[..., System]:
    def build(
        *, n: int, budget: Budget, seed: int, batch_size: int = 128, **options: Any
    ) -> System:
        opts = with_defaults(system, options, VARIANT_DEFAULTS)
        return System(
            name=system,
            sampler=PADSSampler(
                n,
                seed=seed,
                ls_init_frac=opts["ls_init_frac"],
                batch_size=batch_size,
                pads=False,
                guards=_guards(opts),
            ),
            policy=make(budget, seed),
            table=ImportanceTable(n),
            scorer=scorer(),
            weighted=_unbiased(system, opts),
            options={"batch_size": batch_size, "policy": policy_name, **opts},
        )

    build.__name__ = f"build_{system}"
    build.__doc__ = (
        f"SHADE comparison {system!r}: importance sampling with the {policy_name!r} cache."
    )
    return build


def _covered(summary: str) -> str:
    """A system's one-line summary, saying that the coverage floor is on by default."""
    window = math.ceil(round(1.0 / DEFAULT_COVERAGE_FLOOR, 9))
    return f"{summary}; every sample trained at least every {window} epochs (coverage_floor=0: the paper's)"


def _registered(name: str) -> Callable[[Budget, int], Policy]:
    return lambda budget, seed: make_policy(name, budget, seed=seed)


SPECS: list[SystemSpec] = [
    SystemSpec(
        "shade",
        _covered(
            "SHADE: per-sample log-rank importance, PADS sampling with cache-aware repetition, APP cache"
        ),
        "SHADE FAST'23 §4",
        build_shade,
    ),
    SystemSpec(
        "sh_pqlfu",
        _covered("batch-loss importance sampling; evict least (loss, access frequency)"),
        "SHADE FAST'23 §6.2 (1)",
        _variant("sh_pqlfu", "sh_pqlfu", lambda b, s: PriorityLFU(b, seed=s), BatchLossScorer),
    ),
    SystemSpec(
        "sh_pq",
        _covered("batch-loss importance sampling; evict least loss"),
        "SHADE FAST'23 §6.2 (2)",
        _variant("sh_pq", "sh_pq", lambda b, s: Priority(b, seed=s), BatchLossScorer),
    ),
    SystemSpec(
        "sh_lru",
        _covered("batch-loss importance sampling; LRU cache"),
        "SHADE FAST'23 §6.2 (3)",
        _variant("sh_lru", "lru", _registered("lru"), BatchLossScorer),
    ),
    SystemSpec(
        "sh_lfu",
        _covered("batch-loss importance sampling; LFU cache"),
        "SHADE FAST'23 §6.2 (4)",
        _variant("sh_lfu", "lfu", _registered("lfu"), BatchLossScorer),
    ),
    SystemSpec(
        "sh_rand",
        _covered("batch-loss importance sampling; random eviction"),
        "SHADE FAST'23 §6.2 (5)",
        _variant("sh_rand", "sh_rand", lambda b, s: RandomEvict(b, seed=s), BatchLossScorer),
    ),
    SystemSpec(
        "sh_app",
        _covered(
            "batch-loss importance sampling; APP cache (no loss decomposition, ranks or PADS)"
        ),
        "SHADE FAST'23 §6.2 (6)",
        _variant("sh_app", "app", lambda b, s: APP(b, seed=s), BatchLossScorer),
    ),
    SystemSpec(
        "emul_coor",
        _covered("loss-based importance sampling; CoorDL-style cache: fill, never evict"),
        "SHADE FAST'23 §6.6 (Emul_Coor)",
        _variant("emul_coor", "emul_coor", lambda b, s: FillKeep(b, seed=s), LossScorer),
    ),
    SystemSpec(
        "emul_quiv",
        _covered(
            "loss-based importance sampling; Quiver-style substitution of misses by cached samples"
        ),
        "SHADE FAST'23 §6.6 (Emul_Quiv)",
        _variant("emul_quiv", "emul_quiv", lambda b, s: SubstituteFromCache(b, seed=s), LossScorer),
    ),
]

#: what each option means and its type (``hotset systems --options shade``); the
#: defaults are the dicts above, the ones ``build`` uses
_GUARD_DOCS: dict[str, tuple[str, str]] = {
    "coverage_floor": (
        "number",
        "share of each rank's epoch given to the samples trained longest ago; every sample is "
        "then trained at least once every ceil(1/share) epochs (0: off, the paper's behaviour)",
    ),
    "anneal_from": (
        "int|none",
        "from this epoch on, uniform permutations of all ids (none: never)",
    ),
    "unbiased": ("bool", "give 1/(N p_i) loss weights through the loader's w"),
    "guardrail": (
        "number",
        "share of each epoch drawn uniformly as a sentinel; an epoch falls back to uniform when "
        "importance batches come out easier than it (0: off)",
    ),
    "guard_threshold": (
        "number",
        "how much easier than the sentinel importance batches may be before the guardrail "
        "falls back",
    ),
}
_VARIANT_DOCS: dict[str, tuple[str, str]] = {
    "ls_init_frac": (
        "number",
        "smoothing added to every score after epoch 0, as a share of the first epoch's mean loss",
    ),
    **_GUARD_DOCS,
}
_SHADE_DOCS: dict[str, tuple[str, str]] = {
    "rep_factor": (
        "number",
        "copies of each cached id in a rank's order (1, 1.5, 2, ...; the authors' scripts: 3)",
    ),
    "adaptive": (
        "bool",
        "repetitions follow the loss, shuffle epochs on a steep loss decline or stagnant "
        "accuracy (false: the authors' fixed arithmetic)",
    ),
    "steep_decline": ("number", "relative loss decline that makes a shuffle epoch (adaptive)"),
    "stagnant": ("number", "accuracy change per epoch within which the curve is stagnant"),
    "aggressive": (
        "blocks|head|none",
        "aggressive mode: head (each rank trains the most-drawn head of its draw) or blocks "
        "(contiguous blocks of the sorted global draw); none: head when adaptive, else blocks",
    ),
    **_VARIANT_DOCS,
}
OPTIONS: dict[str, tuple[SystemOption, ...]] = {
    spec.name: declare(SHADE_DEFAULTS, _SHADE_DOCS)
    if spec.name == "shade"
    else declare(VARIANT_DEFAULTS, _VARIANT_DOCS)
    for spec in SPECS
}
