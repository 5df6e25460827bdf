"""One job's use of a cache store: which namespace, shared or private, and its lease.

Why namespaces are derived, not chosen. A Redis namespace is a budget (one byte
counter) and a set of entries. Two jobs that share one must read the same data
set, or each would budget against bytes the other can never use; so a
namespace is always ``<key>@<data set identity>`` (the manifest's content
identity, :meth:`~hotset.data.manifest.Manifest.identity`):

* ``share=None`` (the default): a **private** namespace, ``p-<identity>-<random>-r<rank>``,
  new and empty, so nothing needs clearing; it is dropped (entries, counter,
  registry row, leases) when the job closes its loader, and collected by the
  next job on the server if the job died without closing;
* ``share="sweep-1"``: a **shared** namespace, ``sweep-1@<identity>``, joined
  as it is -- never cleared, since other jobs may be reading it -- and kept
  when the job ends, so the next job starts warm. Its jobs share its one
  budget: the server-side put script never lets the namespace pass
  ``capacity_bytes``, and a put refused because other jobs filled it is
  skipped and counted by the loader, not raised (:mod:`hotset.torch.fetch`).

With a digest (content addressing, :mod:`hotset.cachestore.capability`) the data
set's identity is not part of a shared namespace: ``share="sweep-1"`` is
``sweep-1@content``. Entries are keyed by the BLAKE2b of their bytes, so jobs
on different data sets can use one namespace and one budget, each reaching only
the entries whose capabilities its digest holds, and jobs on copies of the same
content (other file names, other ids) share entries. The ``@content`` suffix
keeps such a namespace apart from the id-keyed ``sweep-1@<identity>`` ones: the
two key schemes never meet in one namespace.

The embedded shared-memory cache needs none of this: its session holds no lease,
and a sharing key with it is an error (:func:`check_share_backend`), never
ignored. It is private to one loader, or, given a :class:`~hotset.cachestore.shm_node.NodeShare`
(the local ranks of a job under torch.distributed), one segment that those
ranks share with one budget (``node``): each rank's loader then looks in it
for its planned misses, as in a shared namespace (``pooled``), and leaves it
to the others when it closes (:mod:`hotset.cachestore.shm_members`).

A Redis session also asks the server, once, whether it evicts keys on its own
(:mod:`hotset.cachestore.redis_eviction`) and warns if so.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hotset.cachestore.base import CacheStore
from hotset.cachestore.redis_eviction import warn_if_evicting
from hotset.cachestore.redis_leases import LEASE_TTL_S, Lease, collect, unregister
from hotset.cachestore.registry import open_cache, parse_cache_spec
from hotset.errors import HotsetError

if TYPE_CHECKING:
    from hotset.cachestore.shm_node import NodeShare
    from hotset.data.digest import Digest

__all__ = [
    "CONTENT_SCOPE",
    "CacheSession",
    "check_share_backend",
    "check_share_key",
    "drop_namespace",
    "namespace_for",
]

#: what follows the '@' of a shared namespace keyed by content (a digest's job)
CONTENT_SCOPE = "content"


#: a sharing key: what a Redis namespace allows, less '@' (it separates the identity)
_SHARE_KEY = re.compile(r"^[A-Za-z0-9._/=+-]{1,180}$")


def check_share_key(share: object) -> str | None:
    """``share`` itself, or a :class:`HotsetError` naming it: checked before any I/O."""
    if share is not None and (not isinstance(share, str) or not _SHARE_KEY.match(share)):
        raise HotsetError(
            "namespace must be a sharing key of 1-180 characters from [A-Za-z0-9._/=+-] "
            f"(the data set's identity is appended after an '@'), got {share!r:.80}"
        )
    return share


def check_share_backend(share: str | None, spec: str | Sequence[str]) -> None:
    """Refuse a sharing key with the embedded cache, which has no namespaces to share.

    The shared-memory cache is a new segment per loader (per node under several
    ranks, for that job's ranks alone): ``namespace="sweep"`` there would share
    nothing with other jobs, so a user who asked for it
    learns it at once instead of believing jobs share a warm cache.
    """
    if share is not None and parse_cache_spec(spec) == "memory":
        raise HotsetError(
            f"namespace={share!r} shares a Redis namespace between jobs, but the cache is "
            "the embedded shared-memory one, which no other job can join: give a Redis cache "
            "(cache='redis://host:6379/0', cache_bytes=...) or leave out namespace"
        )


def namespace_for(
    *, share: str | None, dataset_id: str, rank: int, content_addressed: bool = False
) -> str:
    """The namespace a job uses: ``<share>@<dataset>`` shared, or a new private one.

    ``content_addressed`` (a job with a digest): ``<share>@content``, for any data
    set, since the keys themselves say whose content an entry is.
    """
    if share is None:
        return f"p-{dataset_id[:12]}-{secrets.token_hex(6)}-r{rank}"
    return f"{check_share_key(share)}@{CONTENT_SCOPE if content_addressed else dataset_id}"


def drop_namespace(spec: str | Sequence[str], name: str) -> None:
    """Remove one namespace's entries and counter through a handle of its own."""
    cache = open_cache(spec, capacity_bytes=0, namespace=name, n_slots=1)
    try:
        cache.drop()
    finally:
        cache.close()


@dataclass
class CacheSession:
    """A loader's cache handle, its namespace and (for Redis) its lease."""

    cache: CacheStore
    namespace: str
    shared: bool
    lease: Lease | None = None
    #: abandoned namespaces this session's start removed from the server
    collected: int = 0
    #: the embedded cache of this node, shared by the job's local ranks
    node: bool = False

    @property
    def pooled(self) -> bool:
        """Other loaders write this cache too (other jobs on a shared namespace, other
        ranks on a node's cache): look in it before storage, and count a put refused
        over budget instead of raising it."""
        return self.shared or self.node

    @classmethod
    def open(
        cls,
        spec: str | Sequence[str],
        *,
        capacity_bytes: int,
        n_slots: int,
        dataset_id: str,
        share: str | None,
        rank: int,
        lease_ttl_s: float = LEASE_TTL_S,
        digest: Digest | None = None,
        node: NodeShare | None = None,
        **cache_options: Any,
    ) -> CacheSession:
        check_share_backend(share, spec)
        namespace = namespace_for(
            share=share, dataset_id=dataset_id, rank=rank, content_addressed=digest is not None
        )
        if node is not None and parse_cache_spec(spec) == "memory":
            return cls._on_node(node, capacity_bytes, n_slots, namespace, digest, cache_options)
        cache = open_cache(
            spec,
            capacity_bytes=capacity_bytes,
            namespace=namespace,
            n_slots=n_slots,
            digest=digest,
            **cache_options,
        )
        session = cls(cache=cache, namespace=namespace, shared=share is not None)
        if parse_cache_spec(spec) == "memory":
            return session
        try:
            client = cache.client  # type: ignore[attr-defined]
            # Once per job, in the main process (workers reopen the cache, never this).
            warn_if_evicting(client, getattr(cache, "where", "?"), stacklevel=4)
            # Known namespaces only (no keyspace scan at every start): those a killed
            # job left behind. Best effort: a failure here must not stop training.
            with contextlib.suppress(Exception):
                session.collected = len(
                    collect(client, drop=lambda name: drop_namespace(spec, name))
                )
            lease = Lease(
                client,
                namespace,
                kind="shared" if session.shared else "private",
                dataset=dataset_id,
                ttl_s=lease_ttl_s,
            )
            session.lease = lease
            try:
                lease.renew()
            except Exception as exc:  # e.g. a server out of memory refuses ZADD
                # Training goes on (its puts will degrade too); the keeper retries.
                lease.renew_failures += 1
                warnings.warn(
                    f"hotset: could not take a lease on cache namespace {namespace!r} "
                    f"({exc}); retrying every {lease_ttl_s / 3:.0f} s",
                    RuntimeWarning,
                    stacklevel=3,
                )
            lease.keep_alive()
        except BaseException:
            cache.close()
            raise
        return session

    @classmethod
    def _on_node(
        cls,
        node: NodeShare,
        capacity_bytes: int,
        n_slots: int,
        namespace: str,
        digest: Digest | None,
        cache_options: dict[str, Any],
    ) -> CacheSession:
        """The session of a rank on its node's embedded cache (created or joined)."""
        if digest is not None:
            raise HotsetError(
                "a digest with the embedded cache: content-addressed sharing is for Redis "
                "namespaces (cache='redis://host:port/0', cache_bytes=..., namespace=...); "
                "leave out digest"
            )
        cache = node.open(capacity_bytes, n_slots, verify=bool(cache_options.get("verify")))
        return cls(cache=cache, namespace=namespace, shared=False, node=True)

    def close(self) -> None:
        """Release the lease; drop a private namespace. Best effort: never raises."""
        client = getattr(self.cache, "client", None)
        if self.lease is not None:
            with contextlib.suppress(Exception):
                self.lease.release()
        if not (self.shared or self.node):  # a node's cache: the other ranks read it
            # A server that is down keeps the keys; the next job's start (or
            # `hotset cache gc --redis URL`) collects them once the lease lapsed.
            with contextlib.suppress(Exception):
                self.cache.drop()
                if client is not None:
                    unregister(client, self.namespace)
        with contextlib.suppress(Exception):
            self.cache.close()
