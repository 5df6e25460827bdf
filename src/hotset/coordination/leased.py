"""Records that other jobs write, kept under leases and read within bounds.

Jobs that share a namespace tell each other things: Quiver's probes
(:mod:`hotset.coordination.probe_board`), iCACHE's benefit and importance
(:mod:`hotset.coordination.job_importance`). Any client of the server can write
there too, and Redis has no per-key access control, so what a job reads back is
another party's input: it may be garbage, huge, or many. This module is the one
way those records are stored and read, so that no record, and no number of
them, costs a reader more than a fixed bound:

* **A record counts only under a live lease**, kept by the server's clock (one
  sorted set beside the records, scored by when each lease ends). A publish
  writes the record and its lease in one script. A read drops, in the same
  script, the records whose lease ended, whose lease ends further ahead than any
  job leases (``ttl_s`` from now: a future-dated lease is forged), and, a bounded
  step per read (:data:`BUDGET` fields, a cursor kept on the server), records that have no
  lease at all (written around the scripts), so nothing planted stays forever.
  A job's lease is its reader's ``ttl_s``: the jobs of a namespace lease alike.
* **A read returns at most ``max_read`` records**, those whose leases end last
  (the jobs that renewed most recently), each no larger than ``max_bytes`` (or
  exactly ``exact_bytes``): a record of another size is dropped on the server
  and never shipped. At most :data:`BUDGET` leases are examined a read.
* A key of another type than the one expected (a client wrote a string where
  the records' hash goes) is deleted, not an error that would stop every read.

What each record means, and how its fields are checked, is the caller's; a
record the caller finds malformed is dropped with :meth:`LeasedRecords.drop`
(only if it is still the value read: a job that re-published meanwhile keeps
its new record). Nothing is ever unpickled or evaluated. Server failures raise
:class:`~hotset.cachestore.redis_store.CacheUnavailable` from the cache's
``talking()``; the callers read them as "no other job".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hotset.coordination.namespace import SharedNamespace
from hotset.errors import HotsetError

__all__ = ["LeasedRecords", "ReadBack"]

#: leases examined and unleased records swept per read, at most (bounds a read's work)
BUDGET = 1024

# KEYS: records (hash), leases (zset). ARGV: field, value, ttl_s.
_PUBLISH = """
for i, want in ipairs({'hash', 'zset'}) do
  local t = redis.call('TYPE', KEYS[i])['ok']
  if t ~= 'none' and t ~= want then redis.call('DEL', KEYS[i]) end
end
local now = tonumber(redis.call('TIME')[1])
local ttl = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
redis.call('EXPIRE', KEYS[1], 2 * ttl)
redis.call('EXPIRE', KEYS[2], 2 * ttl)
return 1
"""

# KEYS: records, leases, sweep cursor. ARGV: horizon_s, max_read, max_bytes, exact_bytes
# (0: any size up to max_bytes), budget. Returns {now, aged, dropped, {field, value, ...}}.
_READ = """
for i, want in ipairs({'hash', 'zset', 'string'}) do
  local t = redis.call('TYPE', KEYS[i])['ok']
  if t ~= 'none' and t ~= want then redis.call('DEL', KEYS[i]) end
end
local now = tonumber(redis.call('TIME')[1])
local horizon = now + tonumber(ARGV[1])
local max_read, max_bytes = tonumber(ARGV[2]), tonumber(ARGV[3])
local exact, budget = tonumber(ARGV[4]), tonumber(ARGV[5])
local aged, dropped = 0, 0
local function drop(field)
  redis.call('HDEL', KEYS[1], field)
  redis.call('ZREM', KEYS[2], field)
end
for _, range in ipairs({{'-inf', '(' .. now}, {'(' .. horizon, '+inf'}}) do
  for _, field in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], range[1], range[2],
                                    'LIMIT', 0, budget)) do
    drop(field)
    aged = aged + 1
  end
end
local cursor = redis.call('GET', KEYS[3])
if (not cursor) or #cursor > 20 or not string.match(cursor, '^%d+$') then cursor = '0' end
local scan = redis.call('HSCAN', KEYS[1], cursor, 'COUNT', budget)
for i = 1, #scan[2], 2 do
  if not redis.call('ZSCORE', KEYS[2], scan[2][i]) then
    redis.call('HDEL', KEYS[1], scan[2][i])
    aged = aged + 1
  end
