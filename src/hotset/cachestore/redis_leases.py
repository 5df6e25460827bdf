"""Who is using which Redis namespace: a registry, leases that expire, and collection.

Why leases. A namespace's entries are only worth keeping while a job may read
them, but nothing tells a Redis server that a job died: a job killed with
``kill -9`` (or by a node failure) never runs its ``close()``, and with
``maxmemory-policy noeviction`` its abandoned entries refuse every later job's
writes. Per-entry TTLs would let Redis expire entries under a running job,
behind the back of its byte counter; a lease expires instead, and only the
lease: a running job renews it every ``ttl / 3`` seconds from a daemon thread,
and a namespace whose leases have all expired is abandoned and may be
collected -- by ``hotset cache gc --redis URL``, and by every loader that opens
a cache on the same server (:func:`collect`).

Keys, all outside the namespaces' own ``hotset:<ns>:`` prefix so that a
namespace's ``clear()`` and ``resync()`` (a scan of that prefix) never see them:

* ``hotset-namespaces`` -- a hash, namespace -> JSON ``{"kind", "dataset",
  "created"}``; ``kind`` is ``private`` (made up by a loader, removed when it
  closes or once abandoned) or ``shared`` (named by the user and joined by
  several jobs; kept when its jobs end, so the next job starts warm);
* ``hotset-lease:<ns>`` -- a sorted set, job id -> expiry (Unix seconds).

Expiries use each client's own clock: hosts whose clocks disagree by less than
a small part of the TTL (NTP keeps them within milliseconds) agree on what is
expired. Every call here is one single-key command, so it works unchanged on a
Redis Cluster.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hotset.errors import HotsetError

__all__ = [
    "LEASE_TTL_S",
    "REGISTRY_KEY",
    "Lease",
    "NamespaceInfo",
    "collect",
    "lease_key",
    "list_namespaces",
    "unregister",
]

#: the registry of namespaces (a Redis hash)
REGISTRY_KEY = "hotset-namespaces"
#: seconds a lease lasts unless renewed; renewed every third of it
LEASE_TTL_S = 60.0
_KINDS = ("private", "shared")


def lease_key(namespace: str) -> str:
    """The sorted set of ``namespace``'s leases (job id -> expiry)."""
    return f"hotset-lease:{namespace}"


@dataclass(frozen=True)
class NamespaceInfo:
    """One namespace as ``hotset cache ls --redis`` shows it."""

    name: str
    #: private | shared | unknown (entries without a registry row: an older hotset)
    kind: str
    dataset: str
    #: leases not yet expired
    live_jobs: int
    #: the namespace's byte counter (the bytes its entries hold)
    used_bytes: int
    #: the latest lease expiry, Unix seconds (0: never leased)
    last_expiry: float

    @property
    def abandoned(self) -> bool:
        return self.live_jobs == 0


