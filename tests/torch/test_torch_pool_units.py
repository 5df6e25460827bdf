"""Unit reads look in a shared namespace's pool first (Quiver §5.2, co-operative misses).

Jobs on one data set and one Redis namespace load the same chunks in their own
orders; a chunk whose needed members another job already put must not be read
from storage again. These tests run real loaders (DataLoader workers are real
processes) against the session's real redis-server, on a packed data set, with
a system that reads whole units. The counters must add up against a reference
run of the same seed on an empty namespace: the policy is pure, so the plans --
and so the units planned -- are the same; only where the bytes came from differs.
"""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

import hotset
from hotset.storage.local import LocalStore
from hotset.storage.shared_throttle import SharedThrottledStore
from hotset.systems.registry import get_spec, parse_system
from packed_support import packed_synth


def _unit_systems() -> list[str]:
    """Brand always; Quiver too once it is registered (its design is co-operative loading)."""
    out = ["brand"]
    try:
        get_spec(parse_system("quiver")[0])
    except Exception:  # not registered yet
        return out
    return [*out, "quiver"]


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """160 small PNGs packed 8 per chunk in a seeded shuffle (20 chunks)."""
    return packed_synth(
        tmp_path_factory.mktemp("poolunits") / "ds", n=160, seed=11, chunk_size=8, shuffle_seed=0
    )


def _epoch(
    packed: Path,
    url: str,
    namespace: str,
    *,
    system: str = "brand",
    seed: int = 7,
    workers: int = 0,
    verify: bool = True,
) -> tuple[dict[str, Any], list[int]]:
    """One epoch of ``system``; its report row and the ids served, bytes checked exact."""
    data = hotset.open_dataset(packed, decode="bytes")
    truth = [(packed / k).read_bytes() for k in data.manifest.keys]
    served: list[int] = []
    with hotset.loader(
        data,
        system=system,
        cache=url,
        cache_bytes=1.0,
        batch_size=8,
        num_workers=workers,
        seed=seed,
        namespace=namespace,
        verify=verify,
    ) as loader:
        loader.set_epoch(0)
        for x, _, ids, _ in loader:
            for blob, sid in zip(x, ids.tolist(), strict=True):
                assert blob == truth[sid], f"id {sid}: bytes differ"
            served += ids.tolist()
        row = loader.report()[0]
    return row, served


def _fill_pool(packed: Path, url: str, namespace: str) -> None:
    """A first job that keeps every sample it reads: LRU with the whole data set's bytes."""
    row, served = _epoch(packed, url, namespace, system="lru", seed=1)
    assert sorted(served) == list(range(160)) and row["storage_reads"] == 160


@pytest.mark.parametrize("workers", [0, 2])
def test_units_another_job_put_are_not_read_again(
    packed: Path, redis_url: str, workers: int
) -> None:
    ref, ref_served = _epoch(packed, redis_url, f"ref{workers}", workers=workers)
    units = ref["unit_reads"] - ref["prefetch_requests"]
    assert units > 0 and ref["pool_unit_hits"] == 0  # an empty pool spares nothing
    _fill_pool(packed, redis_url, f"pool{workers}")
    row, served = _epoch(packed, redis_url, f"pool{workers}", workers=workers)
    assert served == ref_served  # same plans: the pool moves bytes, decides nothing
    assert row["unit_reads"] == 0 and row["storage_requests"] == 0 and row["storage_bytes"] == 0
    assert row["pool_unit_hits"] == units
    # every member each unit was read for (all of them: a 100% cache fills the rest)
    assert row["pool_hits"] == 160 and row["pool_bytes"] == ref["storage_bytes"]
    for key in ("requests", "exact_hits", "substitutions", "fetched_ahead", "storage_reads"):
        assert row[key] == ref[key], key  # pool hits are never counted as hits
    assert row["rebuild_reads"] == 0 and row["integrity_errors"] == 0


