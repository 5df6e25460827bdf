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
a small Lua script and so is a delete (see Budget). In a cluster a put is one
``INCRBY`` of the byte counter (the budget reservation) and one pipelined
``SET NX`` round trip per node; a delete is one pipelined round trip of
``STRLEN`` + ``DEL`` per key per node and one ``DECRBY``.

Budget. Payload bytes are kept in the counter key ``hotset:<namespace>:used-bytes``,
so every client of a namespace sees the same total, and the counter must equal
the bytes actually stored -- also when a reply is lost (a timeout, a frozen or
killed server), when the server refuses a write (OOM) and when clients race.
Counting client-side around separate commands cannot promise that: an ``INCRBY``
whose reply is lost may or may not have been applied, and a refund for writes
that failed may itself fail. So:

* On a single server the reservation and the writes are one Lua script (and a
  delete's ``STRLEN``/``DEL``/``DECRBY`` another): Redis runs a script whole or
  not at all, so a lost reply leaves the counter and the entries in agreement
  either way; and an OOM refusal hits the script's first write, before anything
  changed (the script only reads before it). The script checks the budget
  itself, after discounting entries already present, so a refused put changes
  nothing. Scripts were chosen over ``MULTI``/``EXEC`` because the reservation
  depends on what is present and on the counter's value, which a transaction
  cannot branch on without ``WATCH`` retries.
* In a cluster (redis-py's cluster pipeline cannot route ``EVAL``, and one
  script cannot touch keys of several slots) the counter is kept as before, with
  two repairs: a failure whose effect is known is refunded exactly (per-command
  results of the ``SET`` pipeline: a ``SET`` the server refused is handed back);
  a failure whose effect is unknown (a lost reply) marks the handle *stale*, and
  a stale handle calls :meth:`RedisCache.resync` -- the sum of ``STRLEN`` over
  the namespace's keys, found by ``SCAN`` on every master -- before its next
  operation. A put that would be refused also resyncs and retries first (below).
  Until a resync the counter can only be too high (a refused put), never too low:
  a reservation is taken before the writes and only refunded once its writes are
  known to have failed.

Either way a put never takes the namespace over ``capacity_bytes``; a refused put
raises :class:`~hotset.cachestore.base.PutRefused` (a :class:`~hotset.errors.HotsetError`)
naming the sizes. ``clear()`` resets the counter.

A counter that disagrees with what is there. Entries can leave without a delete
going through the scripts: a server whose ``maxmemory-policy`` evicts drops them
when full (a loader warns about such a server at start,
:mod:`hotset.cachestore.redis_eviction`), and another client may delete,
shorten or overwrite an entry, or write the counter itself. The delete script
only takes off the bytes still there, so such entries leave the counter too
high -- for good, were nothing done -- and every later put of the namespace
would be refused. The repair is :meth:`RedisCache.resync`, run where the
disagreement shows, so that the hot path pays nothing for it:

* a put the budget refuses resyncs and tries once more (single server and
  cluster alike): a counter too high never turns away bytes that fit. Why not a
  per-namespace index of entry sizes kept by the scripts: it would cost every
  put and delete a hash write and as much memory again per entry, and a server
  that evicts may evict the index too; a scan at refusals costs nothing until the
  counter is wrong, and finds what is really there. Resyncs forced by refusals
  are spaced (:data:`_RESYNC_DUTY`): a namespace other jobs keep full refuses
  every put, and one scan per refused item would cost more than the puts;
* on a single server, a counter that is missing or not a count (the server
  evicted it -- its LRU clock ticks once a second, so a key touched every batch
  is not safe -- or a client deleted or overwrote it) would read as 0 and let the
  namespace pass its budget: the put script stores nothing then (status 2) and
  the handle resyncs first, always. The delete script leaves such a counter as
  it is. A handle that may store creates its namespace's counter if there is
  none (``SET NX 0``), so a missing one means it went away, not that the
  namespace is new. (A cluster's ``INCRBY`` reservation re-creates a missing
  counter from its own bytes: too low, as below.);
* ``resync`` sets the counter with a compare-and-set against the value it read
  before scanning, so a put or delete another client made during the scan is
  never overwritten (:meth:`RedisCache.resync`).

What is left: a counter lowered by hand, or one evicted and re-created as 0 by a
handle joining the namespace, reads too low until a refusal resyncs it; a loader's
own policy still keeps a private namespace within its budget.

Failures. A server that is down, frozen or refusing writes raises
:class:`CacheUnavailable` (a :class:`~hotset.errors.HotsetError`), after at most
``socket_timeout`` seconds (``socket_connect_timeout`` to connect), with no
retries: the loader's workers then serve the batch from storage and back off
(:mod:`hotset.torch.fetch`), so a slow failure would only stall training. Both
timeouts are keyword options and may also be given in the URL's query
(``redis://h:p/0?socket_timeout=0.5``), which is how a cache spec string carries
them.

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
from hotset.cachestore.redaction import (
    redact,
    redact_spec_value,
    scrub,
    secrets_in,
    split_userinfo,
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

#: default seconds to connect; a loopback or LAN server answers in milliseconds
CONNECT_TIMEOUT_SECONDS = 1.0
#: default seconds to wait for a reply: a batch's pipeline moves a few MB, while a
#: frozen server should cost a worker this long at most before it falls back to storage
SOCKET_TIMEOUT_SECONDS = 5.0
#: the timeouts a URL's query may carry (redis-py's own option names)
_TIMEOUT_OPTIONS = ("socket_timeout", "socket_connect_timeout")
_SINGLE_SCHEMES = ("redis", "rediss", "unix")
_CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")
# No ':' (namespaces nest by prefix), no glob characters (clear() scans by
# pattern), no braces (a hash tag would pin a namespace to one cluster slot).
_NAMESPACE_PATTERN = re.compile(r"^[A-Za-z0-9._/=+@-]{1,200}$")
_SCAN_BATCH = 1000

# Reserve and write in one step (see the module docstring). KEYS[1] is the counter,
# KEYS[i] (i > 1) an entry whose bytes are ARGV[i]; ARGV[1] is capacity_bytes.
# Reads first: an OOM refusal then hits the first SET, before anything changed.
# Returns {status, bytes added (or that would be), entries, used before}: status 1
# stored, 0 over budget, 2 the counter is missing or not a count (a server that
# evicts dropped it, another client deleted or overwrote it): nothing is stored
# until a resync has counted the entries again.
_PUT_SCRIPT = """
local fresh, adding = {}, 0
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then
    fresh[#fresh + 1] = i
    adding = adding + string.len(ARGV[i])
  end
end
local used = tonumber(redis.call('GET', KEYS[1]) or '')
if #fresh == 0 then return {1, 0, 0, used or 0} end
if used == nil or used < 0 then return {2, adding, #fresh, 0} end
if used + adding > tonumber(ARGV[1]) then return {0, adding, #fresh, used} end
for _, i in ipairs(fresh) do redis.call('SET', KEYS[i], ARGV[i]) end
redis.call('INCRBY', KEYS[1], adding)
return {1, adding, #fresh, used}
"""
# Resync's compare-and-set: KEYS[1] is the counter, ARGV[1] the value it held before
# the scan ('' for none), ARGV[2] the scanned total. Sets it only if unchanged, so
# a put or delete another client made during the scan is never overwritten.
_RESYNC_SCRIPT = """
if (redis.call('GET', KEYS[1]) or '') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
"""
#: the put script's status: stored, refused over budget, no counter to check against
_STORED, _REFUSED, _NO_COUNTER = 1, 0, 2
#: scans a resync repeats while other clients keep changing the counter
_RESYNC_TRIES = 3
#: the share of a handle's time that resyncs forced by refused puts may take
_RESYNC_DUTY = 0.1
# Delete entries and take their bytes off the counter in one step. DEL is allowed
# under OOM, and once a script has written its DECRBY is too. A counter that is
# missing or not a count is left so (a DECRBY would make it a wrong count, or fail):
# the next put resyncs it.
_DELETE_SCRIPT = """
local removed, freed = 0, 0
for i = 2, #KEYS do
  local n = redis.call('STRLEN', KEYS[i])
  if redis.call('DEL', KEYS[i]) == 1 then
    removed = removed + 1
    freed = freed + n
  end
end
local used = tonumber(redis.call('GET', KEYS[1]) or '')
if freed > 0 and used ~= nil and used >= 0 then redis.call('DECRBY', KEYS[1], freed) end
return {removed, freed}
"""


class CacheUnavailable(HotsetError):
    """The cache server failed a call: unreachable, timed out, or refusing writes (OOM).

    Apart from :class:`~hotset.errors.HotsetError` itself, which a refused put
    (over budget) raises, so a caller can serve from storage instead of failing
    on this one, and still fail on a policy bug.
    """


_PIPELINE_ECHO = re.compile(r"^Command # (\d+) \(")
_PIPELINE_TAIL = ") of pipeline caused error: "


def _describe(exc: BaseException) -> str:
    """``exc``'s message without the command redis-py echoes into pipeline errors.

    redis-py prefixes a pipelined command's error with the command itself, its
    arguments cut to 100 characters: for a ``SET`` that is sample bytes, which
    have no place in an error message (and may be private data).
    """
    text = str(exc)
    head = _PIPELINE_ECHO.match(text)
    tail = text.rfind(_PIPELINE_TAIL)
    if head is not None and tail > head.end():
        text = (
            f"command #{head.group(1)} of a pipeline failed: {text[tail + len(_PIPELINE_TAIL) :]}"
        )
    return f"{type(exc).__name__}: {text}"


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


def _host_port(text: str, *, spec: str) -> tuple[str, int]:
    host, sep, port_text = text.strip().rpartition(":")
    host = host.strip("[]")
    # isascii: str.isdigit accepts digits such as "²" that int() then refuses
    ok_digits = port_text.isascii() and port_text.isdigit()
    if not sep or not host or not ok_digits or not 0 < int(port_text) < 65536:
        raise HotsetError(f"redis cluster node {redact(text)!r} in {spec}: expected host:port")
    return host, int(port_text)


def _auth_options(scheme: str, userinfo: str | None, query: str) -> dict[str, Any]:
    """``username``/``password`` of a URL's userinfo (or, as redis-py reads a server's
    URL, of its query), and ``ssl`` for a ``rediss`` scheme."""
    options: dict[str, Any] = {}
    if userinfo:
        user, _, password = userinfo.partition(":")
        if user:
            options["username"] = urllib.parse.unquote(user)
        if password:
            options["password"] = urllib.parse.unquote(password)
    for name, value in urllib.parse.parse_qsl(query):
        if name in ("username", "password"):
            options[name] = value
    if scheme.startswith("rediss"):
        options["ssl"] = True
    return options


def _parse_cluster(spec: str | Sequence[str]) -> tuple[list[tuple[str, int]], dict[str, Any]]:
    """Startup nodes and connection options from a cluster URL or a node list.

    A node of a list may be a URL (``redis://user:secret@h:p``): its credentials
    (and ``rediss``'s TLS) apply to the whole cluster, so nodes that give other
    ones are refused rather than one of them silently ignored. The userinfo is
    found as :func:`~hotset.cachestore.redaction.split_userinfo` finds it, so
    every error names the spec without what is used as a password.
    """
    where = redact_spec_value(spec)
    options: dict[str, Any] = {}
    items = [spec] if isinstance(spec, str) else list(spec)
    nodes = []
    for item in items:
        head, userinfo, rest = split_userinfo(item)
        rest, _, query = rest.partition("?")
        hosts, _, path = rest.partition("/")
        if isinstance(spec, str) and path not in ("", "0"):
            raise HotsetError(f"redis cluster {where}: a cluster has only database 0")
        for name, value in _auth_options(head, userinfo, query).items():
            if options.setdefault(name, value) != value:
                raise HotsetError(
                    f"redis cluster {where}: the nodes give different {name} settings; "
                    "give every node the same (or give them on one node only)"
                )
        nodes += [_host_port(h, spec=where) for h in hosts.split(",") if h.strip()]
    if not nodes:
        raise HotsetError(f"redis cluster {where}: no startup nodes")
    return nodes, options


def _timeout(value: object, *, name: str) -> float:
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        raise HotsetError(
            f"redis cache: {name} must be a positive number of seconds, got {value!r}"
        )
    return seconds


def _split_timeouts(url: str) -> tuple[str, dict[str, str]]:
    """The URL without its timeout options, and those options (query values)."""
    parts = urllib.parse.urlsplit(url)
    if not parts.query:
        return url, {}
    pairs = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    found = {k: v for k, v in pairs if k in _TIMEOUT_OPTIONS}
    rest = urllib.parse.urlencode([(k, v) for k, v in pairs if k not in _TIMEOUT_OPTIONS])
    return urllib.parse.urlunsplit(parts._replace(query=rest)), found


def _count(value: bytes | None) -> int:
    """A counter's value as read: 0 when missing or not a count (another client's)."""
    try:
        return max(0, int(value or 0))
    except ValueError:
        return 0


def _identify(url_or_urls: object) -> tuple[str | list[str], bool, str]:
    """(the spec as kept, whether it names a cluster, where it is without passwords)."""
    if isinstance(url_or_urls, str):
        scheme = urllib.parse.urlsplit(url_or_urls).scheme
        if scheme not in _SINGLE_SCHEMES + _CLUSTER_SCHEMES:
            raise HotsetError(
                f"redis cache: unsupported URL {redact(url_or_urls)!r} (use redis://, "
                "rediss://, unix://, redis+cluster:// or a list of cluster nodes)"
            )
        return url_or_urls, scheme in _CLUSTER_SCHEMES, redact(url_or_urls)
    if is_redis_spec(url_or_urls):
        assert isinstance(url_or_urls, list | tuple)
        nodes = list(url_or_urls)
        return nodes, True, "redis cluster " + ",".join(redact(s) for s in nodes)
    raise HotsetError(
        "redis cache: expected a URL or a list of 'host:port' cluster nodes, "
        f"got {redact_spec_value(url_or_urls)}"
    )


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
        #: cluster only: a failure left the counter's effect unknown; resync before use
        self._stale = False
        #: resyncs of the counter a refused put may run: not before this monotonic time
        self._resync_after = 0.0
        redis = _import_redis()
        self._redis = redis
        self._spec, self._cluster, self._where = _identify(url_or_urls)
        #: the spec's passwords, scrubbed from the client library's messages too
        self._secrets = secrets_in(self._spec)
        connect_url = self._spec
        in_url: dict[str, str] = {}
        if isinstance(self._spec, str):
            connect_url, in_url = _split_timeouts(self._spec)
        self._socket_timeout = _timeout(
            socket_timeout
            if socket_timeout is not None
            else in_url.get("socket_timeout", SOCKET_TIMEOUT_SECONDS),
            name="socket_timeout",
        )
        self._connect_timeout = _timeout(
            socket_connect_timeout
            if socket_connect_timeout is not None
            else in_url.get("socket_connect_timeout", CONNECT_TIMEOUT_SECONDS),
            name="socket_connect_timeout",
        )
        try:
            self._client = self._connect(connect_url)
        except HotsetError:
            raise
        except (redis.exceptions.RedisError, redis.cluster.RedisClusterException, OSError) as exc:
            raise CacheUnavailable(
                f"cannot reach redis at {self._where}: {scrub(str(exc), self._secrets)}"
            ) from None
        except ValueError as exc:  # the client's parse of the URL's options
            raise HotsetError(
                f"redis cache {self._where}: {scrub(str(exc), self._secrets)}"
            ) from None

    def _connect(self, connect_url: str | list[str]) -> Any:
        """A client of the server(s), checked with a PING; the scripts loaded (single server)."""
        redis = self._redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        options: dict[str, Any] = {
            "socket_connect_timeout": self._connect_timeout,
            "socket_timeout": self._socket_timeout,
            # No retries: a retried call would multiply the wait on a frozen server
            # (the caller falls back to storage instead), and a retried INCRBY whose
            # first reply was lost would reserve twice.
            "retry": Retry(NoBackoff(), 0),
        }
        if self._cluster:
            nodes, auth = _parse_cluster(connect_url)
            client = redis.cluster.RedisCluster(
                startup_nodes=[redis.cluster.ClusterNode(h, p) for h, p in nodes],
                **auth,
                **options,
            )
        else:
            assert isinstance(connect_url, str)
            client = redis.Redis.from_url(connect_url, **options)
        client.ping()
        self._put_script: Any = None
        self._delete_script: Any = None
        # One key (the counter): runs on a cluster too, routed by that key's slot.
        self._resync_script: Any = client.register_script(_RESYNC_SCRIPT)
        if not self._cluster:
            self._put_script = client.register_script(_PUT_SCRIPT)
            self._delete_script = client.register_script(_DELETE_SCRIPT)
            # Loaded now, so a batch's put is one EVALSHA from the first one on
            # (a restarted server forgets them; redis-py then loads them again).
            client.script_load(_PUT_SCRIPT)
            client.script_load(_DELETE_SCRIPT)
            if self._capacity > 0:  # a handle that may store (not an admin's, not drop's)
                # A namespace's counter exists from its first handle on, so that a put
                # finding none knows it was evicted or deleted and counts again (the
                # put script's status 2); set only where missing, so a joined count
                # stays. Best effort: a server out of memory refuses it, and its puts
                # degrade as the loader's do.
                with contextlib.suppress(redis.exceptions.ResponseError):
                    client.set(self._counter, 0, nx=True)
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
        (:mod:`hotset.cachestore.chunk_refs`), so a dead server degrades it as it
        degrades the store.
        """
        return self._talking()

    @contextlib.contextmanager
    def _talking(self) -> Iterator[None]:
        try:
            yield
        except (
            self._redis.exceptions.RedisError,
            self._redis.cluster.RedisClusterException,
            OSError,
        ) as exc:
            raise CacheUnavailable(
                f"redis cache at {self._where}: {scrub(_describe(exc), self._secrets)}"
            ) from None

    @contextlib.contextmanager
    def _unsure(self) -> Iterator[None]:
        """A cluster step whose failure leaves the counter's effect unknown: mark stale."""
        try:
            yield
        except BaseException:
            self._stale = True
            raise

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
            if self._cluster:
                written, nbytes = self._put_cluster(plan)
            else:
                written, nbytes = self._put_single(plan)
        self._stats.add_puts(written, nbytes)

    def _put_single(self, plan: dict[str, bytes]) -> tuple[int, int]:
        """Reserve and write in one script run: all of it happens, or none of it.

        A refusal resyncs the counter (when :meth:`_may_resync` allows) and tries
        once more: a counter left too high by evicted entries or another client
        must not turn away bytes that fit.
        """
        keys, args = [self._counter, *plan], [self._capacity, *plan.values()]
        status, adding, entries, used = (int(v) for v in self._put_script(keys=keys, args=args))
        # A missing counter is always counted again (nothing may be stored without
        # one); a refusal only as often as _may_resync allows.
        if status == _NO_COUNTER or (status == _REFUSED and self._may_resync()):
            self.resync()
            status, adding, entries, used = (int(v) for v in self._put_script(keys=keys, args=args))
        if status != _STORED:
            refuse_over_budget(items=entries, adding=adding, used=used, capacity=self._capacity)
        return entries, adding

    def _put_cluster(self, plan: dict[str, bytes]) -> tuple[int, int]:
        """Reserve, write per node, refund what is known to have failed (module docstring)."""
        if self._stale:
            self.resync()
        adding = sum(len(v) for v in plan.values())
        if not self._reserve(adding):
            # Over budget counting every byte: discount entries already present.
            pipe = self._pipeline()
            for rkey in plan:
                pipe.exists(rkey)
            present = pipe.execute()
            plan = {k: v for (k, v), p in zip(plan.items(), present, strict=True) if not p}
            adding = sum(len(v) for v in plan.values())
            if plan and not self._reserve(adding) and not self._resync_and_reserve(adding):
                used = self.used_bytes()
                refuse_over_budget(
                    items=len(plan), adding=adding, used=used, capacity=self._capacity
                )
        if not plan:
            return 0, 0
        pipe = self._pipeline()
        for rkey, value in plan.items():
            pipe.set(rkey, value, nx=True)
        with self._unsure():  # a lost reply: which SETs landed is unknown
            stored = pipe.execute(raise_on_error=False)
        failed = [r for r in stored if isinstance(r, Exception)]
        refund = sum(len(v) for v, ok in zip(plan.values(), stored, strict=True) if ok is not True)
        if refund:
            with self._unsure():
                self._client.decrby(self._counter, refund)
        if failed:
            raise failed[0]  # after the refund: the counter holds what was stored
        written = sum(1 for ok in stored if ok is True)
        return written, adding - refund

    def _resync_and_reserve(self, nbytes: int) -> bool:
        """Cluster, a reservation refused: maybe the counter is too high (a failure
        elsewhere, entries the server evicted): count the entries, then retry."""
        if not self._may_resync():
            return False
        self.resync()
        return self._reserve(nbytes)

    def _reserve(self, nbytes: int) -> bool:
        """Cluster: add ``nbytes`` to the shared counter unless that passes the budget."""
        if nbytes == 0:
            return True
        with self._unsure():  # a lost INCRBY reply may or may not have counted
            used = int(self._client.incrby(self._counter, nbytes))
        if used <= self._capacity:
            return True
        with self._unsure():
            self._client.decrby(self._counter, nbytes)
        return False

    def delete_many(self, keys: Sequence[CacheKey]) -> None:
        rkeys = list(dict.fromkeys(self.redis_key(k) for k in keys))
        if not rkeys:
            return
        with self._talking():
            if not self._cluster:
                removed, _ = (int(v) for v in self._delete_script(keys=[self._counter, *rkeys]))
            else:
                if self._stale:
                    self.resync()
                pipe = self._pipeline()
                for rkey in rkeys:
                    pipe.strlen(rkey)
                    pipe.delete(rkey)
                with self._unsure():
                    replies = pipe.execute()
                sizes = [
                    int(n) for n, gone in zip(replies[::2], replies[1::2], strict=True) if gone
                ]
                removed = len(sizes)
                if sum(sizes):
                    with self._unsure():  # deleted but still counted: too high until resync
                        self._client.decrby(self._counter, sum(sizes))
        self._stats.add_deletes(removed)

    def resync(self) -> int:
        """Set the counter to the bytes stored (``STRLEN`` of every entry); return it.

        Repairs a counter a lost reply left unsure (the cluster does this on its
        own, see the module docstring) or one that entries Redis evicted by itself,
        or another client, left too high -- which a refused put does on its own.
        The total is counted by ``SCAN`` (on every master), so it is exact when no
        other client changes the namespace while it scans; to keep a concurrent
        writer's update, the counter is only set if it still holds what it held
        before the scan (a compare-and-set in one script), else the scan is
        repeated, up to :data:`_RESYNC_TRIES` times, and the counter left alone
        if others keep changing it (the next refusal tries again). Returns the
        counter's value afterwards.
        """
        started = time.monotonic()
        with self._talking():
            for _ in range(_RESYNC_TRIES):
                before = self._client.get(self._counter)
                total = self._stored_total()
                if int(self._resync_script(keys=[self._counter], args=[before or b"", total])):
                    self._stats.add_resync(total - _count(before))
                    break
            else:
                total = _count(self._client.get(self._counter))
        self._stale = False
        # A refused put may resync again once 1 / _RESYNC_DUTY times this one's
        # length has passed: a namespace that others keep full (every put refused,
        # and each one tried alone) costs at most that share of the time in scans.
        self._resync_after = time.monotonic() + (time.monotonic() - started) / _RESYNC_DUTY
        return total

    def _may_resync(self) -> bool:
        """Whether a refused put may resync the counter now (see :meth:`resync`)."""
        return time.monotonic() >= self._resync_after

    def _stored_total(self) -> int:
        """The bytes the namespace's entries hold, by ``SCAN`` and pipelined ``STRLEN``."""
        total = 0
        batch: list[bytes] = []
        counter = self._counter.encode()
        for rkey in self._client.scan_iter(match=self._prefix + "*", count=_SCAN_BATCH):
            if rkey != counter:
                batch.append(rkey)
            if len(batch) >= _SCAN_BATCH:
                total += self._strlen_sum(batch)
                batch = []
        return total + self._strlen_sum(batch)

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
        return _count(value)

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
        self._stale = False

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
