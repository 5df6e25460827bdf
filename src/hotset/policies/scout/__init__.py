"""Scout: the importance sampler's ids, untouched, with their I/O batched by chunk.

:mod:`~hotset.policies.scout.policy` holds :class:`Scout`, which keeps the sampler's
order and looks ahead over it (``serve=order``); :mod:`~hotset.policies.scout.rounds`
holds :class:`ScoutRounds`, which serves the sampler's set chunk by chunk, a round of
requests at a time (``serve=rounds``), on the parent's decisions.
"""

from hotset.policies.scout.policy import Scout
from hotset.policies.scout.rounds import ScoutRounds

__all__ = ["Scout", "ScoutRounds"]
