"""iCACHE (HPCA'23): an H-cache keyed on importance and a packed L-cache, one module per part.

:mod:`~hotset.policies.icache.policy` holds :class:`ICache` (the H-cache's min-heap and
shadow heap, the L-cache served by substitution); its parts are the heap and held
residents (:mod:`~hotset.policies.icache.heap`), the importance keys
(:mod:`~hotset.policies.icache.keys`) and their multi-job form
(:mod:`~hotset.policies.icache.multijob`). :class:`PackedICache`
(:mod:`~hotset.policies.icache.packed`) loads the L-cache from packages that
:mod:`~hotset.policies.icache.packing` plans.
"""

from hotset.policies.icache.packed import PackedICache
from hotset.policies.icache.policy import ICache

__all__ = ["ICache", "PackedICache"]