class Lease:
    """This job's claim on one namespace, kept alive by a daemon thread.

    ``client`` is a redis-py client (single server or cluster). Renewal failures
    (the server is down) are counted, not raised: a lease that lapses while the
    server is away only makes the namespace collectable, and the next renewal
    takes it back.
    """

    def __init__(
        self,
        client: Any,
        namespace: str,
        *,
        kind: str,
        dataset: str,
        ttl_s: float = LEASE_TTL_S,
    ) -> None:
        if kind not in _KINDS:
            raise HotsetError(f"lease kind must be one of {', '.join(_KINDS)}, got {kind!r}")
        if not isinstance(ttl_s, int | float) or not ttl_s > 0:
            raise HotsetError(f"lease ttl_s must be a positive number of seconds, got {ttl_s!r}")
        self.client = client
        self.namespace = namespace
        self.kind = kind
        self.dataset = dataset
        self.ttl_s = float(ttl_s)
        self.job = secrets.token_hex(8)
        self.renew_failures = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def renew(self) -> None:
        """Take or extend the lease, and make sure the namespace is registered.

        Lease first: a namespace is never registered without a live lease, so
        another job's :func:`collect` cannot take it for abandoned in between.
        The registry row is written by the first job only (``HSETNX``); writing it
        at every renewal lets a job whose first try failed (a server out of
        memory refuses ``ZADD``) register once the server takes writes again.
        """
        now = time.time()
        key = lease_key(self.namespace)
        self.client.zadd(key, {self.job: now + self.ttl_s})
        # leases long expired are dropped on the way; the latest few stay as history
        self.client.zremrangebyscore(key, "-inf", now - 10 * self.ttl_s)
        row = json.dumps({"kind": self.kind, "dataset": self.dataset, "created": now})
        self.client.hsetnx(REGISTRY_KEY, self.namespace, row)

    def keep_alive(self) -> None:
        """Renew every ``ttl / 3`` seconds from a daemon thread until :meth:`release`."""
        if self._thread is not None:
            return

        def run() -> None:
            while not self._stop.wait(self.ttl_s / 3):
                try:
                    self.renew()
                except Exception:  # the server is away: the lease may lapse, training goes on
                    self.renew_failures += 1

        self._thread = threading.Thread(target=run, name="hotset-lease", daemon=True)
        self._thread.start()

    def release(self) -> int:
        """Give the lease back; return how many other jobs still hold one."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        key = lease_key(self.namespace)
        now = time.time()
        # Expired now rather than removed: the set then says when the namespace's
        # last job ended, which is what ``collect(shared_idle_s=...)`` measures.
        self.client.zadd(key, {self.job: now})
        return _live(self.client, key, now)


def _live(client: Any, key: str, now: float) -> int:
    """Leases of ``key`` that expire after ``now``."""
    return int(client.zcount(key, f"({now}", "+inf"))


def unregister(client: Any, namespace: str) -> None:
    """Forget ``namespace`` in the registry and drop its leases (after its entries went)."""
    client.hdel(REGISTRY_KEY, namespace)
    client.delete(lease_key(namespace))


def _counter_namespaces(client: Any) -> set[str]:
    """Namespaces that have a byte counter (every one that ever stored), by scanning."""
    found: set[str] = set()
    nodes = client.get_primaries() if hasattr(client, "get_primaries") else [None]
    for node in nodes:
        kwargs: dict[str, Any] = {"match": "hotset:*:used-bytes", "count": 1000}
        if node is not None:
            kwargs["target_nodes"] = node
        for raw in client.scan_iter(**kwargs):
            key = raw.decode() if isinstance(raw, bytes) else str(raw)
            found.add(key[len("hotset:") : -len(":used-bytes")])
    return found


def list_namespaces(client: Any, *, scan: bool = True) -> list[NamespaceInfo]:
    """Every namespace the registry knows, and with ``scan`` every one with a byte
    counter (a scan of the whole keyspace: for operators, not for every job start)."""
    rows = {
        (k.decode() if isinstance(k, bytes) else str(k)): v
        for k, v in client.hgetall(REGISTRY_KEY).items()
    }
    names = sorted(set(rows) | (_counter_namespaces(client) if scan else set()))
    now = time.time()
    infos = []
    for name in names:
        kind, dataset = "unknown", ""
        if name in rows:
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                meta = json.loads(rows[name])
                kind = str(meta.get("kind", "unknown"))
                dataset = str(meta.get("dataset", ""))
        key = lease_key(name)
        live = _live(client, key, now)
        last = client.zrange(key, -1, -1, withscores=True)
        used = client.get(f"hotset:{name}:used-bytes")
        infos.append(
            NamespaceInfo(
                name=name,
                kind=kind,
                dataset=dataset,
                live_jobs=live,
                used_bytes=max(0, int(used or 0)),
                last_expiry=float(last[0][1]) if last else 0.0,
            )
        )
    return infos


def collect(
    client: Any,
    *,
    drop: Callable[[str], None],
    shared_idle_s: float | None = None,
    unknown: bool = False,
    scan: bool = False,
) -> list[NamespaceInfo]:
    """Remove abandoned namespaces; return what was removed.

    Private namespaces go as soon as no lease is live. Shared ones are kept for
    the next job unless ``shared_idle_s`` is given and their last lease expired
    that long ago. ``unknown`` ones (entries but no registry row: written by an
    older hotset, whose owner cannot be known) go only when asked. ``drop(name)``
    deletes a namespace's entries and counter (a :class:`RedisCache`'s ``drop``).
    Without ``scan`` only registered namespaces are considered (no keyspace scan).
    """
    now = time.time()
    removed = []
    for info in list_namespaces(client, scan=scan or unknown):
        if not info.abandoned:
            continue
        if info.kind == "shared":
            if shared_idle_s is None or now - info.last_expiry < shared_idle_s:
                continue
        elif info.kind == "unknown" and not unknown:
            continue
        drop(info.name)
        unregister(client, info.name)
        removed.append(info)
    return removed
