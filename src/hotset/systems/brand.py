"""Brand (arXiv 2505.16280), single node: chunk reads into an abstract memory.

The sampler is a plain seeded permutation per epoch (the DL framework's random
order); :class:`hotset.policies.brand.Brand` maps each request to its group's
abstract-chunk slot and returns whatever valid file is there, or reads a chunk of
the group chosen by fill rate. The chunks are the dataset's chunk layout
(``hotset data pack DIR --chunk-size 64 --shuffle-seed S``: §3.2 cuts a seeded
shuffle of the ids into chunks, fixed across epochs; 64 is the paper's best
size); without one the registry says how to make one.
Under several ranks the distributed protocol of §3.4 runs
(:mod:`hotset.policies.brand.ranks`): owner ranks, remote requests and
opportunistic prefetch into a remote memory.
"""

from __future__ import annotations

import inspect
from typing import Any

from hotset.engine.budget import Budget
from hotset.errors import HotsetError
from hotset.importance.table import ImportanceTable
from hotset.policies.brand.ranks import BrandRanks
from hotset.samplers.random import RandomSampler
from hotset.systems.base import System, SystemSpec
from hotset.systems.options import SystemOption, declare


def build_brand(
    *,
    n: int,
    budget: Budget,
    seed: int,
    batch_size: int = 128,
    window: int = 64,
    remote_frac: float = 0.1,
    **options: Any,
) -> System:
    """Brand: random order, chunked refills by fill rate, return-what-is-there.

    Under several ranks each abstract chunk has an owner rank; ``window`` (the
    requester's next accesses an owner looks at) and ``remote_frac`` (the share
    of a node's memory for files prefetched from other ranks, 10% in §5.4) tune
    the opportunistic prefetch of §3.4.
    """
    if options:
        raise HotsetError(
            f"system 'brand': unknown option(s) {', '.join(sorted(options))}; it accepts "
            "window and remote_frac (the chunk size is the layout's: hotset data pack DIR "
            "--chunk-size 64)"
        )
    return System(
        name="brand",
        sampler=RandomSampler(n, seed=seed),
        policy=BrandRanks(
            budget, seed=seed, batch_size=batch_size, window=window, remote_frac=remote_frac
        ),
        table=ImportanceTable(n),
        options={"batch_size": batch_size},
    )


SPECS: list[SystemSpec] = [
    SystemSpec(
        "brand",
        "Brand: chunk reads into abstract memory, return any valid file of the slot, refill by fill rate",
        "Brand arXiv 2505.16280 §3.2-3.4",
        build_brand,
    ),
]

#: the defaults are ``build_brand``'s own keyword defaults (``hotset systems --options brand``)
_DEFAULTS = {
    key: param.default
    for key, param in inspect.signature(build_brand).parameters.items()
    if key in ("window", "remote_frac")
}
OPTIONS: dict[str, tuple[SystemOption, ...]] = {
    "brand": declare(
        _DEFAULTS,
        {
            "window": ("int", "a requester's next accesses an owner rank looks at to prefetch"),
            "remote_frac": (
                "number",
                "share of a node's memory for files prefetched from other ranks (§5.4: 10%)",
            ),
        },
    )
}
