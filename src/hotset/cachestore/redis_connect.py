"""Talking to Redis: a client that fails fast, and its failures as :class:`CacheUnavailable`.

A server that is down, frozen or refusing writes raises :class:`CacheUnavailable`
(a :class:`~hotset.errors.HotsetError`), after at most ``socket_timeout`` seconds
(``socket_connect_timeout`` to connect), with no retries: the loader's workers
then serve the batch from storage and back off (:mod:`hotset.torch.fetch`), so a
slow failure would only stall training. Messages name the server without its
passwords and without the sample bytes redis-py echoes into pipeline errors.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from typing import Any

from hotset.cachestore.redaction import scrub
from hotset.cachestore.redis_url import parse_cluster
from hotset.errors import HotsetError, HotsetRuntimeError


class CacheUnavailable(HotsetRuntimeError):
    """The cache server failed a call: unreachable, timed out, or refusing writes (OOM).

    Apart from :class:`~hotset.errors.HotsetError` itself, which a refused put
    (over budget) raises, so a caller can serve from storage instead of failing
    on this one, and still fail on a policy bug.
    """


_PIPELINE_ECHO = re.compile(r"^Command # (\d+) \(")
_PIPELINE_TAIL = ") of pipeline caused error: "


def describe(exc: BaseException) -> str:
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


def import_redis() -> Any:
    """The ``redis`` package (with ``redis.cluster``), or an error saying how to install it."""
    try:
        import redis
        import redis.cluster
    except ImportError as exc:
        raise HotsetError(
            f"the redis cache needs the redis client ({exc}): pip install 'hotset[redis]'"
        ) from None
    return redis


def failures(redis: Any) -> tuple[type[BaseException], ...]:
    """The exceptions that mean the server (or the way to it) failed a call."""
    return (redis.exceptions.RedisError, redis.cluster.RedisClusterException, OSError)


@contextlib.contextmanager
def talking(redis: Any, where: str, secrets: Sequence[str]) -> Iterator[None]:
    """A context in which the server's failures become :class:`CacheUnavailable`."""
    try:
        yield
    except failures(redis) as exc:
        raise CacheUnavailable(f"redis cache at {where}: {scrub(describe(exc), secrets)}") from None


def open_client(
    redis: Any,
    connect_url: str | list[str],
    *,
    cluster: bool,
    socket_timeout: float,
    connect_timeout: float,
) -> Any:
    """A client of the server(s), checked with a PING; no retries, bounded waits."""
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    options: dict[str, Any] = {
        "socket_connect_timeout": connect_timeout,
        "socket_timeout": socket_timeout,
        # No retries: a retried call would multiply the wait on a frozen server
        # (the caller falls back to storage instead), and a retried INCRBY whose
        # first reply was lost would reserve twice.
        "retry": Retry(NoBackoff(), 0),
    }
    if cluster:
        nodes, auth = parse_cluster(connect_url)
        client = redis.cluster.RedisCluster(
            startup_nodes=[redis.cluster.ClusterNode(h, p) for h, p in nodes],
            **auth,
            **options,
        )
    else:
        assert isinstance(connect_url, str)
        client = redis.Redis.from_url(connect_url, **options)
    client.ping()
    return client
