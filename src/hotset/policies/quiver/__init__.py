"""Quiver (FAST'20): substitutable hits over double-buffered chunks, one module per part.

:mod:`~hotset.policies.quiver.policy` holds the policy, :class:`Quiver`, and composes
the rest: the striped chunks and their cycle (:mod:`~hotset.policies.quiver.chunks`,
:mod:`~hotset.policies.quiver.cycle`), what a job holds and has left this epoch
(:mod:`~hotset.policies.quiver.holdings`, :mod:`~hotset.policies.quiver.epoch`,
:mod:`~hotset.policies.quiver.window`), loading and serving
(:mod:`~hotset.policies.quiver.loading`, :mod:`~hotset.policies.quiver.serving`),
the failure mask (:mod:`~hotset.policies.quiver.masking`) and benefit-aware placement
(:mod:`~hotset.policies.quiver.placement`, :mod:`~hotset.policies.quiver.loop`).
"""

from hotset.policies.quiver.policy import Quiver

__all__ = ["Quiver"]
