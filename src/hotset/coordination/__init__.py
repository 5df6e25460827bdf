"""Coordination between jobs and ranks that share a cache namespace.

Jobs that share a Redis namespace tell each other small things beside the cached bytes:
Quiver's probe board (:mod:`~hotset.coordination.probe_board`) and shared chunk cycle
(:mod:`~hotset.coordination.shared_cycle`), the chunk references that evict a chunk once
every job released it (:mod:`~hotset.coordination.chunk_refs`), iCACHE's job benefits
and importance (:mod:`~hotset.coordination.job_importance`), the claims that keep two
ranks from reading one unit twice (:mod:`~hotset.coordination.claims`), all stored and
read within bounds under server-clock leases (:mod:`~hotset.coordination.leased`). They
need a cache that is a shared namespace (:mod:`~hotset.coordination.namespace`), never
a particular cache class. A policy's links to them (:mod:`~hotset.coordination.links`)
come from the roles it takes on (:mod:`hotset.engine.roles`), and the loader drives them
as one :class:`~hotset.coordination.links.Coordination` at epoch and batch boundaries.

This package sits above the cache stores, the engine and the policies' pure parts, and
below the loader (:mod:`hotset.torch`).
"""

from hotset.coordination.namespace import SharedCache, SharedNamespace, shared_namespace

__all__ = ["SharedCache", "SharedNamespace", "shared_namespace"]
