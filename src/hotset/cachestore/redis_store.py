"""A cache pooled across processes and machines: Redis or Redis Cluster.

Keys are ``hotset:<namespace>:<sample id>:<content hash>``. The namespace names
the dataset; the content hash in the key means bytes cached for an older version
of a file can never be served for the new one, and two jobs reading the same
dataset share entries. Values are the original sample bytes, unchanged. The id is
in the key too, so two samples with identical bytes are two entries: the policy
that evicts one still finds the other where it left it.

Round trips. Every batch is pipelined: a get is one ``GET`` per key, all sent in
one round trip (per node for a cluster, nodes served concurrently); there is no
existence check before the read. A put is one ``INCRBY`` of the byte counter (the
budget reservation) and one pipelined ``SET NX`` round trip; a delete is one
pipelined round trip of ``STRLEN`` + ``DEL`` per key (inside MULTI/EXEC on a
single server) and one ``DECRBY``. (redis-py's cluster pipeline cannot route
``EVAL``, so no script is used.)

Budget. Payload bytes are counted client-side from what puts and deletes do
and kept in the counter key ``hotset:<namespace>:used-bytes``, so every client
of a namespace sees the same total. A put first reserves its bytes with
``INCRBY``; a reservation past ``capacity_bytes`` is handed back and, after
discounting entries already present, the put is refused with a
:class:`~hotset.errors.HotsetError` naming the sizes. Races between clients can
only make the counter too high (a refused put), never too low: in a cluster a
put landing between a delete's ``STRLEN`` and ``DEL`` of the same key leaves its
bytes counted after they are gone. Configure the server with ``maxmemory-policy
noeviction`` (or enough memory): entries Redis evicts by itself would leave the
counter too high as well. ``clear()`` resets it.

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
import urllib.parse
from collections.abc import Iterator, Sequence
from typing import Any

import xxhash

from hotset.cachestore.base import (
    CacheKey,
    CacheStats,
    CacheStatsCounter,
    check_cache_key,
    check_payload,
    refuse_over_budget,
)
from hotset.errors import HotsetError, IntegrityError
from hotset.units import parse_bytes

__all__ = ["CONNECT_TIMEOUT_SECONDS", "RedisCache", "is_redis_spec"]

CONNECT_TIMEOUT_SECONDS = 1.0
SOCKET_TIMEOUT_SECONDS = 60.0
_SINGLE_SCHEMES = ("redis", "rediss", "unix")
_CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")
# No ':' (namespaces nest by prefix), no glob characters (clear() scans by
# pattern), no braces (a hash tag would pin a namespace to one cluster slot).
_NAMESPACE_PATTERN = re.compile(r"^[A-Za-z0-9._/=+@-]{1,200}$")
_SCAN_BATCH = 1000


def _import_redis() -> Any:
    try:
        import redis
        import redis.cluster
    except ImportError as exc:
        raise HotsetError(
            f"the redis cache needs the redis client ({exc}): pip install 'hotset[redis]'"
        ) from None
    return redis


def is_redis_spec(spec: object) -> bool:
    """True for a Redis URL, a cluster URL, or a list of cluster startup nodes."""
    if isinstance(spec, str):
        return urllib.parse.urlsplit(spec).scheme in _SINGLE_SCHEMES + _CLUSTER_SCHEMES
    return isinstance(spec, list | tuple) and bool(spec) and all(isinstance(s, str) for s in spec)


def redact(url: str) -> str:
    """The URL with any password replaced by ``***`` (it goes into error messages)."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    userinfo, _, hosts = parts.netloc.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{hosts}"))


def _host_port(text: str, *, spec: str) -> tuple[str, int]:
    host, sep, port_text = text.strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise HotsetError(f"redis cluster node {text!r} in {spec!r}: expected host:port")
    return host, int(port_text)


def _parse_cluster(spec: str | Sequence[str]) -> tuple[list[tuple[str, int]], dict[str, Any]]:
    """Startup nodes and connection options from a cluster URL or a node list."""
    options: dict[str, Any] = {}
    if isinstance(spec, str):
        parts = urllib.parse.urlsplit(spec)
        userinfo, _, hosts = parts.netloc.rpartition("@")
        if userinfo:
            user, _, password = userinfo.partition(":")
            if user:
                options["username"] = urllib.parse.unquote(user)
            if password:
                options["password"] = urllib.parse.unquote(password)
        if parts.scheme == "rediss+cluster":
            options["ssl"] = True
        if parts.path not in ("", "/", "/0"):
            raise HotsetError(f"redis cluster {redact(spec)!r}: a cluster has only database 0")
        nodes = [_host_port(h, spec=redact(spec)) for h in hosts.split(",") if h.strip()]
    else:
        nodes = []
        for item in spec:
            if "://" in item:
                parts = urllib.parse.urlsplit(item)
                item = parts.netloc.rpartition("@")[2]
            nodes.append(_host_port(item, spec=str(list(spec))))
    if not nodes:
        raise HotsetError(f"redis cluster {spec!r}: no startup nodes")
    return nodes, options


def _reopen(spec: str | list[str], namespace: str, capacity: int, verify: bool) -> RedisCache:
    return RedisCache(spec, namespace=namespace, capacity_bytes=capacity, verify=verify)


