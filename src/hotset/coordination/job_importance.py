"""What iCACHE jobs sharing a namespace tell each other (HPCA'23 §III-D): benefit and RIV.

Each job on a shared Redis namespace publishes, at its epoch boundary, its measured
``Ratio_benefit`` and the relative importance (RIV) of every item, and reads the
jobs' latest entries to key its cache by their adjusted importance
(:mod:`hotset.importance.multijob`). The entries live in one hash beside the
namespace's entries, ``hotset-jobs:{<namespace>}`` (one hash slot for a cluster; a
scan of the namespace never meets it), one field per job, each under a lease kept by
the server's clock (``:leases`` beside it, :mod:`hotset.coordination.leased`): an entry
counts for ``ttl_s`` after its job last published.

A value is raw bytes, never pickled: ``HSJI`` and a version byte, then the benefit
and the publish time (two little-endian float64), the item count (uint32) and the
RIV as little-endian float32 (NaN: unknown). Any client of the server can write
here, so a read is bounded: at most :data:`MAX_JOBS` entries, those renewed last,
each exactly the size an entry for the data set has (any other is dropped on the
server, never shipped); entries whose lease ended, that have none, or whose lease
ends further ahead than a lease can are removed. What is read is checked field by
field (a benefit finite and in (0, :data:`MAX_BENEFIT`], a publish time no later
than the server's clock plus :data:`MAX_SKEW_S` and no older than ``ttl_s``, RIV in
[0, 1] or NaN, the data set's item count); anything else is skipped, counted in
:attr:`SharedJobs.ignored` and removed. A server that fails reads as "no other job"
and a publish that fails is skipped (:attr:`failures`). What the jobs tell each
other keys what the cache keeps; which ids a job trains stays its own
(``docs/systems/icache.md``, ``docs/distributed.md``).
"""

from __future__ import annotations

import math
import struct
import time
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from hotset.cachestore.redis_store import CacheUnavailable
from hotset.coordination.leased import LeasedRecords
from hotset.coordination.namespace import SharedNamespace
from hotset.errors import HotsetError
from hotset.importance.multijob import MAX_BENEFIT, MAX_JOBS, JobImportance

__all__ = ["MAX_JOBS", "SharedJobs", "decode_entry", "encode_entry", "entry_bytes"]

_MAGIC = b"HSJI\x01"
_HEAD = struct.Struct("<ddI")  # benefit, publish time (s since the epoch), item count
#: the longest job name a field may hold
MAX_JOB = 200
#: how far ahead of the server's clock a publish time may be (the writer's clock)
MAX_SKEW_S = 300.0
#: the largest entry: 2**28 items (a 1 GiB entry; ImageNet-1k's is 5 MB)
_MAX_ITEMS = 2**28


def entry_bytes(n: int) -> int:
    """The size of an entry for a data set of ``n`` items."""
    return len(_MAGIC) + _HEAD.size + 4 * int(n)


def encode_entry(benefit: float, riv: npt.ArrayLike, *, at: float) -> bytes:
    """One job's entry as raw bytes (see the module docstring)."""
    values = np.asarray(riv, dtype="<f4")
    return _MAGIC + _HEAD.pack(float(benefit), float(at), len(values)) + values.tobytes()


def decode_entry(job: str, raw: object, *, n: int) -> tuple[JobImportance, float] | None:
    """(the job's snapshot, its publish time), or None when ``raw`` is not a valid
    entry for a data set of ``n`` items (a benefit above :data:`MAX_BENEFIT` is none)."""
    if not isinstance(raw, bytes) or not raw.startswith(_MAGIC) or len(raw) != entry_bytes(n):
        return None
    benefit, at, count = _HEAD.unpack_from(raw, len(_MAGIC))
    if count != n or not math.isfinite(at) or not benefit <= MAX_BENEFIT:
        return None
    riv = np.frombuffer(raw, dtype="<f4", offset=len(_MAGIC) + _HEAD.size).astype(np.float64)
    try:
        return JobImportance(job, benefit, riv), at
    except HotsetError:  # a benefit or an RIV out of range
        return None


class SharedJobs:
    """One job's handle on the benefits and RIVs its namespace's jobs publish."""

    def __init__(
        self,
        cache: SharedNamespace,
        job: str,
        *,
        ttl_s: float = 3600.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not isinstance(cache, SharedNamespace):
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
        self.entries = LeasedRecords(
            cache,
            [self.key, f"{self.key}:leases", f"{self.key}:sweep"],
            ttl_s=ttl_s,
            max_read=MAX_JOBS,
            max_bytes=entry_bytes(_MAX_ITEMS),
        )
        #: calls the server failed; entries read but not valid or too old (skipped)
        self.failures = 0
        self.ignored = 0

    def stats(self) -> dict[str, int]:
        """What this job skipped so far: failed calls, invalid entries (removed, read or
        not), entries aged out unread (lease ended, none, or forged ahead)."""
        return {
            "jobs_failures": self.failures,
            "jobs_ignored": self.ignored + self.entries.dropped,
            "jobs_aged": self.entries.aged,
        }

    def publish(self, benefit: float, riv: npt.ArrayLike) -> None:
        """This job's benefit (at most :data:`MAX_BENEFIT`) and RIV, replacing its
        previous entry."""
        value = encode_entry(min(float(benefit), MAX_BENEFIT), riv, at=self.clock())
        try:
            self.entries.publish(self.job, value)
        except CacheUnavailable:
            self.failures += 1

    def read(self, n: int) -> list[JobImportance]:
        """The latest valid entries within ``ttl_s`` (this one's included), at most
        :data:`MAX_JOBS`, by name."""
        try:
            got = self.entries.read(exact_bytes=entry_bytes(n))
        except CacheUnavailable:
            self.failures += 1
            return []
        out: list[JobImportance] = []
        for field, value in got.records:
            name = _name(field)
            entry = None if name is None else decode_entry(name, value, n=n)
            at = math.nan if entry is None else entry[1]
            if entry is None or not got.now - self.ttl_s <= at <= got.now + MAX_SKEW_S:
                self.ignored += 1
                self._remove(field, value)
                continue
            out.append(entry[0])
        return sorted(out, key=lambda j: j.job)

    def _remove(self, field: bytes, value: bytes) -> None:
        try:
            self.entries.drop(field, value)
        except CacheUnavailable:
            self.failures += 1

    def leave(self) -> None:
        """Remove this job's entry (the loader closes): the others stop counting it."""
        try:
            self.entries.withdraw(self.job)
        except CacheUnavailable:
            self.failures += 1


def _name(field: bytes) -> str | None:
    try:
        name = field.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return name if 0 < len(name) <= MAX_JOB else None
