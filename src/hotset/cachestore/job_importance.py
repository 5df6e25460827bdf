"""What iCACHE jobs sharing a namespace tell each other (HPCA'23 §III-D): benefit and RIV.

Each job on a shared Redis namespace publishes, at its epoch boundary, its measured
``Ratio_benefit`` and the relative importance (RIV) of every item, and reads every
job's latest entry to key its cache by their adjusted importance
(:mod:`hotset.importance.multijob`). The entries live in one hash beside the
namespace's entries, ``hotset-jobs:{<namespace>}`` (one hash slot for a cluster; a
scan of the namespace never meets it), one field per job.

A value is raw bytes, never pickled: ``HSJI`` and a version byte, then the benefit
and the publish time (two little-endian float64), the item count (uint32) and the
RIV as little-endian float32 (NaN: unknown). What the server holds is parsed as
exactly that and checked (finite benefit > 0, RIV in [0, 1] or NaN, the data set's
item count); anything else, and an entry older than ``ttl_s`` (a job that has
stopped), is ignored and counted in :attr:`SharedJobs.ignored`. A server that fails
reads as "no other job" and a publish that fails is skipped (:attr:`failures`): what
the jobs tell each other changes what the cache keeps, never what a job trains.
"""

from __future__ import annotations

import math
import struct
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.cachestore.redis_store import CacheUnavailable, RedisCache
from hotset.errors import HotsetError
from hotset.importance.multijob import JobImportance

__all__ = ["SharedJobs", "decode_entry", "encode_entry"]

_MAGIC = b"HSJI\x01"
_HEAD = struct.Struct("<ddI")  # benefit, publish time (s since the epoch), item count
#: the longest job name a field may hold
MAX_JOB = 200


def encode_entry(benefit: float, riv: npt.ArrayLike, *, at: float) -> bytes:
    """One job's entry as raw bytes (see the module docstring)."""
    values = np.asarray(riv, dtype="<f4")
    return _MAGIC + _HEAD.pack(float(benefit), float(at), len(values)) + values.tobytes()


def decode_entry(job: str, raw: object, *, n: int) -> tuple[JobImportance, float] | None:
    """(the job's snapshot, its publish time), or None when ``raw`` is not a valid
    entry for a data set of ``n`` items."""
    if not isinstance(raw, bytes) or not raw.startswith(_MAGIC):
        return None
    body = raw[len(_MAGIC) :]
    if len(body) < _HEAD.size:
        return None
    benefit, at, count = _HEAD.unpack_from(body)
    if count != n or len(body) != _HEAD.size + 4 * count or not math.isfinite(at):
        return None
    riv = np.frombuffer(body, dtype="<f4", offset=_HEAD.size).astype(np.float64)
    try:
        return JobImportance(job, benefit, riv), at
    except HotsetError:  # a benefit or an RIV out of range
        return None


class SharedJobs:
    """One job's handle on the benefits and RIVs its namespace's jobs publish."""

    def __init__(
        self,
        cache: RedisCache,
        job: str,
        *,
        ttl_s: float = 3600.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not isinstance(cache, RedisCache):
            raise HotsetError(f"jobs sharing importance need a Redis namespace, got {cache!r}")
        if not isinstance(job, str) or not 0 < len(job) <= MAX_JOB:
            raise HotsetError(f"a job name must be 1-{MAX_JOB} characters, got {job!r}")
        if not ttl_s >= 1:
            raise HotsetError(f"ttl_s must be >= 1 second, got {ttl_s!r}")
        self.cache = cache
        self.job = job
        self.ttl_s = float(ttl_s)
        self.clock = clock
        self.key = f"hotset-jobs:{{{cache.namespace}}}"
        #: calls the server failed; entries read but not valid or too old
        self.failures = 0
        self.ignored = 0

    def publish(self, benefit: float, riv: npt.ArrayLike) -> None:
        """This job's benefit and RIV, replacing its previous entry."""
        value = encode_entry(benefit, riv, at=self.clock())
        try:
            with self.cache.talking():
                pipe: Any = self.cache.client.pipeline()
                pipe.hset(self.key, self.job, value)
                pipe.expire(self.key, max(1, int(self.ttl_s)))
                pipe.execute()
        except CacheUnavailable:
            self.failures += 1

    def read(self, n: int) -> list[JobImportance]:
        """Every job's latest valid entry within ``ttl_s`` (this one's included), by name."""
        try:
            with self.cache.talking():
                raw = self.cache.client.hgetall(self.key)
        except CacheUnavailable:
            self.failures += 1
            return []
        now = self.clock()
        out: list[JobImportance] = []
        for field, value in sorted(raw.items()):
            name = field.decode("utf-8", "replace") if isinstance(field, bytes) else str(field)
            got = decode_entry(name, value, n=n)
            if got is None or now - got[1] > self.ttl_s:
                self.ignored += 1
                continue
            out.append(got[0])
        return out

    def leave(self) -> None:
        """Remove this job's entry (the loader closes): the others stop counting it."""
        try:
            with self.cache.talking():
                self.cache.client.hdel(self.key, self.job)
        except CacheUnavailable:
            self.failures += 1
