"""Open a cache store from one spec string, the way users write it on the command line.

``"memory"`` or ``"shm"`` is the embedded default (:class:`SharedMemoryCache`, no
server); ``"redis://host:port/db"`` is one Redis server; ``"redis+cluster://h1:p1,h2:p2"``
(or a list of ``host:port`` startup nodes) is a Redis Cluster. Redis support is
imported only when such a spec is opened, so the default needs no extra package.

What opens each kind is a :class:`~hotset.registry.Registry` (:data:`BACKENDS`, the type
stores and policies register in): :func:`parse_cache_spec` names the kind without
connecting, and :func:`open_cache` hands the spec and a :class:`CacheRequest` to the
kind's opener. A plug-in registers a URL scheme of its own (``register_backend("myc",
opener)``): ``myc://...`` specs are then that kind, checked by the opener itself.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hotset.cachestore.base import CacheStore
from hotset.cachestore.redaction import redact, redact_spec_value, scrub, secrets_in
from hotset.errors import HotsetError
from hotset.registry import Registry
from hotset.units import parse_bytes

if TYPE_CHECKING:
    from hotset.data.digest import Digest

__all__ = [
    "BACKENDS",
    "EMBEDDED_SPECS",
    "CacheRequest",
    "open_cache",
    "parse_cache_spec",
    "register_backend",
]

EMBEDDED_SPECS = ("memory", "shm")


@dataclass(frozen=True)
class CacheRequest:
    """What a loader asks of the cache it opens, whatever its kind (see :func:`open_cache`)."""

    capacity_bytes: int
    namespace: str
    n_slots: int
    verify: bool = False
    socket_timeout: float | None = None
    socket_connect_timeout: float | None = None
    digest: Digest | None = None


#: ``opener(spec, request)`` -> the store
CacheOpener = Callable[[object, CacheRequest], CacheStore]


def _open_embedded(spec: object, request: CacheRequest) -> CacheStore:
    if request.digest is not None:
        raise HotsetError(
            f"cache {spec!r} with a digest: the embedded cache is private to one loader, "
            "so content-addressed sharing has nobody to share with; give a Redis cache "
            "(cache='redis://host:port/0', cache_bytes=..., namespace=...) or leave out digest"
        )
    from hotset.cachestore.shm import SharedMemoryCache

    return SharedMemoryCache(request.capacity_bytes, n_slots=request.n_slots, verify=request.verify)


def _open_redis(spec: object, request: CacheRequest) -> CacheStore:
    """One Redis server or a cluster (the client tells them apart by the spec)."""
    from hotset.cachestore.redis_store import RedisCache

    options = {
        "namespace": request.namespace,
        "capacity_bytes": request.capacity_bytes,
        "verify": request.verify,
        "socket_timeout": request.socket_timeout,
        "socket_connect_timeout": request.socket_connect_timeout,
    }
    if request.digest is not None:
        from hotset.cachestore.capability import CapabilityRedisCache

        return CapabilityRedisCache(spec, digest=request.digest, **options)  # type: ignore[arg-type]
    return RedisCache(spec, **options)  # type: ignore[arg-type]


#: cache kind (what :func:`parse_cache_spec` names) -> its opener
BACKENDS: Registry[CacheOpener] = Registry("cache backend", check=callable)
#: the kinds hotset opens itself (:func:`parse_cache_spec` names them from the spec)
_BUILT_IN = {"memory": _open_embedded, "redis": _open_redis, "redis-cluster": _open_redis}
for _kind, _opener in _BUILT_IN.items():
    BACKENDS.register(_kind, _opener)


def register_backend(scheme: str, opener: CacheOpener, *, replace: bool = False) -> None:
    """Make ``scheme://...`` cache specs open with ``opener(spec, request)``.

    The built-in kinds (``memory``, ``redis``, ``redis-cluster``) are taken over only
    with ``replace=True``, as every registry's names are.
    """
    if not isinstance(scheme, str) or not scheme.isidentifier():
        raise HotsetError(f"bad cache scheme {scheme!r}: give the bare name, e.g. 'myc'")
    BACKENDS.register(scheme, opener, replace=replace)


def open_cache(
    spec: str | Sequence[str],
    *,
    capacity_bytes: int | str,
    namespace: str,
    n_slots: int,
    verify: bool = False,
    socket_timeout: float | None = None,
    socket_connect_timeout: float | None = None,
    digest: Digest | None = None,
) -> CacheStore:
    """A cache store for ``spec`` holding at most ``capacity_bytes`` of payload.

    ``namespace`` names the dataset in a shared Redis (keys are
    ``hotset:<namespace>:<hash>``); ``n_slots`` is the dataset size, which sizes
    the shared-memory index. ``verify`` re-hashes every served sample.
    ``socket_timeout`` / ``socket_connect_timeout`` (seconds) bound how long a
    Redis call may hang before it fails and the loader serves from storage; left
    out, the URL's query (``?socket_timeout=0.5``) or the Redis defaults apply.
    The embedded cache has no server to wait for and ignores them.

    ``digest`` (a Redis cache only) keys entries by the BLAKE2b of their content
    (:mod:`hotset.cachestore.capability`). The embedded cache refuses one: it is
    private to one loader, so content addressing would share nothing.
    """
    request = CacheRequest(
        capacity_bytes=parse_bytes(capacity_bytes, name="capacity_bytes"),
        namespace=namespace,
        n_slots=n_slots,
        verify=verify,
        socket_timeout=socket_timeout,
        socket_connect_timeout=socket_connect_timeout,
        digest=digest,
    )
    kind = parse_cache_spec(spec)  # a malformed spec fails here, before any connection is tried
    return BACKENDS.get(kind)(spec, request)


_UNKNOWN = (
    "use 'memory' (or 'shm'), 'redis://host:port/db', "
    "'redis+cluster://host:port,host:port' or a list of cluster nodes"
)


def parse_cache_spec(spec: object) -> str:
    """The kind of cache ``spec`` names (``"memory"``, ``"redis"`` or ``"redis-cluster"``).

    Checks the spec's syntax only and never connects, so a typo is reported as
    a :class:`HotsetError` naming the spec instead of a ``ValueError`` from deep in
    the Redis client (or a connection attempt to a mangled address).
    """
    if isinstance(spec, str) and spec.strip().lower() in EMBEDDED_SPECS:
        return "memory"
    from hotset.cachestore.redis_url import CLUSTER_SCHEMES, SINGLE_SCHEMES, parse_cluster

    if isinstance(spec, list | tuple):
        if not spec or not all(isinstance(s, str) for s in spec):
            raise HotsetError(
                "cache nodes must be a non-empty list of 'host:port' strings, "
                f"got {redact_spec_value(spec):.120}"
            )
        try:
            parse_cluster(list(spec))
        except HotsetError:
            raise  # names the nodes already, without passwords
        except ValueError as exc:  # int() of odd digits, a bad IPv6 bracket
            raise HotsetError(f"cache {redact_spec_value(spec)}: {scrub_spec(exc, spec)}") from None
        return "redis-cluster"
    if not isinstance(spec, str):
        raise HotsetError(f"unknown cache {redact_spec_value(spec):.80}: {_UNKNOWN}")
    try:
        parts = urllib.parse.urlsplit(spec)
        if parts.scheme not in CLUSTER_SCHEMES:  # several host:port, no one port
            parts.port  # noqa: B018 - raises ValueError for a port that is not 0..65535
        where = redact_spec(spec)
    except ValueError as exc:
        raise HotsetError(
            f"cache {redact_spec_value(spec)} is not a valid URL ({scrub_spec(exc, spec)}): "
            f"{_UNKNOWN}"
        ) from None
    scheme = parts.scheme
    if scheme in BACKENDS and scheme not in _BUILT_IN:
        return scheme  # a plug-in's kind: its opener checks the rest
    if scheme in CLUSTER_SCHEMES:
        try:
            parse_cluster(spec)
        except HotsetError:
            raise
        except ValueError as exc:
            raise HotsetError(f"cache {where!r}: {scrub_spec(exc, spec)}") from None
        return "redis-cluster"
    if scheme not in SINGLE_SCHEMES:
        raise HotsetError(f"unknown cache {where!r:.120}: {_UNKNOWN}")
    if not spec.startswith(f"{scheme}://"):
        raise HotsetError(f"cache {where!r}: write the scheme as '{scheme}://' (lowercase)")
    if scheme != "unix":
        if not parts.hostname:
            raise HotsetError(f"cache {where!r}: no host (expected {scheme}://host:port/db)")
        db = urllib.parse.unquote(parts.path).strip("/")
        if db and not (db.isascii() and db.isdigit()):
            raise HotsetError(f"cache {where!r}: database {db!r} is not a number")
    elif not parts.path:
        raise HotsetError(f"cache {where!r}: no socket path (expected unix:///path/to/socket)")
    try:
        from redis.connection import parse_url
    except ImportError:  # opening it reports the missing client
        return "redis"
    try:
        parse_url(spec)  # query options (socket_timeout=...) are checked by the client's parser
    except ValueError as exc:
        raise HotsetError(f"cache {where!r}: {scrub_spec(exc, spec)}") from None
    return "redis"


def redact_spec(spec: str) -> str:
    """``spec`` without its password, for error messages."""
    return redact(spec)


def scrub_spec(exc: BaseException, spec: object) -> str:
    """A parser's message about ``spec`` with the spec's passwords taken out of it."""
    return scrub(str(exc), secrets_in(spec))
