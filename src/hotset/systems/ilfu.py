"""iLFU, the papers' importance-informed LFU: IIS's reads with an LFU cache.

iCACHE (HPCA'23 §V-A) builds *iLFU* "to demonstrate the efficiency of iCACHE over
traditional caching methods": it "applies the I/O-oriented importance sampling
(IIS) with the least frequently used (LFU) cache management". ImPACT (TC'25 §V-A)
keeps the comparator ("the same prefetching as ImPACT but with an LFU cache
replacement strategy"). So ``ilfu`` is iCACHE's sampler
(:class:`~hotset.samplers.iis.IISSampler`, raw-loss importance, the authors'
constants) in front of hotset's LFU (:mod:`hotset.policies.lfu`): an important
sample is asked for more often, so LFU's counts follow importance only as far as
the past accesses reveal it -- "reactive to the changes of sample importance", the
paper's explanation of why it hits less than iCACHE's heap.

hotset follows iCACHE's definition (IIS in front); ImPACT's sampler in front of
LFU is not built (its hybrid evaluator needs ImPACT's buffered set, which an LFU
cache does not hold).
"""

from __future__ import annotations

from typing import Any

from hotset.engine.budget import Budget
from hotset.importance.scorers import LossScorer
from hotset.importance.table import ImportanceTable
from hotset.policies.registry import make_policy
from hotset.samplers.iis import BETA, REUSE_FACTOR, WARM_UP, WINDOW, IISSampler
from hotset.systems.base import System, SystemSpec, with_defaults
from hotset.systems.options import SystemOption, declare

#: IIS's options, with the authors' values (as ``icache`` takes them)
DEFAULTS: dict[str, Any] = {
    "beta": BETA,
    "window": WINDOW,
    "warm_up": WARM_UP,
    "reuse_factor": REUSE_FACTOR,
}

#: what each option means (``hotset systems --options ilfu``)
OPTION_DOCS: dict[str, tuple[str, str]] = {
    "beta": ("number", "a sample is kept with probability (its loss percentile) ** beta"),
    "window": ("int", "the last losses a sample's percentile is taken among"),
    "warm_up": ("int", "full epochs (every sample read) before IIS selects"),
    "reuse_factor": ("int", "every reuse_factor-th epoch is a full epoch"),
}


def build_ilfu(
    *, n: int, budget: Budget, seed: int, batch_size: int = 128, **options: Any
) -> System:
    """IIS sampling (raw-loss importance) + an LFU cache; see the module docstring."""
    opts = with_defaults("ilfu", options, DEFAULTS)
    return System(
        name="ilfu",
        sampler=IISSampler(n, seed=seed, **opts),
        policy=make_policy("lfu", budget, seed=seed),
        table=ImportanceTable(n),
        scorer=LossScorer(),
        options={"batch_size": batch_size, "policy": "lfu", **opts},
    )


SPECS: list[SystemSpec] = [
    SystemSpec(
        "ilfu",
        "iLFU: iCACHE's IIS sampling (reads only the kept samples) + an LFU cache",
        "iCACHE HPCA'23 §V-A 'iLFU'; ImPACT TC'25 §V-A 'iLFU'",
        build_ilfu,
    ),
]

OPTIONS: dict[str, tuple[SystemOption, ...]] = {"ilfu": declare(DEFAULTS, OPTION_DOCS)}
