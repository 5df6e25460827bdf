"""``hotset bench faults``: does training survive the failures the reliability report found?

Each scenario runs real loaders over a real data set on disk (and a real
redis-server this benchmark starts on loopback), injects one kind of failure
and counts what a user would care about: runs or steps that failed, samples
lost (an epoch that did not deliver every sample exactly once), bytes that
differed from the files, and what the recovery cost (retries, degraded reads,
refused puts). Nothing here is simulated; the fault suite
(``tests/faults/``) asserts the same properties once each, this repeats them.

Scenarios:

* ``storage-5%-oserror`` / ``storage-1%-timeout``: a store failing that share
  of its reads (seeded), behind the default retries;
* ``redis-killed`` / ``redis-frozen`` / ``redis-restarted``: the cache server
  killed, stopped for 1.5 s (SIGSTOP), or killed and restarted empty, at the
  second batch of a warm epoch; epochs go on until the cache serves again;
  then the byte counter is compared with the bytes stored (drift);
* ``shared-namespace``: two training processes, different seeds, one shared
  namespace of 30% of the data, three epochs each;
* ``process-group-kill``: a loader with the shared-memory cache and two
  workers, killed as a process group (SIGKILL) mid-epoch; then the bytes its
  segments leave in ``/dev/shm`` before and after the next cache starts;
* ``poisoned-entries`` / ``corrupted-file``: 20 cache entries overwritten by
  another client, and one file changed on disk; what reached training, and
  xxh3's cost per sample;
* the integrity and security review's scenarios (stale and reordered chunks, a
  planted payload, an evicting Redis, a worker killed in its write turn, a
  package directory full or read-only): :mod:`hotset.bench.faults_security`;
* the records other jobs write (probe board, job importance) poisoned: deep,
  claiming 10**30 bytes, non-finite, future-dated, 100,000 of them, each against a
  control run: :mod:`hotset.bench.faults_records`.
"""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from hotset.bench.fault_epochs import epoch_row, read_files
from hotset.bench.faults_records import run_records
from hotset.bench.faults_recovery import run_recovery
from hotset.bench.faults_security import run_security
from hotset.errors import HotsetError, IntegrityError
from hotset.options import cli
from hotset.storage.local import LocalStore

__all__ = ["run"]

_BATCH = 64


