"""Redis namespaces with a lifecycle: private ones vanish, shared ones are joined, not cleared.

Reproduces problems 4 and 5 of the reliability report: two jobs on one
namespace (each used to clear the other's entries and budget the whole capacity
against one counter), and namespaces never deleted (a killed job's keys stayed
for good and, with ``noeviction``, refused every later job's writes).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from victim_support import Victim

import hotset
from hotset.cachestore.redis_leases import REGISTRY_KEY, list_namespaces
from hotset.data import SynthConfig, make_synth
from hotset.data.manifest import Manifest


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ns") / "ds"
    make_synth(path, SynthConfig(n=120, image_size=8, classes=3, seed=1), workers=1)
    return path


def _identity(dataset: Path) -> str:
    return hotset.open_dataset(dataset, decode="bytes").manifest.identity()


def _run(dataset: Path, url: str, namespace: str | None, **options: object) -> dict[str, int]:
    data = hotset.open_dataset(dataset, decode="bytes")
    with hotset.loader(
        data,
        system="lru",
        cache=url,
        cache_bytes="50%",
        batch_size=16,
        num_workers=2,
        namespace=namespace,
        **options,
    ) as loader:
        for epoch in range(2):
            loader.set_epoch(epoch)
            for _ in loader:
                pass
        row: dict[str, int] = loader.report()[-1]
    assert row["exact_hits"] > 0  # the cache was used
    return row


def _strlen_sum(client: Any, prefix: str) -> int:
    keys = [k for k in client.scan_iter(match=prefix + "*") if not k.endswith(b":used-bytes")]
    return sum(client.strlen(k) for k in keys)


def test_a_private_namespace_leaves_nothing_behind(redis_server: Any, dataset: Path) -> None:
    client = redis_server.client()
    client.flushall()
    for _ in range(3):  # three jobs, as a shared test server would see them
        _run(dataset, redis_server.url, None)
    # entries, counters, registry rows and leases: all gone
    assert client.dbsize() == 0, sorted(client.keys("*"))[:5]


def test_a_shared_namespace_is_named_by_key_and_content_and_kept(
    redis_server: Any, dataset: Path
) -> None:
    client = redis_server.client()
    client.flushall()
    _run(dataset, redis_server.url, "sweep")
    name = f"sweep@{_identity(dataset)}"
    entries = [k for k in client.keys("hotset:*")]
    assert entries and all(k.startswith(f"hotset:{name}:".encode()) for k in entries)
    (info,) = list_namespaces(client)
    assert (info.name, info.kind, info.live_jobs) == (name, "shared", 0)
    assert info.used_bytes == _strlen_sum(client, f"hotset:{name}:") > 0


def test_joining_a_shared_namespace_never_clears_it(redis_server: Any, dataset: Path) -> None:
    client = redis_server.client()
    client.flushall()
    _run(dataset, redis_server.url, "warm")
    before = sorted(client.keys("hotset:*"))
    data = hotset.open_dataset(dataset, decode="bytes")
    loader = hotset.loader(
        data,
        system="lru",
        cache=redis_server.url,
        cache_bytes="50%",
        batch_size=16,
        namespace="warm",
    )
    try:
        assert sorted(client.keys("hotset:*")) == before  # joined as it was
        (info,) = list_namespaces(client)
        assert info.live_jobs == 1
    finally:
        loader.close()
    assert sorted(client.keys("hotset:*")) == before  # and kept when the job ends


def test_other_content_under_the_same_key_is_another_namespace(
    redis_server: Any, dataset: Path, tmp_path: Path
) -> None:
    client = redis_server.client()
    client.flushall()
    other = tmp_path / "other"
    make_synth(other, SynthConfig(n=120, image_size=8, classes=3, seed=2), workers=1)
    _run(dataset, redis_server.url, "same-key")
    _run(other, redis_server.url, "same-key")
    names = {i.name for i in list_namespaces(client)}
    assert names == {f"same-key@{_identity(dataset)}", f"same-key@{_identity(other)}"}


@pytest.mark.parametrize("bad", ["", "a@b", "a:b", "x" * 300, 7])
def test_a_bad_sharing_key_is_refused_by_name(
    redis_server: Any, dataset: Path, bad: object
) -> None:
    data = hotset.open_dataset(dataset, decode="bytes")
    with pytest.raises(hotset.HotsetError, match="namespace"):
        hotset.loader(data, cache=redis_server.url, cache_bytes="50%", namespace=bad)


def test_identity_is_content_not_names(dataset: Path) -> None:
    manifest = hotset.open_dataset(dataset, decode="bytes").manifest
    renamed = Manifest(
        manifest.ids,
        [f"renamed/{k}" for k in manifest.keys],
        manifest.sizes,
        manifest.labels,
        manifest.hashes,
    )
    assert renamed.identity() == manifest.identity()
    changed = list(manifest.hashes)
    changed[5] = "0" * 16
    edited = Manifest(manifest.ids, manifest.keys, manifest.sizes, manifest.labels, changed)
    assert edited.identity() != manifest.identity()


# -- two jobs at once on one namespace, in real processes -------------------------------

_JOB = """
import json, sys
import numpy as np
import hotset
root, url, seed, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
data = hotset.open_dataset(root, decode="bytes")
files = [open(f"{root}/{k}", "rb").read() for k in data.manifest.keys]
n = len(files)
epochs, wrong = [], 0
with hotset.loader(data, system="lru", cache=url, cache_bytes="30%", batch_size=16,
                   num_workers=2, seed=seed, namespace="two-jobs") as loader:
    for epoch in range(3):
        loader.set_epoch(epoch)
        seen = np.zeros(n, dtype=np.int64)
        for x, y, ids, w in loader:
            for blob, i in zip(x, ids.tolist()):
                seen[i] += 1
                wrong += blob != files[i]
        epochs.append(seen.tolist())
    rows = loader.report()