def test_a_unit_with_a_member_missing_or_poisoned_is_read_whole(
    packed: Path, redis_url: str, redis_server: Any
) -> None:
    ref, _ = _epoch(packed, redis_url, "ref")
    units = ref["unit_reads"] - ref["prefetch_requests"]
    _fill_pool(packed, redis_url, "holes")
    data = hotset.open_dataset(packed, decode="bytes")
    layout = data.layout
    assert layout is not None
    client = redis_server.client()
    (prefix,) = {k.rsplit(b":", 2)[0] for k in client.keys("hotset:holes@*:*:*")}

    def rkey(sid: int) -> bytes:
        return prefix + f":{sid}:{data.manifest.hashes[sid]}".encode()

    gone, bad = int(layout.members(0)[3]), int(layout.members(1)[5])
    assert client.delete(rkey(gone)) == 1
    client.set(rkey(bad), b"not the bytes")  # another writer's bytes under the right key
    row, served = _epoch(packed, redis_url, "holes")
    assert sorted(served) == list(range(160))
    assert row["unit_reads"] == 2 and row["storage_requests"] == 2  # chunks 0 and 1, whole
    assert row["storage_bytes"] == int(layout.chunk_sizes[0] + layout.chunk_sizes[1])
    assert row["pool_unit_hits"] == units - 2
    assert row["pool_hits"] == 160 - len(layout.members(0)) - len(layout.members(1))


def test_a_private_cache_never_asks_a_pool(packed: Path) -> None:
    """The embedded shared-memory cache is this job's alone: unit reads as before."""
    data = hotset.open_dataset(packed, decode="bytes")
    with hotset.loader(data, system="brand", cache=1.0, batch_size=8, seed=7) as loader:
        loader.set_epoch(0)
        for _ in loader:
            pass
        row = loader.report()[0]
    assert row["unit_reads"] > 0 and row["pool_unit_hits"] == 0 and row["pool_hits"] == 0


def _job(packed: str, url: str, system: str, seed: int, store: Any, out: str) -> None:
    """One independent training job (its own process, seed and DataLoader workers)."""
    data = hotset.open_dataset(packed, decode="bytes", retries=0).with_store(store)
    truth = [(Path(packed) / k).read_bytes() for k in data.manifest.keys]
    wrong = 0
    served: list[int] = []
    with hotset.loader(
        data,
        system=system,
        cache=url,
        cache_bytes=1.0,
        batch_size=8,
        num_workers=2,
        seed=seed,
        namespace="together",
        check_store="off",
    ) as loader:
        loader.set_epoch(0)
        for x, _, ids, _ in loader:
            wrong += sum(b != truth[s] for b, s in zip(x, ids.tolist(), strict=True))
            served += ids.tolist()
        row = loader.report()[0]
    Path(out).write_text(json.dumps({"row": row, "served": served, "wrong": wrong}))


@pytest.mark.parametrize("system", _unit_systems())
def test_concurrent_jobs_share_their_unit_reads(
    packed: Path, redis_url: str, tmp_path: Path, system: str
) -> None:
    """Two job processes at once over one modeled store: counters add up, bytes exact."""
    refs = {s: _epoch(packed, redis_url, f"ref-{s}", system=system, seed=s)[0] for s in (3, 4)}
    store = SharedThrottledStore(
        LocalStore(packed), latency_ms=5.0, max_concurrency=2, context="spawn"
    )
    ctx = multiprocessing.get_context("spawn")
    procs = {
        s: ctx.Process(
            target=_job,
            args=(str(packed), redis_url, system, s, store, str(tmp_path / f"job{s}.json")),
        )
        for s in refs
    }
    for p in procs.values():
        p.start()
    for p in procs.values():
        p.join(120)
        assert p.exitcode == 0
    got = {s: json.loads((tmp_path / f"job{s}.json").read_text()) for s in refs}
    saved = 0
    for s, ref in refs.items():
        row = got[s]["row"]
        assert got[s]["wrong"] == 0
        assert sorted(got[s]["served"]) == list(range(160))
        planned = ref["unit_reads"] - ref["prefetch_requests"]
        # every planned unit was read from storage, found whole in the pool, or left to
        # the other job that had claimed its read at that moment
        found = row["pool_unit_hits"] + row["claimed_units"]
        assert row["unit_reads"] - row["prefetch_requests"] + found == planned
        assert row["exact_hits"] == ref["exact_hits"]
        saved += row["pool_unit_hits"]
        assert row["storage_bytes"] <= ref["storage_bytes"]
    if system == "quiver":
        assert saved > 0  # co-operative loading: some chunk read by one job spared the other