end
redis.call('SET', KEYS[3], scan[1], 'EX', 3600)
local out, kept, seen = {}, 0, 0
while kept < max_read and seen < budget do
  local page = redis.call('ZREVRANGEBYSCORE', KEYS[2], horizon, now,
                          'LIMIT', kept, max_read - kept)
  if #page == 0 then break end
  for _, field in ipairs(page) do
    seen = seen + 1
    local size = redis.call('HSTRLEN', KEYS[1], field)
    if size == 0 or size > max_bytes or (exact > 0 and size ~= exact) then
      drop(field)
      dropped = dropped + 1
    else
      kept = kept + 1
      table.insert(out, field)
      table.insert(out, redis.call('HGET', KEYS[1], field))
    end
  end
end
return {now, aged, dropped, out}
"""

# KEYS: records, leases. ARGV: field, value. Drops the record only if it is still ``value``.
_DROP = """
if redis.call('TYPE', KEYS[1])['ok'] == 'hash' and redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
  return 1
end
return 0
"""


@dataclass(frozen=True)
class ReadBack:
    """One read: the server's clock (whole seconds) and the records (field, value) as the
    server holds them, latest lease first."""

    now: int
    records: list[tuple[bytes, bytes]]


class LeasedRecords:
    """A hash of records (one field per job) whose leases a sorted set beside it keeps."""

    def __init__(
        self,
        cache: SharedNamespace,
        keys: Sequence[str],
        *,
        ttl_s: float,
        max_read: int,
        max_bytes: int,
    ) -> None:
        if len(keys) != 3:
            raise HotsetError(f"leased records need 3 keys (records, leases, sweep), got {keys}")
        if not ttl_s >= 1:
            raise HotsetError(f"ttl_s must be >= 1 second, got {ttl_s!r}")
        if max_read < 1 or max_bytes < 1:
            raise HotsetError(f"bad bounds: max_read={max_read}, max_bytes={max_bytes}")
        self.cache = cache
        self.keys = list(keys)
        self.ttl_s = float(ttl_s)
        self.max_read = int(max_read)
        self.max_bytes = int(max_bytes)
        #: records removed because their lease ended, was forged ahead, or never existed
        self.aged = 0
        #: records removed unread because their size cannot be a record's
        self.dropped = 0
        client = cache.client
        self._publish: Any = client.register_script(_PUBLISH)
        self._read: Any = client.register_script(_READ)
        self._drop: Any = client.register_script(_DROP)

    @property
    def lease_s(self) -> int:
        """A lease's length in whole seconds (the server's clock counts seconds)."""
        return max(1, int(self.ttl_s))

    def publish(self, field: str, value: bytes | str) -> None:
        """Write ``field``'s record, its lease renewed for ``ttl_s`` from now."""
        if len(value) > self.max_bytes:
            raise HotsetError(f"a record of {len(value)} bytes exceeds {self.max_bytes}")
        with self.cache.talking():
            self._publish(keys=self.keys[:2], args=[field, value, self.lease_s])

    def read(self, *, exact_bytes: int = 0) -> ReadBack:
        """The live records, at most ``max_read``, latest lease first (see the module);
        ``exact_bytes`` > 0: only records of exactly that size (the others are dropped)."""
        # a lease ends at most ttl_s (whole seconds) after its publish: one second of slack
        args = [self.lease_s + 1, self.max_read, self.max_bytes, int(exact_bytes), BUDGET]
        with self.cache.talking():
            now, aged, dropped, flat = self._read(keys=self.keys, args=args)
        self.aged += int(aged)
        self.dropped += int(dropped)
        pairs = zip(flat[::2], flat[1::2], strict=True)
        records = [(f, v) for f, v in pairs if isinstance(f, bytes) and isinstance(v, bytes)]
        return ReadBack(int(now), records)

    def drop(self, field: bytes, value: bytes) -> bool:
        """Remove a record the caller found malformed, unless it changed since read;
        whether it was removed."""
        with self.cache.talking():
            return bool(int(self._drop(keys=self.keys[:2], args=[field, value])))

    def withdraw(self, field: str) -> None:
        """Remove ``field``'s record and lease now (its job leaves)."""
        with self.cache.talking():
            pipe = self.cache.client.pipeline(transaction=False)
            pipe.hdel(self.keys[0], field)
            pipe.zrem(self.keys[1], field)
            pipe.execute()