class RedisCache:
    """A byte-budgeted cache in Redis (``redis://host:port/db``) or a Redis Cluster
    (``redis+cluster://h1:p1,h2:p2`` or a list of ``host:port`` startup nodes)."""

    def __init__(
        self,
        url_or_urls: str | Sequence[str],
        *,
        namespace: str,
        capacity_bytes: int | str,
        verify: bool = False,
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
        redis = _import_redis()
        self._redis = redis
        if isinstance(url_or_urls, str):
            scheme = urllib.parse.urlsplit(url_or_urls).scheme
            if scheme not in _SINGLE_SCHEMES + _CLUSTER_SCHEMES:
                raise HotsetError(
                    f"redis cache: unsupported URL {redact(url_or_urls)!r} (use redis://, "
                    "rediss://, unix://, redis+cluster:// or a list of cluster nodes)"
                )
            self._cluster = scheme in _CLUSTER_SCHEMES
            self._spec: str | list[str] = url_or_urls
            self._where = redact(url_or_urls)
        elif is_redis_spec(url_or_urls):
            self._cluster = True
            self._spec = list(url_or_urls)
            self._where = "redis cluster " + ",".join(redact(s) for s in url_or_urls)
        else:
            raise HotsetError(
                f"redis cache: expected a URL or a list of nodes, got {url_or_urls!r}"
            )
        timeouts = {
            "socket_connect_timeout": CONNECT_TIMEOUT_SECONDS,
            "socket_timeout": SOCKET_TIMEOUT_SECONDS,
        }
        try:
            if self._cluster:
                nodes, options = _parse_cluster(self._spec)
                self._client = redis.cluster.RedisCluster(
                    startup_nodes=[redis.cluster.ClusterNode(h, p) for h, p in nodes],
                    **options,
                    **timeouts,
                )
            else:
                assert isinstance(self._spec, str)
                self._client = redis.Redis.from_url(self._spec, **timeouts)
            self._client.ping()
        except HotsetError:
            raise
        except (redis.exceptions.RedisError, redis.cluster.RedisClusterException, OSError) as exc:
            raise HotsetError(f"cannot reach redis at {self._where}: {exc}") from None

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

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # Workers reconnect on their own; connections never cross a process boundary.
        return (_reopen, (self._spec, self._namespace, self._capacity, self._verify))

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

    @contextlib.contextmanager
    def _talking(self) -> Iterator[None]:
        try:
            yield
        except (
            self._redis.exceptions.RedisError,
            self._redis.cluster.RedisClusterException,
            OSError,
        ) as exc:
            raise HotsetError(f"redis cache at {self._where}: {exc}") from None

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
            adding = sum(len(v) for v in plan.values())
            if not self._reserve(adding):
                # Over budget counting every byte: discount entries already present.
                pipe = self._pipeline()
                for rkey in plan:
                    pipe.exists(rkey)
                present = pipe.execute()
                plan = {k: v for (k, v), p in zip(plan.items(), present, strict=True) if not p}
                adding = sum(len(v) for v in plan.values())
                if plan and not self._reserve(adding):
                    used = self.used_bytes()
                    refuse_over_budget(
                        items=len(plan), adding=adding, used=used, capacity=self._capacity
                    )
            if not plan:
                return
            pipe = self._pipeline()
            for rkey, value in plan.items():
                pipe.set(rkey, value, nx=True)
            stored = pipe.execute()
            refund = sum(len(v) for v, ok in zip(plan.values(), stored, strict=True) if not ok)
            if refund:
                self._client.decrby(self._counter, refund)
        written = sum(1 for ok in stored if ok)
        self._stats.add_puts(written, adding - refund)

    def _reserve(self, nbytes: int) -> bool:
        """Add ``nbytes`` to the shared counter unless that passes the budget."""
        if nbytes == 0:
            return True
        used = int(self._client.incrby(self._counter, nbytes))
        if used <= self._capacity:
            return True
        self._client.decrby(self._counter, nbytes)
        return False

    def delete_many(self, keys: Sequence[CacheKey]) -> None:
        rkeys = list(dict.fromkeys(self.redis_key(k) for k in keys))
        if not rkeys:
            return
        with self._talking():
            pipe = self._pipeline(atomic=True)
            for rkey in rkeys:
                pipe.strlen(rkey)
                pipe.delete(rkey)
            replies = pipe.execute()
            removed = [int(n) for n, gone in zip(replies[::2], replies[1::2], strict=True) if gone]
            if sum(removed):
                self._client.decrby(self._counter, sum(removed))
        self._stats.add_deletes(len(removed))

    def contains(self, key: CacheKey) -> bool:
        rkey = self.redis_key(key)
        with self._talking():
            return bool(self._client.exists(rkey))

    def used_bytes(self) -> int:
        with self._talking():
            value = self._client.get(self._counter)
        return max(0, int(value or 0))

    def clear(self) -> None:
        """Delete every entry of this namespace (on every master) and zero the counter.

        Meant for the owner of a namespace while no other client writes to it.
        """
        with self._talking():
            batch: list[bytes] = []
            for rkey in self._client.scan_iter(match=self._prefix + "*", count=_SCAN_BATCH):
                batch.append(rkey)
                if len(batch) >= _SCAN_BATCH:
                    self._unlink(batch)
                    batch = []
            self._unlink(batch)
            self._client.set(self._counter, 0)

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