json.dump({"epochs": epochs, "wrong": int(wrong), "rows": rows}, open(out, "w"))
"""


def test_two_jobs_share_one_namespace_for_three_epochs(
    redis_server: Any, dataset: Path, tmp_path: Path
) -> None:
    import subprocess
    import sys

    client = redis_server.client()
    client.flushall()
    capacity = int(0.3 * sum(p.stat().st_size for p in _sample_files(dataset)))
    outs = [tmp_path / f"job{seed}.json" for seed in (1, 2)]
    jobs = [
        subprocess.Popen(
            [sys.executable, "-c", _JOB, str(dataset), redis_server.url, str(seed), str(out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed, out in zip((1, 2), outs, strict=True)
    ]
    name = f"two-jobs@{_identity(dataset)}"
    peak = 0
    while any(job.poll() is None for job in jobs):  # the budget holds all along
        peak = max(peak, int(client.get(f"hotset:{name}:used-bytes") or 0))
        time.sleep(0.01)
    for job in jobs:
        _, err = job.communicate()
        assert job.returncode == 0, err[-3000:]
    assert 0 < peak <= capacity
    refused = 0
    for out in outs:
        result = json.loads(out.read_text())
        assert result["wrong"] == 0
        assert all(set(seen) == {1} for seen in result["epochs"])  # each sample once
        assert result["rows"][-1]["exact_hits"] > 0
        refused += sum(row["refused_puts"] for row in result["rows"])
    # the counter is exactly the bytes stored, and within the one budget
    stored = _strlen_sum(client, f"hotset:{name}:")
    assert int(client.get(f"hotset:{name}:used-bytes")) == stored <= capacity
    assert refused > 0  # the jobs did crowd each other: the refusals were counted


def _sample_files(dataset: Path) -> list[Path]:
    data = hotset.open_dataset(dataset, decode="bytes")
    return [dataset / key for key in data.manifest.keys]


# -- a killed job's namespace is collected -----------------------------------------------

_KILLED = """
import sys
import hotset
data = hotset.open_dataset(sys.argv[1], decode="bytes")
loader = hotset.loader(data, system="lru", cache=sys.argv[2], cache_bytes="50%",
                       batch_size=16, lease_ttl_s=float(sys.argv[3]))
loader.set_epoch(0)
for _ in loader:
    pass
