"""A cache pooled across processes and machines: Redis or Redis Cluster.

Keys are ``hotset:<namespace>:<sample id>:<content hash>``. The namespace names
the dataset; the content hash in the key means bytes cached for an older version
of a file can never be served for the new one, and two jobs reading the same
dataset share entries. Values are the original sample bytes, unchanged. The id is
in the key too, so two samples with identical bytes are two entries: the policy
that evicts one still finds the other where it left it.

A job with a digest keys entries by content instead, ``hotset:<namespace>:b2:<BLAKE2b-256>``
(:mod:`hotset.cachestore.capability`, a subclass that only changes :meth:`RedisCache.redis_key`).

Round trips. Every batch is pipelined: a get is one ``GET`` per key, all sent in
one round trip (per node for a cluster, nodes served concurrently); there is no
existence check before the read. On a single server a put is one ``EVALSHA`` of
a small Lua script and so is a delete; in a cluster a put is one ``INCRBY`` of
the byte counter and one pipelined ``SET NX`` round trip per node.

Budget. Payload bytes are kept in the counter key ``hotset:<namespace>:used-bytes``,
so every client of a namespace sees the same total, and the counter must equal
the bytes actually stored -- also when a reply is lost (a timeout, a frozen or
killed server), when the server refuses a write (OOM) and when clients race.
Counting client-side around separate commands cannot promise that: an ``INCRBY``
whose reply is lost may or may not have been applied, and a refund for writes
that failed may itself fail. How each backend keeps it exact, and repairs it
when something outside the scripts changed the namespace:

* a single server reserves and writes in one Lua script
  (:mod:`hotset.cachestore.redis_scripts`);
* a cluster reserves with ``INCRBY``, refunds what is known to have failed and
  resyncs where a lost reply left it unsure (:mod:`hotset.cachestore.redis_cluster`);
* :meth:`RedisCache.resync` counts what is stored and sets the counter to it, at
  a refused put and wherever the counter cannot be trusted
  (:mod:`hotset.cachestore.redis_resync`).

Either way a put never takes the namespace over ``capacity_bytes``; a refused put
raises :class:`~hotset.cachestore.base.PutRefused` (a :class:`~hotset.errors.HotsetError`)
naming the sizes. ``clear()`` resets the counter.

Failures. A server that is down, frozen or refusing writes raises
:class:`CacheUnavailable` (a :class:`~hotset.errors.HotsetError`), after at most
``socket_timeout`` seconds (``socket_connect_timeout`` to connect), with no
retries (:mod:`hotset.cachestore.redis_connect`). Both timeouts are keyword
options and may also be given in the URL's query
(``redis://h:p/0?socket_timeout=0.5``, :mod:`hotset.cachestore.redis_url`),
which is how a cache spec string carries them.

Cluster. Keys carry no hash tag (the namespace may not contain ``{`` or ``}``),
so entries spread over every master by their hash slot, which is what a pooled
cache wants: capacity and bandwidth of all masters. The price is that a batch
touches several nodes; redis-py's cluster pipeline splits it by node and sends
each node its share in one round trip. A hash tag per namespace would put a
whole dataset on one master, turning a cluster into one server.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Sequence
from typing import Any

import xxhash

from hotset.cachestore.base import (
    CacheKey,
    CacheStats,
    CacheStatsCounter,
    check_cache_key,
    check_payload,
)
from hotset.cachestore.redaction import scrub, secrets_in
from hotset.cachestore.redis_cluster import ClusterWrites
from hotset.cachestore.redis_connect import (
    CacheUnavailable,
    describe,
    failures,
    import_redis,
    open_client,
    talking,
)
from hotset.cachestore.redis_resync import (
    SCAN_BATCH,
    CounterHealth,
    count,
    set_to_scanned,
    stored_total,
)
from hotset.cachestore.redis_scripts import ATOMIC_RESYNC_SCRIPT, RESYNC_SCRIPT, ScriptWrites
from hotset.cachestore.redis_url import (
    CONNECT_TIMEOUT_SECONDS,
    SOCKET_TIMEOUT_SECONDS,
    host_port,
    identify,
    is_redis_spec,
    resolve_timeouts,
)
from hotset.errors import HotsetError, IntegrityError
from hotset.units import parse_bytes

__all__ = [
    "CONNECT_TIMEOUT_SECONDS",
    "SOCKET_TIMEOUT_SECONDS",
    "CacheUnavailable",
    "RedisCache",
    "is_redis_spec",
]

# No ':' (namespaces nest by prefix), no glob characters (clear() scans by
# pattern), no braces (a hash tag would pin a namespace to one cluster slot).
_NAMESPACE_PATTERN = re.compile(r"^[A-Za-z0-9._/=+@-]{1,200}$")
# The names these helpers had when they lived here (tests and older callers import them).
_describe = describe
_host_port = host_port


def _reopen_as(cls: type[RedisCache], spec: str | list[str], options: dict[str, Any]) -> RedisCache:
    return cls(spec, **options)


class RedisCache:
    """A byte-budgeted cache in Redis (``redis://host:port/db``) or a Redis Cluster
    (``redis+cluster://h1:p1,h2:p2`` or a list of ``host:port`` startup nodes).

    ``socket_timeout`` / ``socket_connect_timeout`` bound how long one call may
    wait for a reply / a connection before it raises :class:`CacheUnavailable`;
    left out, they come from the URL's query, else the module defaults.

    ``verify`` re-hashes every entry served (and put) and raises
    :class:`~hotset.errors.IntegrityError` on bytes that do not match their key:
    another client of the namespace may have written them. The loader opens its
    cache without it and checks hits itself (:mod:`hotset.torch.fetch`), so that
    a bad entry is dropped and re-read instead of failing a whole ``get_many``.
    """

    def __init__(
        self,
        url_or_urls: str | Sequence[str],
        *,
        namespace: str,
        capacity_bytes: int | str,
        verify: bool = False,
        socket_timeout: float | None = None,
        socket_connect_timeout: float | None = None,
    ) -> None:
        if not isinstance(namespace, str) or not _NAMESPACE_PATTERN.match(namespace):
            raise HotsetError(
                f"redis cache namespace must be 1-200 of [A-Za-z0-9._/=+@-], got {namespace!r}"
            )
        self._capacity = parse_bytes(capacity_bytes, name="capacity_bytes")
        self._namespace = namespace
        self._verify = bool(verify)
        self._stats = CacheStatsCounter()
        self._prefix = f"hotset:{namespace}:"
        self._counter = f"{self._prefix}used-bytes"
        #: whether the counter can be trusted, and when a refused put may resync it
        self._health = CounterHealth()
        redis = import_redis()
        self._redis = redis
        self._spec, self._cluster, self._where = identify(url_or_urls)
        #: the spec's passwords, scrubbed from the client library's messages too
        self._secrets = secrets_in(self._spec)
        connect_url, self._socket_timeout, self._connect_timeout = resolve_timeouts(
            self._spec, socket_timeout, socket_connect_timeout
        )
        try:
            self._client = self._connect(connect_url)
        except HotsetError:
            raise
        except failures(redis) as exc:
            raise CacheUnavailable(
                f"cannot reach redis at {self._where}: {scrub(str(exc), self._secrets)}"
            ) from None
        except ValueError as exc:  # the client's parse of the URL's options
            raise HotsetError(
                f"redis cache {self._where}: {scrub(str(exc), self._secrets)}"
            ) from None

    def _connect(self, connect_url: str | list[str]) -> Any:
        """A client of the server(s), checked with a PING; the scripts loaded (single server)."""
        client = open_client(
            self._redis,
            connect_url,
            cluster=self._cluster,
            socket_timeout=self._socket_timeout,
            connect_timeout=self._connect_timeout,
        )
        # One key (the counter): runs on a cluster too, routed by that key's slot.
        self._resync_script: Any = client.register_script(RESYNC_SCRIPT)
        self._atomic_resync_script: Any = client.register_script(ATOMIC_RESYNC_SCRIPT)
        self._writes: ScriptWrites | ClusterWrites
        if self._cluster:
            self._writes = ClusterWrites(
                client, counter=self._counter, capacity=self._capacity, health=self._health
            )
        else:
            self._writes = ScriptWrites(
                self._redis,
                client,
                counter=self._counter,
                capacity=self._capacity,
                health=self._health,
            )
        return client

    # -- identity ---------------------------------------------------------------

    @property
    def capacity_bytes(self) -> int:
        return self._capacity

    @property
    def namespace(self) -> str:
        return self._namespace

    @property
    def is_cluster(self) -> bool:
        return self._cluster

    @property
    def socket_timeout(self) -> float:
        return self._socket_timeout

    @property
    def socket_connect_timeout(self) -> float:
        return self._connect_timeout

    @property
    def where(self) -> str:
        """The server (or cluster nodes) this handle talks to, without passwords."""
        return self._where

    @property
    def client(self) -> Any:
        """The underlying redis-py client (``Redis`` or ``RedisCluster``)."""
        return self._client

    def redis_key(self, key: CacheKey) -> str:
        """Where ``key`` lives: ``hotset:<namespace>:<sample id>:<content hash>``.

        The hash makes a stale entry unreachable once a file changes; the id keeps
        two samples with identical bytes independent, so evicting one never takes
        the other out from under the policy that still counts it resident.
        """
        checked = check_cache_key(key)
        return f"{self._prefix}{checked.sample_id}:{checked.content_hash}"

    def reopen_options(self) -> dict[str, Any]:
        """The keyword arguments that open this handle again in another process.

        A subclass adds its own (:class:`~hotset.cachestore.capability.CapabilityRedisCache`
        its digest), so pickling works for it without a reduce of its own.
        """
        return {
            "namespace": self._namespace,
            "capacity_bytes": self._capacity,
            "verify": self._verify,
            "socket_timeout": self._socket_timeout,
            "socket_connect_timeout": self._connect_timeout,
        }

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # Workers reconnect on their own; connections never cross a process boundary.
        return (_reopen_as, (type(self), self._spec, self.reopen_options()))

    def __repr__(self) -> str:
        return (
            f"RedisCache({self._where!r}, namespace={self._namespace!r}, "
            f"capacity_bytes={self._capacity})"
        )

    def __enter__(self) -> RedisCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing -----------------------------------------------------------------

    def talking(self) -> contextlib.AbstractContextManager[None]:
        """A context in which this server's failures become :class:`CacheUnavailable`.

        For code beside the store that talks to the same server with its client
        (:mod:`hotset.coordination.chunk_refs`), so a dead server degrades it as it
        degrades the store.
        """
        return self._talking()

    def _talking(self) -> contextlib.AbstractContextManager[None]:
        return talking(self._redis, self._where, self._secrets)

    def _pipeline(self, *, atomic: bool = False) -> Any:
        """A pipeline: one round trip (per node). ``atomic`` wraps it in MULTI/EXEC
        on a single server; a cluster pipeline spans slots and cannot be atomic."""
        if self._cluster:
            return self._client.pipeline()
        return self._client.pipeline(transaction=atomic)

    # -- operations ---------------------------------------------------------------

    def get_many(self, keys: Sequence[CacheKey]) -> list[bytes | None]:
        checked = [check_cache_key(k) for k in keys]
        if not checked:
            return []
        with self._talking():
            pipe = self._pipeline()
            for key in checked:
                pipe.get(self.redis_key(key))
            values: list[bytes | None] = pipe.execute()
        served = 0
        for key, value in zip(checked, values, strict=True):
            if value is None:
                continue
            if self._verify and xxhash.xxh3_64_hexdigest(value) != key.content_hash:
                raise IntegrityError(
                    f"redis cache at {self._where}: sample {key.sample_id} should hash to "
                    f"{key.content_hash} but its {len(value)} cached bytes hash to "
                    f"{xxhash.xxh3_64_hexdigest(value)}"
                )
            served += len(value)
        hits = sum(v is not None for v in values)
        self._stats.add_gets(hits, len(values) - hits, served)
        return values

    def put_many(self, items: Sequence[tuple[CacheKey, bytes]]) -> None:
        plan: dict[str, bytes] = {}
        for item in items:
            if not isinstance(item, tuple) or len(item) != 2:
                raise HotsetError(f"cache put: items must be (key, bytes) pairs, got {item!r:.80}")
            key = check_cache_key(item[0])
            plan[self.redis_key(key)] = check_payload(key, item[1], verify=self._verify)
        if not plan:
            return
        with self._talking():
            written, nbytes = self._writes.put(plan, self)
        self._stats.add_puts(written, nbytes)

    def delete_many(self, keys: Sequence[CacheKey]) -> None:
        rkeys = list(dict.fromkeys(self.redis_key(k) for k in keys))
        if not rkeys:
            return
        with self._talking():
            removed = self._writes.delete(rkeys, self)
        self._stats.add_deletes(removed)

    def resync(self) -> int:
        """Set the counter to the bytes stored (``STRLEN`` of every entry); return it.

        Repairs a counter a lost reply left unsure (the cluster does this on its
        own, see :mod:`hotset.cachestore.redis_cluster`) or one that entries Redis
        evicted by itself, or another client, left too high -- which a refused put
        does on its own. The total is counted by ``SCAN`` (on every master), so it
        is exact when no other client changes the namespace while it scans; to keep
        a concurrent writer's update, the counter is only set if it still holds
        what it held before the scan (a compare-and-set in one script), else the
        scan is repeated, up to :data:`~hotset.cachestore.redis_resync.RESYNC_TRIES`
        times, and the counter left alone if others keep changing it (the next
        refusal tries again). Returns the counter's value afterwards.
        """
        started = time.monotonic()
        with self._talking():
            if self._cluster:  # entries on every master: scanned from here, then set
                total, drift = set_to_scanned(
                    self._client, self._resync_script, self._counter, self._stored_total
                )
            else:  # one server: counted and set in one script (redis_scripts)
                counted, before = self._atomic_resync_script(
                    keys=[self._counter], args=[self._prefix + "*", SCAN_BATCH]
                )
                total, drift = int(counted), int(counted) - count(before)
            if drift is not None:
                self._stats.add_resync(drift)
        self._health.resynced(started)
        return total

    def _stored_total(self) -> int:
        """The bytes the namespace's entries hold, by ``SCAN`` and pipelined ``STRLEN``."""
        return stored_total(self._client, self._prefix, self._counter, self._strlen_sum)

    def _strlen_sum(self, rkeys: list[bytes]) -> int:
        if not rkeys:
            return 0
        pipe = self._pipeline()
        for rkey in rkeys:
            pipe.strlen(rkey)
        return sum(int(n) for n in pipe.execute())

    def contains(self, key: CacheKey) -> bool:
        rkey = self.redis_key(key)
        with self._talking():
            return bool(self._client.exists(rkey))

    def used_bytes(self) -> int:
        """The namespace's byte counter (0 while it is missing or not a count)."""
        with self._talking():
            value = self._client.get(self._counter)
        return count(value)

    def clear(self) -> None:
        """Delete every entry of this namespace (on every master) and zero the counter.

        Meant for the owner of a namespace while no other client writes to it.
        """
        with self._talking():
            batch: list[bytes] = []
            for rkey in self._client.scan_iter(match=self._prefix + "*", count=SCAN_BATCH):
                batch.append(rkey)
                if len(batch) >= SCAN_BATCH:
                    self._unlink(batch)
                    batch = []
            self._unlink(batch)
            self._client.set(self._counter, 0)
        self._health.stale = False

    def drop(self) -> None:
        """:meth:`clear`, then delete the namespace's byte counter too: nothing is left."""
        self.clear()
        with self._talking():
            self._client.delete(self._counter)

    def _unlink(self, rkeys: list[bytes]) -> None:
        if rkeys:
            pipe = self._pipeline()
            for rkey in rkeys:
                pipe.delete(rkey)
            pipe.execute()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._client.close()

    def stats(self) -> CacheStats:
        return self._stats.snapshot()
