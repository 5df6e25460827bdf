"""Open a cache store from one spec string, the way users write it on the command line.

``"memory"`` or ``"shm"`` is the embedded default (:class:`SharedMemoryCache`, no
server); ``"redis://host:port/db"`` is one Redis server; ``"redis+cluster://h1:p1,h2:p2"``
(or a list of ``host:port`` startup nodes) is a Redis Cluster. Redis support is
imported only when such a spec is opened, so the default needs no extra package.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from hotset.cachestore.base import CacheStore
from hotset.cachestore.redaction import redact, redact_spec_value, scrub, secrets_in
from hotset.errors import HotsetError
from hotset.units import parse_bytes

if TYPE_CHECKING:
    from hotset.data.digest import Digest

__all__ = ["EMBEDDED_SPECS", "open_cache", "parse_cache_spec"]

EMBEDDED_SPECS = ("memory", "shm")


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
    capacity = parse_bytes(capacity_bytes, name="capacity_bytes")
    parse_cache_spec(spec)  # a malformed spec fails here, before any connection is tried
    if isinstance(spec, str) and spec.strip().lower() in EMBEDDED_SPECS:
        if digest is not None:
            raise HotsetError(
                f"cache {spec!r} with a digest: the embedded cache is private to one loader, "
                "so content-addressed sharing has nobody to share with; give a Redis cache "
                "(cache='redis://host:port/0', cache_bytes=..., namespace=...) or leave out digest"
            )
        from hotset.cachestore.shm import SharedMemoryCache

        return SharedMemoryCache(capacity, n_slots=n_slots, verify=verify)
    from hotset.cachestore.redis_url import is_redis_spec

    if is_redis_spec(spec):
        from hotset.cachestore.redis_store import RedisCache

        if digest is not None:
            from hotset.cachestore.capability import CapabilityRedisCache

            return CapabilityRedisCache(
                spec,
                digest=digest,
                namespace=namespace,
                capacity_bytes=capacity,
                verify=verify,
                socket_timeout=socket_timeout,
                socket_connect_timeout=socket_connect_timeout,
            )
        return RedisCache(
            spec,
            namespace=namespace,
            capacity_bytes=capacity,
            verify=verify,
            socket_timeout=socket_timeout,
            socket_connect_timeout=socket_connect_timeout,
        )
    raise HotsetError(f"unknown cache {redact_spec_value(spec):.120}: {_UNKNOWN}")


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
