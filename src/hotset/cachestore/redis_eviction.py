"""Does the Redis server evict keys on its own? Asked once per job, warned about once.

Why it matters. hotset's policy decides what the cache holds and its byte
counter says how much (:mod:`hotset.cachestore.redis_store`). A server whose
``maxmemory-policy`` evicts (``allkeys-lru``, ``allkeys-lfu``, ``allkeys-random``)
drops entries, and may drop the counter or a job's lease, behind both of their
backs once it reaches ``maxmemory``. hotset copes -- the counter is resynced
when a put is refused, evicted entries are read again from storage (rebuild
reads), a refused put never stops training -- but every eviction costs a read
the policy planned as a hit, so a loader says so at start. The ``volatile-*``
policies evict only keys with an expiry; hotset's entries have none (only its
claims and chunk references expire), so those leave the cache whole, but
still evict hotset's coordination keys, which is worth a word too.

How. ``CONFIG GET maxmemory-policy`` (and ``maxmemory``) on every master; a
managed server (ElastiCache, Memorystore, Azure) may refuse ``CONFIG``, and
then the same fields of ``INFO memory`` are read; a server that refuses both
is not warned about (nothing is known, and training is safe either way).
``maxmemory 0`` means no limit: such a server never evicts, whatever its policy.
The check never raises: it only informs.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

__all__ = ["EVICTING_PREFIXES", "eviction_warning", "server_memory_policy", "warn_if_evicting"]

#: policies under which the server drops keys on its own when it is full
EVICTING_PREFIXES = ("allkeys-", "volatile-")
#: (where, policy) pairs already warned about in this process
_warned: set[tuple[str, str]] = set()


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _node_policy(client: Any) -> tuple[str, int] | None:
    """(policy, maxmemory) of one server, by CONFIG GET, else INFO memory; None if refused."""
    with contextlib.suppress(Exception):
        got = client.config_get("maxmemory*")
        found = {_text(k): _text(v) for k, v in dict(got).items()}
        if "maxmemory-policy" in found:
            return found["maxmemory-policy"], int(found.get("maxmemory", "0") or 0)
    with contextlib.suppress(Exception):
        info = client.info("memory")
        if "maxmemory_policy" in info:
            return _text(info["maxmemory_policy"]), int(info.get("maxmemory", 0) or 0)
    return None


def server_memory_policy(client: Any) -> list[tuple[str, int]]:
    """(policy, maxmemory) of each master ``client`` reaches that answers; [] if none does."""
    nodes = client.get_primaries() if hasattr(client, "get_primaries") else None
    if nodes is None:
        found = _node_policy(client)
        return [] if found is None else [found]
    out = []
    for node in nodes:
        connection = getattr(node, "redis_connection", None)
        found = None if connection is None else _node_policy(connection)
        if found is not None:
            out.append(found)
    return out


def eviction_warning(where: str, policies: list[tuple[str, int]]) -> str | None:
    """The warning for a server with these (policy, maxmemory) answers, or None."""
    evicting = sorted({(p, m) for p, m in policies if p.startswith(EVICTING_PREFIXES) and m > 0})
    if not evicting:
        return None
    policy, maxmemory = evicting[0]
    if policy.startswith("allkeys-"):
        what = (
            "cache entries, the namespace's byte counter and job leases may vanish under "
            "a running loader: the counter is resynced and evicted entries are read again "
            "from storage (rebuild_reads), so nothing is lost but reads"
        )
    else:
        what = (
            "hotset's entries have no expiry and stay, but its claims and chunk references "
            "(which expire) may vanish early, costing extra reads"
        )
    return (
        f"hotset: redis at {where} evicts keys when full (maxmemory-policy {policy}, "
        f"maxmemory {maxmemory} bytes): {what}. Set maxmemory-policy noeviction "
        "(redis-cli CONFIG SET maxmemory-policy noeviction) and a maxmemory above the "
        "cache budget"
    )


def warn_if_evicting(client: Any, where: str, *, stacklevel: int = 2) -> str | None:
    """Warn (a RuntimeWarning, once per server and policy in this process) if the server
    evicts; return the warning's text, or None. Never raises."""
    try:
        text = eviction_warning(where, server_memory_policy(client))
    except Exception:  # an answer of an odd shape: nothing is known, so nothing to say
        return None
    if text is None:
        return None
    key = (where, text)
    if key not in _warned:
        _warned.add(key)
        warnings.warn(text, RuntimeWarning, stacklevel=stacklevel + 1)
    return text
