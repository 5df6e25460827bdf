"""The probes a shared namespace's jobs published (Quiver FAST'20 §5.3), with leases.

The paper's cache manager collects every job's mini-batch times with and without
the cache and places data sets by benefit. Here there is no manager: each job of
a namespace publishes its probe (:func:`~hotset.policies.quiver.placement.record_of`:
job id, data set, ``t_miss``, ``t_hit``, GPUs, the data set's bytes and chunk
bytes -- plain numbers and strings, stored as JSON) and every job reads them to
apply the same placement function. A record carries a lease: it counts only until
``ttl_s`` after its job last published, so a job that died without withdrawing
stops counting then, and the others' next placement gives its space away (a live
job re-publishes every ``ttl_s / 3``).

The keys live beside the namespace's entries, not under its prefix
(``hotset-probe:{<namespace>}:records``, ``:leases`` and ``:sweep``, one hash slot for
a cluster), so scans of the namespace never meet them. Leases are scored by the
server's clock (``TIME`` in the scripts), so jobs on hosts whose clocks disagree
still agree on what expired.

Any client of the server can write here, so a read is bounded
(:mod:`hotset.coordination.leased`): at most :data:`MAX_RECORDS` records, those
renewed last, each at most :data:`MAX_RECORD_BYTES`; records whose lease ended,
that have none, or whose lease ends further ahead than a lease can are removed
(``aged``). A record is parsed as JSON only within :data:`MAX_DEPTH` levels of
nesting (:mod:`hotset.cachestore.bounded_json`: no recursion, no NaN or Infinity)
and checked field by field (:func:`~hotset.policies.quiver.placement.from_record`:
finite times, sizes in range, the job id it is filed under); anything else is
skipped, counted (``garbled``) and removed, never evaluated and never raised. A
server that fails reads as an empty board, and a publish that fails is skipped:
the job then places by its own probe alone, which changes what it caches, never
what it trains. What another job can change through this board, and what it
cannot: ``docs/distributed.md``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from hotset.cachestore.bounded_json import load_json
from hotset.cachestore.redis_store import CacheUnavailable
from hotset.coordination.leased import LeasedRecords
from hotset.coordination.namespace import SharedNamespace
from hotset.errors import HotsetError

#: a record's check: raises HotsetError on a record that is not one (the policy's own:
#: :func:`hotset.policies.quiver.placement.from_record`); the default needs a job id
Check = Callable[[Mapping[str, Any]], object]

__all__ = ["MAX_RECORDS", "MAX_RECORD_BYTES", "ProbeBoard", "parse_record"]

#: the largest record read back (a real one is about 200 bytes)
MAX_RECORD_BYTES = 4096
#: how deep a record may nest (a record is one flat object: 1)
MAX_DEPTH = 2
#: the most records one read returns: a namespace's jobs (a rank is a job on the board)
MAX_RECORDS = 64


class ProbeBoard:
    """One job's handle on its namespace's probe board."""

    def __init__(
        self, cache: SharedNamespace, *, ttl_s: float = 600.0, check: Check | None = None
    ) -> None:
        if not isinstance(cache, SharedNamespace):
            raise HotsetError(f"a probe board needs a Redis namespace, got {cache!r}")
        if not ttl_s >= 1:
            raise HotsetError(f"ttl_s must be >= 1 second, got {ttl_s!r}")
        self.cache = cache
        self.ttl_s = float(ttl_s)
        self.check: Check = _has_job if check is None else check
        tag = f"hotset-probe:{{{cache.namespace}}}"
        self.keys = [f"{tag}:records", f"{tag}:leases", f"{tag}:sweep"]
        self.records = LeasedRecords(
            cache, self.keys, ttl_s=ttl_s, max_read=MAX_RECORDS, max_bytes=MAX_RECORD_BYTES
        )
        #: calls the server failed (a failed read reads as an empty board)
        self.failures = 0
        #: records read back that were not a probe record (skipped and removed); those
        #: too large to be one are removed unread (``records.dropped``)
        self.garbled = 0

    @property
    def aged(self) -> int:
        """Records removed unread: lease ended, none, or forged ahead (see the module)."""
        return self.records.aged

    def stats(self) -> dict[str, int]:
        """What the board skipped so far, for a report: failed calls, garbled records
        (including those too large to be one), records aged out unread."""
        return {
            "board_failures": self.failures,
            "board_garbled": self.garbled + self.records.dropped,
            "board_aged": self.records.aged,
        }

    def publish(self, record: dict[str, str | int | float]) -> None:
        """Put this job's record on the board, its lease renewed for ``ttl_s``."""
        self.check(record)  # only a well-formed record goes out
        body = json.dumps(record, sort_keys=True, allow_nan=False)
        try:
            self.records.publish(str(record["job"]), body)
        except CacheUnavailable:
            self.failures += 1

    def read(self) -> list[dict[str, Any]]:
        """The live records (at most :data:`MAX_RECORDS`), ordered by job id."""
        try:
            got = self.records.read()
        except CacheUnavailable:
            self.failures += 1
            return []
        records = []
        for job, raw in got.records:
            record = parse_record(raw, self.check)
            if record is None or record["job"] != _text(job):
                self.garbled += 1
                self._remove(job, raw)
                continue
            records.append(record)
        return sorted(records, key=lambda r: str(r["job"]))

    def _remove(self, job: bytes, raw: bytes) -> None:
        try:
            self.records.drop(job, raw)
        except CacheUnavailable:
            self.failures += 1

    def withdraw(self, job: str) -> None:
        """The job leaves: its record stops counting now, not at its lease's end."""
        try:
            self.records.withdraw(job)
        except CacheUnavailable:
            self.failures += 1


def _text(raw: object) -> str | None:
    if isinstance(raw, bytes):
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return raw if isinstance(raw, str) else None


def _has_job(record: Mapping[str, Any]) -> object:
    if not isinstance(record.get("job"), str):
        raise HotsetError(f"a probe record needs a job id, got {dict(record)!r}")
    return None


def parse_record(raw: object, check: Check = _has_job) -> dict[str, Any] | None:
    """A record the server holds: a JSON object within :data:`MAX_RECORD_BYTES` and
    :data:`MAX_DEPTH` that ``check`` accepts, else None (nothing is evaluated; NaN and
    Infinity are refused; nothing raises)."""
    record = load_json(raw, max_bytes=MAX_RECORD_BYTES, max_depth=MAX_DEPTH)
    if not isinstance(record, dict):
        return None
    try:
        check(record)
    except (HotsetError, TypeError, ValueError, OverflowError):
        return None
    return record