class _FlakyStore:
    """Real files; each read fails with probability ``p`` (``exc``), seeded per process."""

    def __init__(self, inner: LocalStore, p: float, exc: str, seed: int) -> None:
        self.inner = inner
        self.p = p
        self.exc = exc
        self.seed = seed
        self._rng: random.Random | None = None
        self._pid = -1
        self.faults = 0

    def read(self, key: str) -> bytes:
        if self._pid != os.getpid():
            self._rng, self._pid = random.Random(self.seed * 1_000_003 + os.getpid()), os.getpid()
        assert self._rng is not None
        if self._rng.random() < self.p:
            self.faults += 1
            if self.exc == "timeout":
                raise TimeoutError(f"read of {key} timed out (injected)")
            raise OSError(errno.EIO, "I/O error (injected)", key)
        return self.inner.read(key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_rng": None, "_pid": -1}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


def _storage(root: Path, *, exc: str, p: float, runs: int) -> dict[str, Any]:
    import hotset

    failed = lost = wrong = faults = retries = 0
    failures: list[str] = []
    manifest = hotset.open_dataset(root, decode="bytes").manifest
    files = read_files(root, manifest.keys)
    for run in range(runs):
        workers = (0, 2)[run % 2]
        store = _FlakyStore(LocalStore(root), p, exc, seed=run)
        data = hotset.open_dataset(root, decode="bytes", store=store)
        try:
            with hotset.loader(
                data, system="lru", cache=0.2, batch_size=_BATCH, num_workers=workers, seed=run
            ) as ld:
                for epoch in range(2):
                    row = epoch_row(ld, epoch, files)
                    lost += row["lost"] + row["repeated"]
                    wrong += row["wrong"]
        except Exception as err:
            failed += 1
            failures.append(f"{type(err).__name__}: {err}"[:300])
        faults += store.faults  # the main process's; workers' faults stay in the workers
        retries += getattr(data.store, "retries", 0)
    return {
        "scenario": f"storage-{p:.0%}-{exc}",
        "runs": runs,
        "failed_runs": failed,
        "samples_lost": lost,
        "wrong_samples": wrong,
        "detail": f"2 epochs x {len(files)} samples per run, workers 0 and 2 alternating; "
        f"{faults} faults injected in the main process alone"
        + (f"; failures: {failures}" if failures else ""),
    }


def _stored(client: Any, namespace: str) -> tuple[int, int]:
    """(counter, sum of STRLEN of the entries) of ``namespace``."""
    counter = f"hotset:{namespace}:used-bytes"
    keys = [k for k in client.scan_iter(match=f"hotset:{namespace}:*") if k != counter.encode()]
    return int(client.get(counter) or 0), sum(int(client.strlen(k)) for k in keys)


def _redis(root: Path, kind: str, runs: int) -> dict[str, Any]:
    import redis

    import hotset
    from hotset.bench.redis_server import local_redis

    failed = lost = wrong = degraded = errors = 0
    drifts: list[int] = []
    recover: list[float] = []
    failures: list[str] = []
    manifest = hotset.open_dataset(root, decode="bytes").manifest
    files = read_files(root, manifest.keys)
    for run in range(runs):
        with local_redis() as server:
            pid = server.process.pid

            def freeze(pid: int = pid) -> None:
                os.kill(pid, signal.SIGSTOP)
                threading.Timer(1.5, os.kill, (pid, signal.SIGCONT)).start()

            fault: Callable[[], None] = {
                "killed": server.kill,
                "frozen": freeze,
                "restarted": server.restart,
            }[kind]
            data = hotset.open_dataset(root, decode="bytes")
            url = f"{server.url}?socket_timeout=0.3&socket_connect_timeout=0.3"
            try:
                with hotset.loader(
                    data,
                    system="lru",
                    cache=url,
                    cache_bytes=0.4,
                    batch_size=_BATCH,
                    num_workers=(0, 2)[run % 2],
                    seed=run,
                ) as ld:
                    rows = [epoch_row(ld, 0, files), epoch_row(ld, 1, files)]
                    rows.append(epoch_row(ld, 2, files, fault))
                    if kind == "killed":
                        rows.append(epoch_row(ld, 3, files))  # a whole epoch with the server down
                        server.restart()
                    # Epochs until the cache serves again: a worker backs off for up to
                    # 8 s after failures, and an epoch of a small set takes milliseconds.
                    back = time.monotonic()
                    while rows[-1]["degraded_reads"] or not rows[-1]["exact_hits"]:
                        rows.append(epoch_row(ld, len(rows), files))
                        if time.monotonic() - back > 60:
                            raise HotsetError(f"redis-{kind}: the cache never served again")
                    recover.append(round(time.monotonic() - back, 1))
                    client = redis.Redis.from_url(server.url)
                    counter, stored = _stored(client, ld.namespace)
                    client.close()
                    drifts.append(counter - stored)
            except Exception as exc:
                failed += 1
                failures.append(f"{type(exc).__name__}: {exc}"[:300])
                continue
            lost += sum(r["lost"] + r["repeated"] for r in rows)
            wrong += sum(r["wrong"] for r in rows)
            degraded += sum(r["degraded_reads"] for r in rows)
            errors += sum(r["cache_errors"] for r in rows)
    return {
        "scenario": f"redis-{kind}",
        "runs": runs,
        "failed_runs": failed,
        "samples_lost": lost,
        "wrong_samples": wrong,
        "degraded_reads": degraded,
        "cache_errors": errors,
        "max_drift_bytes": max(drifts, default=0),
        "detail": "lru, 40% cache, socket_timeout 0.3 s; seconds after the fault epoch "
        f"until the cache served every hit again: {recover}"
        + (f"; failures: {failures}" if failures else ""),
    }


_SHARED_JOB = """
import json, sys
import numpy as np
import hotset
root, url, seed, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
data = hotset.open_dataset(root, decode="bytes")
files = [open(f"{root}/{k}", "rb").read() for k in data.manifest.keys]
bad, rows = 0, []
with hotset.loader(data, system="lru", cache=url, cache_bytes="30%", batch_size=64,
                   num_workers=2, seed=seed, namespace="bench-shared") as loader:
    for epoch in range(3):
        loader.set_epoch(epoch)
        seen = np.zeros(len(files), dtype=np.int64)
        for x, y, ids, w in loader:
            for blob, i in zip(x, ids.tolist()):
                seen[i] += 1
                bad += blob != files[i]
        row = loader.report()[-1]
        row["lost"] = int((seen != 1).sum())
        rows.append(row)
    namespace = loader.namespace
json.dump({"wrong": int(bad), "rows": rows, "namespace": namespace}, open(out, "w"))
"""


def _shared(root: Path, runs: int) -> dict[str, Any]:
    import redis

    from hotset.bench.redis_server import local_redis

    crashes = lost = wrong = refused = hits = 0
    peaks: list[int] = []
    drifts: list[int] = []
    import hotset

    # the jobs' cache_bytes="30%": of the samples' bytes, as the loader counts it
    capacity = int(0.3 * hotset.open_dataset(root, decode="bytes").manifest.total_bytes)
    for _ in range(runs):
        with local_redis() as server, tempfile.TemporaryDirectory() as tmp:
            outs = [Path(tmp) / f"job{seed}.json" for seed in (1, 2)]
            jobs = [
                subprocess.Popen(
                    [sys.executable, "-c", _SHARED_JOB, str(root), server.url, str(s), str(o)],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                )
                for s, o in zip((1, 2), outs, strict=True)
            ]
            client = redis.Redis.from_url(server.url)
            peak = 0
            while any(j.poll() is None for j in jobs):
                for key in client.scan_iter(match="hotset:*:used-bytes"):
                    peak = max(peak, int(client.get(key) or 0))
                time.sleep(0.02)
            namespace = ""
            for job, out in zip(jobs, outs, strict=True):
                job.communicate()
                if job.returncode != 0 or not out.exists():
                    crashes += 1
                    continue
                result = json.loads(out.read_text())
                namespace = result["namespace"]
                wrong += result["wrong"]
                lost += sum(r["lost"] for r in result["rows"])
                refused += sum(r["refused_puts"] for r in result["rows"])
                hits += sum(r["exact_hits"] for r in result["rows"])
            if namespace:
                counter, stored = _stored(client, namespace)
                drifts.append(counter - stored)
            client.close()
            peaks.append(peak)
    return {
        "scenario": "shared-namespace",
        "runs": runs,
        "failed_runs": crashes,
        "samples_lost": lost,
        "wrong_samples": wrong,
        "exact_hits": hits,
        "refused_puts": refused,
        "max_drift_bytes": max(drifts, default=0),
        "detail": f"2 jobs x 3 epochs per run, one namespace of {capacity} bytes; "
        f"peak counter {max(peaks, default=0)} bytes (budget held: "
        f"{max(peaks, default=0) <= capacity})",
    }


_VICTIM = """
import os, sys, time
import hotset
data = hotset.open_dataset(sys.argv[1], decode="bytes")
loader = hotset.loader(data, system="lru", cache="50%", batch_size=64, num_workers=2)
loader.set_epoch(0)
for step, _ in enumerate(loader):
    if step == 5:
        print(loader.cache.name, flush=True)
        time.sleep(600)
"""


def _shm_bytes(name: str) -> int:
    path = Path("/dev/shm") / name
    return path.stat().st_size if path.exists() else 0


def _group_kill(root: Path, runs: int) -> dict[str, Any]:
    from hotset.cachestore.shm import SharedMemoryCache

    left_before: list[int] = []
    left_after: list[int] = []
    for _ in range(runs):
        victim = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(_VICTIM), str(root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        assert victim.stdout is not None
        name = victim.stdout.readline().strip()
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait(timeout=30)
        victim.stdout.close()
        time.sleep(0.5)  # the workers die with their parent (PR_SET_PDEATHSIG)
        left_before.append(_shm_bytes(name))
        SharedMemoryCache(1_000_000, n_slots=16).close()  # the next start reclaims
        left_after.append(_shm_bytes(name))
    return {
        "scenario": "process-group-kill",
        "runs": runs,
        "failed_runs": 0,
        "shm_bytes_left_after_next_start": max(left_after, default=0),
        "detail": f"a 50% shm cache, 2 workers, SIGKILL to the group mid-epoch; bytes left "
        f"before the next start: {left_before}",
    }


def _integrity(root: Path) -> list[dict[str, Any]]:
    import hotset
    from hotset.cachestore.base import CacheKey
    from hotset.cachestore.shm import SharedMemoryCache
    from hotset.torch.reads import xxh3_hex

    manifest = hotset.open_dataset(root, decode="bytes").manifest
    files = read_files(root, manifest.keys)
    poisoned = list(range(5, 5 + 3 * 20, 3))
    data = hotset.open_dataset(root, decode="bytes")
    with hotset.loader(data, system="lru", cache="100%", batch_size=_BATCH) as ld:
        epoch_row(ld, 0, files)
        cache = ld.cache
        assert isinstance(cache, SharedMemoryCache)
        # another handle on the same segment writes junk under the right keys
        other = SharedMemoryCache(name=cache.name, create=False, verify=False)
        try:
            keys = [CacheKey(s, manifest.hashes[s]) for s in poisoned]
            other.delete_many(keys)
            other.put_many([(k, bytes(len(files[k.sample_id]))) for k in keys])
        finally:
            other.close()
        row = epoch_row(ld, 1, files)
    start = time.perf_counter()
    for blob in files:
        xxh3_hex(blob)
    per_sample_us = (time.perf_counter() - start) / len(files) * 1e6
    mean = sum(map(len, files)) / len(files)
    rows = [
        {
            "scenario": "poisoned-entries",
            "runs": 1,
            "failed_runs": 0,
            "samples_lost": row["lost"],
            "wrong_samples": row["wrong"],
            "integrity_errors": row["integrity_errors"],
            "detail": f"{len(poisoned)} entries of a 100% shm cache overwritten under their "
            f"keys; xxh3 costs {per_sample_us:.2f} us per sample of {mean:.0f} bytes",
        }
    ]
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "copy"
        shutil.copytree(root, copy)
        victim = copy / manifest.keys[123]
        flipped = bytearray(victim.read_bytes())
        flipped[-1] ^= 1
        victim.write_bytes(bytes(flipped))
        caught = delivered = 0
        data = hotset.open_dataset(copy, decode="bytes")
        try:
            with hotset.loader(data, system="lru", cache=0.2, batch_size=_BATCH) as ld:
                ld.set_epoch(0)
                for _x, _, ids, _ in ld:
                    delivered += sum(1 for s in ids.tolist() if s == 123)
        except IntegrityError:
            caught = 1
    rows.append(
        {
            "scenario": "corrupted-file",
            "runs": 1,
            "failed_runs": 0,
            "wrong_samples": delivered,
            "integrity_errors": caught,
            "detail": "one byte flipped in one file: an IntegrityError naming it (caught=1), "
            "0 corrupted deliveries",
        }
    )
    return rows


@dataclass(frozen=True)
class FaultsOptions:
    """How big and how often ``bench faults`` runs its scenarios; the command line is
    generated from the fields (:mod:`hotset.cli.typed_options`), so a run built in
    Python is checked alike."""

    n: int = field(default=2000, metadata=cli(type=click.IntRange(min=400)))
    runs: int = field(default=4, metadata=cli("Per scenario.", type=click.IntRange(min=1)))

    def __post_init__(self) -> None:
        """Sizes no scenario can run with fail before any work, naming the option."""
        if self.n < 400:
            raise HotsetError(f"bench faults: --n must be >= 400, got {self.n}")
        if self.runs < 1:
            raise HotsetError(f"bench faults: --runs must be >= 1, got {self.runs}")


def run(opts: FaultsOptions = FaultsOptions(), *, progress: bool = False) -> dict[str, Any]:
    """Every scenario, ``runs`` times each where it repeats; rows for the result file."""
    from hotset.data import SynthConfig, make_synth

    n, runs = opts.n, opts.runs

    def say(msg: str) -> None:
        if progress:
            print(f"[faults] {msg}", file=sys.stderr, flush=True)

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ds"
        make_synth(root, SynthConfig(n=n, image_size=8, classes=4, seed=7), workers=2)
        for exc, p in (("oserror", 0.05), ("timeout", 0.01)):
            say(f"storage {exc} {p:.0%}")
            rows.append(_storage(root, exc=exc, p=p, runs=runs))
        for kind in ("killed", "frozen", "restarted"):
            say(f"redis {kind}")
            rows.append(_redis(root, kind, runs))
        say("shared namespace")
        rows.append(_shared(root, max(1, runs // 2)))
        say("process-group kill")
        rows.append(_group_kill(root, runs))
        say("integrity")
        rows += _integrity(root)
        rows += run_security(root, runs=runs, say=say)
        rows += run_recovery(root, runs=runs, say=say)
        rows += run_records(runs=max(1, runs // 2), say=say)
    return {"n": n, "runs": runs, "table": rows}
