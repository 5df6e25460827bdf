"""Redis failing under the cache and under a training loop (issue "Survive faults").

Every fault is real: a second client pauses the server (``CLIENT PAUSE``) so a
reply arrives after the caller gave up, ``CONFIG SET maxmemory`` makes the server
refuse writes (OOM), and a dedicated redis-server process is killed, stopped
(SIGSTOP) and continued or restarted under a loader with real DataLoader workers.
The byte counter is checked against what is stored (``STRLEN`` of every entry),
and training against the bytes in the store.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

import hotset
import redis_support
from hotset.cachestore import CacheKey, content_hash
from hotset.cachestore.redis_store import CacheUnavailable, RedisCache
from hotset.data import SynthConfig, make_synth
from redis_support import RedisProcess, start_redis

# -- helpers ---------------------------------------------------------------------------


def _item(sample_id: int, size: int) -> tuple[CacheKey, bytes]:
    data = random.Random(sample_id * 7919 + size).randbytes(size)
    return CacheKey(sample_id, content_hash(data)), data


def _stored_bytes(client: redis.Redis, namespace: str) -> int:
    """What the namespace really holds: STRLEN of every entry, the counter left out."""
    counter = f"hotset:{namespace}:used-bytes".encode()
    keys = [k for k in client.scan_iter(match=f"hotset:{namespace}:*") if k != counter]
    return sum(int(client.strlen(k)) for k in keys)


def _counter(client: redis.Redis, namespace: str) -> int:
    return int(client.get(f"hotset:{namespace}:used-bytes") or 0)


def _drift(client: redis.Redis, namespace: str) -> int:
    return _counter(client, namespace) - _stored_bytes(client, namespace)


def _pause(client: redis.Redis, ms: int) -> None:
    """Hold every command for ``ms``: a call whose caller gives up meanwhile is dropped."""
    client.execute_command("CLIENT", "PAUSE", ms, "ALL")


# A script that keeps the server busy: commands sent meanwhile wait in their sockets
# and run when it ends, after their callers gave up (the reply is lost, the effect not).
_BUSY = """
local t = redis.call('TIME')
local start = t[1] * 1000000 + t[2]
repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] - start > tonumber(ARGV[1]) * 1000
return 1
"""


def _busy(url: str, ms: int) -> threading.Thread:
    """Keep the server busy for ``ms`` from a second client; returns once it has begun."""
    client = redis.Redis.from_url(url, socket_timeout=10)
    thread = threading.Thread(target=client.eval, args=(_BUSY, 0, ms))
    thread.start()
    time.sleep(0.05)
    return thread


@pytest.fixture
def raw(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url, socket_timeout=10)
    yield client
    client.config_set("maxmemory", 0)
    client.execute_command("CLIENT", "UNPAUSE")
    client.close()


# -- the counter -----------------------------------------------------------------------


@pytest.mark.parametrize("fault", ["late", "dropped"])
def test_lost_replies_leave_no_drift(redis_url: str, raw: redis.Redis, fault: str) -> None:
    """The issue's case: three stalls longer than the timeout lose puts' and deletes' replies.

    ``late``: the calls run after their caller gave up (a busy server); ``dropped``:
    they never run (a paused server drops a closed connection's commands).
    """
    cache = RedisCache(redis_url, namespace="lost", capacity_bytes=10_000, socket_timeout=0.2)
    items = [_item(i, 1000) for i in range(10)]
    cache.put_many(items[:2])
    landed = 0  # calls whose effect happened though their caller saw a timeout
    for round_ in range(3):
        fresh = [items[i] for i in range(2 + 2 * round_, 4 + 2 * round_)]
        for call in ("put", "delete"):
            before = _stored_bytes(raw, "lost")
            assert cache.used_bytes() == before  # and the connection is up before the stall
            stall = _busy(redis_url, 600) if fault == "late" else None
            if stall is None:
                _pause(raw, 600)
            with pytest.raises(CacheUnavailable, match="imeout"):
                if call == "put":
                    cache.put_many(fresh)
                else:
                    cache.delete_many([items[round_][0]])
            if stall is not None:
                stall.join()
            time.sleep(0.1 if stall is not None else 0.7)
            landed += _stored_bytes(raw, "lost") != before
            assert _drift(raw, "lost") == 0
    assert landed == (6 if fault == "late" else 0)
    model = {k for k in raw.scan_iter(match="hotset:lost:*") if not k.endswith(b"used-bytes")}
    # The budget is what is stored: a put of all that is free fits, one byte more does not.
    free = 10_000 - 1000 * len(model)
    assert cache.used_bytes() == 10_000 - free
    cache.put_many([_item(100 + i, 1000) for i in range(free // 1000)])
    assert cache.used_bytes() == 10_000 == _stored_bytes(raw, "lost")
    with pytest.raises(hotset.HotsetError, match="would exceed"):
        cache.put_many([_item(200, 1)])
    cache.close()


def test_a_server_refusing_writes_changes_nothing(redis_url: str, raw: redis.Redis) -> None:
    cache = RedisCache(redis_url, namespace="oom", capacity_bytes=10**6)
    cache.put_many([_item(i, 2000) for i in range(5)])
    raw.config_set("maxmemory-policy", "noeviction")
    raw.config_set("maxmemory", 1)  # every write is now refused: OOM
    with pytest.raises(CacheUnavailable, match="maxmemory"):
        cache.put_many([_item(i, 2000) for i in range(5, 10)])
    assert _drift(raw, "oom") == 0 and cache.used_bytes() == 10_000
    cache.delete_many([_item(0, 2000)[0]])  # deleting frees memory: allowed under OOM
    assert _drift(raw, "oom") == 0 and cache.used_bytes() == 8000
    raw.config_set("maxmemory", 0)
    cache.put_many([_item(i, 2000) for i in range(5, 8)])
    assert _drift(raw, "oom") == 0 and cache.used_bytes() == 14_000
    cache.close()


def test_concurrent_writers_with_faults_leave_no_drift(redis_url: str, raw: redis.Redis) -> None:
    """Four clients put and delete overlapping entries while the server keeps pausing."""
    capacity = 30_000
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer(seed: int) -> None:
        rng = random.Random(seed)
        cache = RedisCache(
            redis_url, namespace="race", capacity_bytes=capacity, socket_timeout=0.05
        )
        try:
            while not stop.is_set():
                batch = [_item(rng.randrange(40), rng.choice([500, 900])) for _ in range(3)]
                try:
                    if rng.random() < 0.6:
                        cache.put_many(batch)
                    else:
                        cache.delete_many([k for k, _ in batch])
                except CacheUnavailable:
                    pass
                except hotset.HotsetError as exc:
                    if "would exceed" not in str(exc):
                        raise
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            cache.close()

    threads = [threading.Thread(target=writer, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for _ in range(8):
        time.sleep(0.15)
        _pause(raw, 100)
    stop.set()
    for t in threads:
        t.join(timeout=10)
    assert not errors, errors
    time.sleep(0.2)  # scripts queued behind the last pause have run
    assert _drift(raw, "race") == 0
    assert 0 < _counter(raw, "race") <= capacity


# -- training through failures -------------------------------------------------------


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("faultds") / "ds"
    make_synth(path, SynthConfig(n=240, image_size=8, classes=4, seed=5), workers=1)
    return path


def _loader(dataset_dir: Path, server: RedisProcess, workers: int, namespace: str | None) -> Any:
    """A real loader with an LRU cache on ``server`` (40% of the data), and the files' bytes."""
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    truth = [data.store.read(k) for k in data.manifest.keys]
    loader = hotset.loader(
        data,
        system="lru",
        cache=_url(server),
        cache_bytes=0.4,
        batch_size=16,
        num_workers=workers,
        namespace=namespace,
    )
    return loader, truth


def _url(server: RedisProcess) -> str:
    # A frozen server costs a worker 0.3 s per call before it falls back to storage.
    return f"{server.url}?socket_timeout=0.3&socket_connect_timeout=0.3"


def _epoch(
    loader: Any, epoch: int, truth: list[bytes], *, at: int = -1, fault: Any = None
) -> dict[str, Any]:
    """One epoch, each batch checked byte for byte; ``fault()`` runs before batch ``at``."""
    loader.set_epoch(epoch)
    served: list[int] = []
    for step, (x, _, ids, _) in enumerate(loader):
        if step == at:
            fault()
        assert x == [truth[s] for s in ids.tolist()]
        served += ids.tolist()
        time.sleep(0.02)  # compute: the fault lands while batches are in flight
    assert served == loader.decisions().served
    row: dict[str, Any] = loader.report()[-1]
    assert row["finished"] and row["requests"] == len(served)
    return row


def _restart(tmp_path: Path, port: int, monkeypatch: pytest.MonkeyPatch) -> RedisProcess:
    """A fresh, empty redis-server on the port the loader already knows.

    redis-server binds with SO_REUSEADDR, so the killed server's connections
    lingering in TIME_WAIT do not keep it off the port.
    """
    monkeypatch.setattr(redis_support, "free_port", lambda bus=False: port)
    return start_redis(tmp_path)


def _until_hits(
    loader: Any, first: int, truth: list[bytes], seconds: float
) -> tuple[int, list[dict[str, Any]]]:
    """Run epochs until the cache serves every hit again (the backoff has expired).

    Returns the next epoch and the rows of those run.
    """
    deadline = time.monotonic() + seconds
    epoch, rows = first, []
    while True:
        rows.append(_epoch(loader, epoch, truth))
        epoch += 1
        if rows[-1]["exact_hits"] > 0 and rows[-1]["degraded_reads"] == 0:
            return epoch, rows
        assert time.monotonic() < deadline, loader.report()


@pytest.mark.parametrize("workers", [0, 2])
def test_training_survives_a_killed_server(
    dataset_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    server = start_redis(tmp_path)
    try:
        loader, truth = _loader(dataset_dir, server, workers, "killed")
        with loader:
            _epoch(loader, 0, truth)
            warm = _epoch(loader, 1, truth)
            assert warm["exact_hits"] > 0 and warm["degraded_reads"] == 0
            hit = _epoch(loader, 2, truth, at=1, fault=server.process.kill)
            server.process.wait(timeout=5)
            down = _epoch(loader, 3, truth)  # still down: served from storage
            assert hit["cache_errors"] > 0, hit  # noticed mid-epoch
            assert down["degraded_reads"] > 0 and down["exact_hits"] > 0, down
            server = _restart(tmp_path, server.port, monkeypatch)
            epoch, _ = _until_hits(loader, 4, truth, seconds=15)
            row = _epoch(loader, epoch, truth)
            assert row["exact_hits"] > 0 and row["cache_errors"] == 0
            client = server.client()
            assert _stored_bytes(client, loader.namespace) > 0  # the right namespace
            assert _drift(client, loader.namespace) == 0
            assert _counter(client, loader.namespace) <= loader.capacity_bytes
    finally:
        server.stop()


@pytest.mark.parametrize("workers", [0, 2])
def test_training_survives_a_frozen_server(dataset_dir: Path, tmp_path: Path, workers: int) -> None:
    server = start_redis(tmp_path)
    pid = server.process.pid

    def freeze() -> None:
        os.kill(pid, signal.SIGSTOP)
        threading.Timer(1.5, os.kill, (pid, signal.SIGCONT)).start()

    try:
        loader, truth = _loader(dataset_dir, server, workers, "frozen")
        with loader:
            _epoch(loader, 0, truth)
            _epoch(loader, 1, truth)
            start = time.monotonic()
            rows = [_epoch(loader, 2, truth, at=1, fault=freeze)]
            assert rows[0]["cache_errors"] > 0, rows[0]  # noticed mid-epoch
            assert time.monotonic() - start < 10  # timeouts of 0.3 s, not 60
            epoch, more = _until_hits(loader, 3, truth, seconds=15)
            rows += more
            assert sum(r["degraded_reads"] for r in rows) > 0, rows
            row = _epoch(loader, epoch, truth)
            assert row["exact_hits"] > 0 and row["cache_errors"] == 0
            # Replies lost in the freeze left the counter equal to what is stored.
            client = server.client()
            assert _stored_bytes(client, loader.namespace) > 0  # the right namespace
            assert _drift(client, loader.namespace) == 0
            assert _counter(client, loader.namespace) <= loader.capacity_bytes
    finally:
        os.kill(pid, signal.SIGCONT)
        server.stop()


def test_pipeline_errors_never_echo_sample_bytes(redis_url: str, raw: redis.Redis) -> None:
    """redis-py puts a failed pipelined command, arguments included, in its message."""
    from hotset.cachestore.redis_store import _describe

    payload = b"PRIVATE-SAMPLE-BYTES" * 10
    raw.config_set("maxmemory-policy", "noeviction")
    raw.config_set("maxmemory", 1)
    try:
        pipe = raw.pipeline(transaction=False)
        pipe.set("hotset:echo:1:0123456789abcdef", payload)
        with pytest.raises(redis.RedisError) as info:
            pipe.execute()
    finally:
        raw.config_set("maxmemory", 0)
    assert b"PRIVATE" in str(info.value).encode()  # what redis-py says
    told = _describe(info.value)
    assert "PRIVATE" not in told and "OutOfMemoryError" in told and "command #1" in told


@pytest.mark.parametrize("workers", [0, 2])
def test_training_survives_a_server_that_starts_evicting(
    dataset_dir: Path, tmp_path: Path, workers: int
) -> None:
    """Mid-run an operator gives the server a memory limit below what it holds and an
    evicting policy: entries, the counter, leases go behind the loader's back."""
    server = start_redis(tmp_path)
    try:
        loader, truth = _loader(dataset_dir, server, workers, None)  # private: its own budget
        with loader:
            _epoch(loader, 0, truth)
            warm = _epoch(loader, 1, truth)
            assert warm["exact_hits"] > 0 and warm["rebuild_reads"] == 0
            client = server.client()
            held = _stored_bytes(client, loader.namespace)
            limit = int(client.info("memory")["used_memory"]) - held // 2

            def evict() -> None:
                client.config_set("maxmemory-policy", "allkeys-lru")
                client.config_set("maxmemory", limit)

            rows = [_epoch(loader, 2, truth, at=1, fault=evict)]
            rows += [_epoch(loader, epoch, truth) for epoch in (3, 4)]
            assert int(client.info("stats")["evicted_keys"]) > 0
            lost = sum(r["rebuild_reads"] + r["degraded_reads"] for r in rows)
            assert lost > 0, rows  # evicted entries were read again, not served wrong
            client.config_set("maxmemory", 0)
            client.config_set("maxmemory-policy", "noeviction")
            row = _epoch(loader, 5, truth)
            assert row["exact_hits"] > 0
            assert _counter(client, loader.namespace) <= loader.capacity_bytes
    finally:
        server.stop()


def test_a_shared_namespace_survives_a_client_that_raises_its_counter(
    dataset_dir: Path, tmp_path: Path
) -> None:
    """Another client of a shared namespace adds to its byte counter (a bug, a lost
    reply of its own): the loader resyncs at its next refused put and goes on."""
    server = start_redis(tmp_path)
    try:
        loader, truth = _loader(dataset_dir, server, 2, "shared-meddled")
        with loader:
            _epoch(loader, 0, truth)
            client = server.client()
            client.incrby(f"hotset:{loader.namespace}:used-bytes", 10 * loader.capacity_bytes)
            rows = [_epoch(loader, epoch, truth) for epoch in (1, 2)]
            assert sum(r["cache_resyncs"] for r in rows) > 0, rows
            assert rows[-1]["exact_hits"] > 0
            assert _drift(client, loader.namespace) == 0
    finally:
        server.stop()