print("ready", flush=True)
__import__("time").sleep(600)
"""


def _killed_job(victims: list[Victim], dataset: Path, url: str, ttl: float) -> None:
    code = f"import sys; sys.argv = ['x', {str(dataset)!r}, {url!r}, {str(ttl)!r}]\n" + _KILLED
    victim = Victim(code)
    victims.append(victim)
    assert victim.line() == "ready"
    victim.kill_group()


def test_a_killed_jobs_namespace_is_collected_by_the_next_loader(
    redis_server: Any, dataset: Path, victims: list[Victim]
) -> None:
    client = redis_server.client()
    client.flushall()
    _killed_job(victims, dataset, redis_server.url, ttl=1.0)
    (left,) = list_namespaces(client)
    assert left.kind == "private" and left.used_bytes > 0  # what kill -9 leaves
    time.sleep(1.2)  # the lease lapses
    data = hotset.open_dataset(dataset, decode="bytes")
    with hotset.loader(data, cache=redis_server.url, cache_bytes="50%", batch_size=16):
        # nothing run: the new loader's start alone collected the dead job's namespace
        names = {i.name for i in list_namespaces(client)}
        assert left.name not in names and len(names) == 1
    assert client.dbsize() == 0
    assert not client.exists(REGISTRY_KEY)


def test_a_live_jobs_namespace_is_never_collected(redis_server: Any, dataset: Path) -> None:
    client = redis_server.client()
    client.flushall()
    data = hotset.open_dataset(dataset, decode="bytes")
    with hotset.loader(
        data, cache=redis_server.url, cache_bytes="50%", batch_size=16, lease_ttl_s=0.3
    ) as first:
        first.set_epoch(0)
        for _ in first:
            pass
        time.sleep(0.5)  # longer than the TTL: only the renewals keep the lease alive
        with hotset.loader(data, cache=redis_server.url, cache_bytes="50%", batch_size=16):
            names = {i.name for i in list_namespaces(client)}
            assert len(names) == 2  # the second start collected nothing
        assert first.report()[-1]["storage_reads"] > 0
    assert client.dbsize() == 0


def test_many_killed_jobs_do_not_fill_a_noeviction_server(
    redis_server: Any, tmp_path: Path, victims: list[Victim]
) -> None:
    """The report's case: with ``noeviction`` and a small maxmemory, abandoned
    namespaces used to refuse the writes of every later job."""
    big = tmp_path / "big"  # jobs large next to what connections cost the server
    make_synth(big, SynthConfig(n=400, image_size=32, classes=3, seed=3), workers=1)
    client = redis_server.client()
    client.flushall()
    job_bytes = sum(p.stat().st_size for p in _sample_files(big)) // 2
    used = int(client.info("memory")["used_memory"])
    # room for the running job, one abandoned one and client buffers -- not for five
    client.config_set("maxmemory", used + int(2.5 * job_bytes) + 2**20)
    client.config_set("maxmemory-policy", "noeviction")
    try:
        for _ in range(5):
            _killed_job(victims, big, redis_server.url, ttl=0.5)
            time.sleep(0.6)
        row = _run(big, redis_server.url, None)
        assert row["cache_errors"] == 0 and row["degraded_reads"] == 0
        assert row["exact_hits"] > 0
    finally:
        client.config_set("maxmemory", 0)


def test_a_shared_namespace_serves_one_jobs_misses_from_anothers_entries(
    redis_server: Any, dataset: Path
) -> None:
    """Planned misses look in the pool first: read once across jobs (pool_hits)."""
    client = redis_server.client()
    client.flushall()
    data = hotset.open_dataset(dataset, decode="bytes")
    files = [(dataset / k).read_bytes() for k in data.manifest.keys]
    common = {"cache": redis_server.url, "batch_size": 16, "namespace": "pool"}
    with hotset.loader(data, system="lru", cache_bytes="100%", seed=1, **common) as first:
        first.set_epoch(0)
        for _ in first:
            pass  # every sample is now in the pool
    with hotset.loader(data, system="lru", cache_bytes="100%", seed=2, **common) as second:
        second.set_epoch(0)
        for x, _, ids, _ in second:
            assert x == [files[i] for i in ids.tolist()]
        row = second.report()[0]
    assert row["exact_hits"] == 0 and row["storage_reads"] == 120  # its own policy: all misses
    assert row["pool_hits"] == 120 and row["storage_requests"] == 0  # none read from storage
