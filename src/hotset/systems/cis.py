"""``base``, the papers' "Base": importance sampling that saves computation, not reads.

iCACHE (HPCA'23 §V-A, and its ablation Fig. 10) and ImPACT (TC'25 §V-A, Fig. 14)
start from *Base*: "the user-level LRU cache and the computing-oriented importance
sampling (CIS) to only reduce computing". It reads every sample every epoch, in
the plain seeded permutation, through an LRU cache, and trains on the samples the
loss-based selection keeps (:class:`~hotset.samplers.cis.CISSampler`: IIS's rule,
unselected samples weigh 0). Its storage reads are therefore ``lru``'s, while its
training is ``icache_iis_lru``'s; the papers use it to show that importance
sampling alone does not help an I/O-bound job (iCACHE Fig. 2(b): 1.02x).
"""

from __future__ import annotations

from typing import Any

from hotset.engine.budget import Budget
from hotset.importance.scorers import LossScorer
from hotset.importance.table import ImportanceTable
from hotset.policies.registry import make_policy
from hotset.samplers.cis import CISSampler
from hotset.systems.base import System, SystemSpec, with_defaults
from hotset.systems.ilfu import DEFAULTS
from hotset.systems.options import SystemOption, declare

#: what each option means (``hotset systems --options base``): IIS's, deciding what is trained
OPTION_DOCS: dict[str, tuple[str, str]] = {
    "beta": ("number", "a sample is trained with probability (its loss percentile) ** beta"),
    "window": ("int", "the last losses a sample's percentile is taken among"),
    "warm_up": ("int", "epochs that train every sample before the selection starts"),
    "reuse_factor": ("int", "every reuse_factor-th epoch trains every sample"),
}


def build_base(
    *, n: int, budget: Budget, seed: int, batch_size: int = 128, **options: Any
) -> System:
    """Every sample read (seeded permutation) through LRU; IIS's selection trained."""
    opts = with_defaults("base", options, DEFAULTS)
    return System(
        name="base",
        sampler=CISSampler(n, seed=seed, **opts),
        policy=make_policy("lru", budget, seed=seed),
        table=ImportanceTable(n),
        scorer=LossScorer(),
        weighted=True,
        options={"batch_size": batch_size, "policy": "lru", **opts},
    )


SPECS: list[SystemSpec] = [
    SystemSpec(
        "base",
        "Base: computing-oriented importance sampling (every sample read, the selected "
        "ones trained) + an LRU cache",
        "iCACHE HPCA'23 §II-B, §V-A 'Base'; ImPACT TC'25 §V-A 'Base'",
        build_base,
    ),
]

OPTIONS: dict[str, tuple[SystemOption, ...]] = {
    "base": declare(DEFAULTS, OPTION_DOCS),
}
