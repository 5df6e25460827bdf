"""Brand (arXiv 2505.16280): chunk reads into an abstract memory, one module per part.

:mod:`~hotset.policies.brand.policy` holds :class:`Brand` (one job: "return what is
there", refills chosen by fill rate); :mod:`~hotset.policies.brand.ranks` holds
:class:`BrandRanks`, its form across ranks (owner ranks, remote requests,
opportunistic prefetch).
"""

from hotset.policies.brand.policy import Brand
from hotset.policies.brand.ranks import BrandRanks

__all__ = ["Brand", "BrandRanks"]
