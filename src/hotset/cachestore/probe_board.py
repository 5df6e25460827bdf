"""The probes a shared namespace's jobs published (Quiver FAST'20 §5.3), with leases.

The paper's cache manager collects every job's mini-batch times with and without
the cache and places data sets by benefit. Here there is no manager: each job of
a namespace publishes its probe (:func:`~hotset.policies.quiver_placement.record_of`:
job id, data set, ``t_miss``, ``t_hit``, GPUs, the data set's bytes and chunk
bytes -- plain numbers and strings, stored as JSON) and every job reads all of
them to apply the same placement function. A record carries a lease: it counts
only until ``ttl_s`` after its job last published, so a job that died without
withdrawing stops counting then, and the others' next placement gives its space
away (a live job re-publishes every ``ttl_s / 3``).

The keys live beside the namespace's entries, not under its prefix
(``hotset-probe:{<namespace>}:records`` and ``:leases``, one hash slot for a
cluster), so scans of the namespace never meet them. Leases are scored by the
server's clock (``TIME`` in the scripts), so jobs on hosts whose clocks disagree
still agree on what expired. What the server holds is parsed as JSON with no
constants beyond numbers (no NaN, no Infinity) and checked field by field
(:func:`~hotset.policies.quiver_placement.from_record`); anything else is skipped
and counted (``garbled``), never evaluated. A server that fails reads as an empty
board, and a publish that fails is skipped: the job then places by its own probe
alone, which changes what it caches, never what it trains.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from hotset.cachestore.redis_store import CacheUnavailable, RedisCache
from hotset.errors import HotsetError

#: a record's check: raises HotsetError on a record that is not one (the policy's own:
#: :func:`hotset.policies.quiver_placement.from_record`); the default needs a job id
Check = Callable[[Mapping[str, Any]], object]

__all__ = ["ProbeBoard", "parse_record"]

#: the largest record read back (a real one is about 200 bytes)
MAX_RECORD_BYTES = 4096

# KEYS: records, leases. ARGV: job, record, ttl_s. A lease ends ttl_s after this publish.
_PUBLISH = """
local now = tonumber(redis.call('TIME')[1])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
redis.call('EXPIRE', KEYS[1], 2 * tonumber(ARGV[3]))
redis.call('EXPIRE', KEYS[2], 2 * tonumber(ARGV[3]))
return 1
"""

# KEYS: records, leases. Drops the records whose lease ended; returns the others, flat.
_READ = """
local now = tonumber(redis.call('TIME')[1])
local dead = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. now)
for _, job in ipairs(dead) do
  redis.call('HDEL', KEYS[1], job)
  redis.call('ZREM', KEYS[2], job)
end
return redis.call('HGETALL', KEYS[1])
"""


class ProbeBoard:
    """One job's handle on its namespace's probe board."""

    def __init__(
        self, cache: RedisCache, *, ttl_s: float = 600.0, check: Check | None = None
    ) -> None:
        if not isinstance(cache, RedisCache):
            raise HotsetError(f"a probe board needs a Redis namespace, got {cache!r}")
        if not ttl_s >= 1:
            raise HotsetError(f"ttl_s must be >= 1 second, got {ttl_s!r}")
        self.cache = cache
        self.ttl_s = float(ttl_s)
        self.check: Check = _has_job if check is None else check
        tag = f"hotset-probe:{{{cache.namespace}}}"
        self.keys = [f"{tag}:records", f"{tag}:leases"]
        #: calls the server failed (a failed read reads as an empty board)
        self.failures = 0
        #: records read back that were not a probe record (skipped)
        self.garbled = 0
        self._publish: Any = cache.client.register_script(_PUBLISH)
        self._read: Any = cache.client.register_script(_READ)

    def publish(self, record: dict[str, str | int | float]) -> None:
        """Put this job's record on the board, its lease renewed for ``ttl_s``."""
        self.check(record)  # only a well-formed record goes out
        body = json.dumps(record, sort_keys=True, allow_nan=False)
        try:
            with self.cache.talking():
                self._publish(keys=self.keys, args=[record["job"], body, max(1, int(self.ttl_s))])
        except CacheUnavailable:
            self.failures += 1

    def read(self) -> list[dict[str, Any]]:
        """Every record whose lease has not ended, ordered by job id."""
        try:
            with self.cache.talking():
                flat = self._read(keys=self.keys, args=[])
        except CacheUnavailable:
            self.failures += 1
            return []
        records = []
        for job, raw in zip(flat[::2], flat[1::2], strict=True):
            record = parse_record(raw, self.check)
            if record is None or record["job"] != _text(job):
                self.garbled += 1
                continue
            records.append(record)
        return sorted(records, key=lambda r: str(r["job"]))

    def withdraw(self, job: str) -> None:
        """The job leaves: its record stops counting now, not at its lease's end."""
        try:
            with self.cache.talking():
                client = self.cache.client
                client.hdel(self.keys[0], job)
                client.zrem(self.keys[1], job)
        except CacheUnavailable:
            self.failures += 1


def _text(raw: object) -> str | None:
    if isinstance(raw, bytes):
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return raw if isinstance(raw, str) else None


def _no_constant(name: str) -> Any:
    raise ValueError(f"not a number: {name}")


def _has_job(record: Mapping[str, Any]) -> object:
    if not isinstance(record.get("job"), str):
        raise HotsetError(f"a probe record needs a job id, got {dict(record)!r}")
    return None


def parse_record(raw: object, check: Check = _has_job) -> dict[str, Any] | None:
    """A record the server holds: a JSON object ``check`` accepts, else None (nothing
    is evaluated; NaN and Infinity are refused)."""
    text = _text(raw)
    if text is None or len(text) > MAX_RECORD_BYTES:
        return None
    try:
        record = json.loads(text, parse_constant=_no_constant)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    try:
        check(record)
    except HotsetError:
        return None
    return record
