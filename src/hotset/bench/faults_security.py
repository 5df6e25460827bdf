"""Fault scenarios of the integrity and security review: wrong bytes, code, crashes, hangs.

Each is a failure a hostile but fair reviewer produced on a real loader, run
again here and counted (nothing simulated; ``tests/faults/`` asserts each once):

* ``chunks-reordered`` / ``chunks-stale``: a packed data set whose
  ``chunks.json`` lists every chunk's ids reversed, and new data of the same
  sizes copied over a packed directory (its chunks now stale); quiver and brand
  with ``verify=True``: wrong samples delivered, and whether a clear error
  stopped the run instead;
* ``planted-payload``: another client of the Redis server writes a pickle that
  would create a file when unpickled, under every key of a loader's namespace,
  while a user's own Dataset trains from it (verify on and off): code run;
* ``redis-evicting``: a server with ``maxmemory 3mb`` and ``allkeys-lru`` under a
  cache budget above that (lru and shade): failed runs, wrong and lost samples;
* ``worker-killed-in-write-turn``: a DataLoader worker SIGKILLed while it holds
  the cache-write turn (its put waits on a paused server): hangs, whether the
  error names the dead worker and whether the loader closes and runs again;
* ``package-dir-full`` / ``package-dir-read-only``: iCACHE's package directory
  on a small tmpfs filled (and kept full) by another process, or remounted
  read-only, after the warm-up: failed runs, failed package writes (a run with
  none tested nothing and counts as failed), and the package members read singly
  instead. These mount a tmpfs and need root; elsewhere the row says it did not run.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from hotset.bench.fault_epochs import epoch_row, read_files
from hotset.errors import HotsetError

__all__ = ["run_security"]

_BATCH = 32


# -- packed sets ------------------------------------------------------------------------


def _packed_epochs(root: Path, system: str, files: list[bytes], epochs: int) -> dict[str, Any]:
    """Train ``system`` with verify on; wrong deliveries, and the error that stopped it."""
    import hotset

    wrong = delivered = 0
    stopped = ""
    try:
        data = hotset.open_dataset(root, decode="bytes")
        with hotset.loader(
            data, system=system, cache=0.2, batch_size=_BATCH, num_workers=2, seed=0
        ) as ld:
            for epoch in range(epochs):
                row = epoch_row(ld, epoch, files)
                wrong += row["wrong"]
                delivered += row["requests"]
    except HotsetError as exc:
        stopped = f"{type(exc).__name__}: {exc}"[:160]
    return {"wrong": wrong, "delivered": delivered, "stopped": stopped}


def _reverse_chunk_ids(root: Path) -> None:
    path = root / "chunks.json"
    doc = json.loads(path.read_text())
    for chunk in doc["chunks"]:
        chunk["ids"] = chunk["ids"][::-1]
    path.write_text(json.dumps(doc))


def _chunk_rows(tmp: Path, n: int) -> list[dict[str, Any]]:
    from hotset.data import SynthConfig, make_synth, pack_dataset

    rows = []
    for scenario in ("chunks-reordered", "chunks-stale"):
        root = tmp / scenario
        make_synth(root, SynthConfig(n=n, image_size=8, classes=4, seed=3, format="npy"))
        pack_dataset(root, chunk_size=64, shuffle_seed=None)  # id order, as the committed rows
        if scenario == "chunks-reordered":
            _reverse_chunk_ids(root)
        else:  # new data of the same sizes copied over the packed directory
            fresh = tmp / "fresh"
            make_synth(fresh, SynthConfig(n=n, image_size=8, classes=4, seed=4, format="npy"))
            shutil.copytree(fresh, root, dirs_exist_ok=True, ignore=_keep_chunks)
        files = read_files(root, _manifest_keys(root))
        runs = {system: _packed_epochs(root, system, files, 2) for system in ("quiver", "brand")}
        rows.append(
            {
                "scenario": scenario,
                "runs": len(runs),
                "failed_runs": 0,
                "wrong_samples": sum(r["wrong"] for r in runs.values()),
                "stopped_with_error": sum(bool(r["stopped"]) for r in runs.values()),
                "detail": f"{n} npy samples packed 64 per chunk, verify=True, 2 workers; "
                + "; ".join(
                    f"{s}: {r['delivered']} delivered, {r['stopped'] or 'ran'}"
                    for s, r in runs.items()
                ),
            }
        )
    return rows


def _keep_chunks(directory: str, names: list[str]) -> list[str]:
    """copytree's ignore: the packed chunks and their layout stay as they were (stale)."""
    return [name for name in names if name in ("chunks", "chunks.json")]


def _manifest_keys(root: Path) -> list[str]:
    """The sample keys, from the manifest alone (a stale chunk layout is refused at open)."""
    from hotset.data.manifest import Manifest

    return list(Manifest.load(root).keys)


# -- a planted payload ------------------------------------------------------------------

_PAYLOAD_MARK = "hotset-payload-ran"


class _Payload:
    """Unpickling this would create a file: the proof that code ran."""

    def __init__(self, mark: str) -> None:
        self.mark = mark

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.mark, "w"))


class _Items:
    """A user's map-style Dataset: (array, label) items, as most Datasets return."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[Any, int]:
        import numpy as np

        return np.full((3, 8, 8), i % 251, dtype=np.uint8), i % 4


def _plant(client: Any, namespace: str, payload: bytes) -> int:
    """Overwrite every entry of ``namespace`` (and the unhashed keys) with ``payload``."""
    planted = 0
    for key in list(client.scan_iter(match=f"hotset:{namespace}:*")):
        name = key.decode()
        if name.endswith(":used-bytes") or name.count(":") != 3:
            continue
        client.set(key, payload)
        planted += 1
    return planted


def _payload_row(runs: int) -> dict[str, Any]:
    import pickle  # only to forge the attacker's payload; nothing here loads one

    import redis

    import hotset
    from hotset.bench.redis_server import local_redis

    ran = failed = planted = wrong = 0
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp, local_redis() as server:
        mark = str(Path(tmp) / _PAYLOAD_MARK)
        payload = pickle.dumps(_Payload(mark))
        client = redis.Redis.from_url(server.url)
        for run in range(runs):
            verify = run % 2 == 0
            try:
                data = hotset.from_dataset(_Items(256))
                with hotset.loader(
                    data,
                    system="lru",
                    cache=server.url,
                    cache_bytes=1.0,
                    batch_size=_BATCH,
                    num_workers=2,
                    seed=run,
                    verify=verify,
                ) as ld:
                    for epoch in range(3):
                        if epoch:
                            planted += _plant(client, ld.namespace, payload)
                        ld.set_epoch(epoch)
                        for x, _y, ids, _w in ld:
                            wrong += int((x[:, 0, 0, 0] != ids % 251).sum())
            except HotsetError as exc:
                failed += 1
                failures.append(f"{type(exc).__name__}: {exc}"[:200])
            if os.path.exists(mark):
                ran += 1
                os.unlink(mark)
        client.close()
    return {
        "scenario": "planted-payload",
        "runs": runs,
        "failed_runs": failed,
        "code_run": ran,
        "wrong_samples": wrong,
        "detail": f"a user's Dataset of 256 (array, label) items on Redis, 2 workers, verify "
        f"on and off alternating; {planted} pickles planted under the namespace's keys"
        + (f"; failures: {failures}" if failures else ""),
    }


# -- an evicting server -----------------------------------------------------------------


def _evicting_row(tmp: Path, runs: int) -> dict[str, Any]:
    import torch

    import hotset
    from hotset.bench.redis_server import local_redis
    from hotset.data import SynthConfig, make_synth

    root = tmp / "evicting"
    make_synth(root, SynthConfig(n=1600, image_size=32, classes=4, seed=5))
    files = read_files(root, _manifest_keys(root))
    total = sum(map(len, files))
    failed = lost = wrong = refused = resyncs = rebuilt = 0
    failures: list[str] = []
    args = ("--maxmemory", "3mb", "--maxmemory-policy", "allkeys-lru")
    for run in range(runs):
        system = ("lru", "shade")[run % 2]
        with local_redis(*args) as server:
            try:
                data = hotset.open_dataset(root, decode="bytes")
                with hotset.loader(
                    data,
                    system=system,
                    cache=server.url,
                    cache_bytes=0.9,
                    batch_size=_BATCH,
                    num_workers=2,
                    seed=run,
                ) as ld:
                    for epoch in range(3):
                        ld.set_epoch(epoch)
                        seen: set[int] = set()
                        for x, _y, ids, _w in ld:
                            if system == "shade":
                                ld.update(ids, torch.linspace(0.1, 2.0, len(ids)))
                            for blob, sid in zip(x, ids.tolist(), strict=True):
                                wrong += blob != files[sid]
                                seen.add(sid)
                        row = ld.report()[-1]
                        refused += int(row.get("refused_puts", 0))
                        resyncs += int(row.get("cache_resyncs", 0))
                        rebuilt += int(row.get("rebuild_reads", 0))
                        lost += len(files) - len(seen) if system == "lru" else 0
            except Exception as exc:
                failed += 1
                failures.append(f"{system}: {type(exc).__name__}: {exc}"[:200])
    return {
        "scenario": "redis-evicting",
        "runs": runs,
        "failed_runs": failed,
        "samples_lost": lost,
        "wrong_samples": wrong,
        "refused_puts": refused,
        "cache_resyncs": resyncs,
        "rebuild_reads": rebuilt,
        "detail": f"maxmemory 3mb allkeys-lru, a cache budget of 90% of {total} bytes, lru and "
        "shade alternating, 2 workers, 3 epochs" + (f"; failures: {failures}" if failures else ""),
    }


# -- a worker killed in its turn --------------------------------------------------------


def _holder(loader: Any, seconds: float) -> int:
    state = loader._parts.sequencer._state  # the pid holding the write turn
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if state[2]:
            return int(state[2])
        time.sleep(0.01)
    raise HotsetError("no worker took its write turn")


def _killed_once(root: Path, url: str, files: list[bytes], seed: int) -> tuple[bool, bool, bool]:
    """(hung, error named the dead worker, the next epoch delivered every sample)."""
    import redis

    import hotset

    client = redis.Redis.from_url(url)
    pool = ThreadPoolExecutor(1)
    data = hotset.open_dataset(root, decode="bytes")
    ld = hotset.loader(
        data,
        system="lru",
        cache=url + "?socket_timeout=20",
        cache_bytes=0.5,
        batch_size=_BATCH,
        num_workers=2,
        seed=seed,
    )
    named = hung = False
    try:
        client.execute_command("CLIENT", "PAUSE", 5000, "ALL")
        first = pool.submit(next, iter(ld))
        os.kill(_holder(ld, 30), signal.SIGKILL)
        try:
            first.result(timeout=60)
        except HotsetError as exc:
            named = "worker died" in str(exc)
        client.execute_command("CLIENT", "UNPAUSE")
        ld.set_epoch(1)
        row = pool.submit(epoch_row, ld, 1, files).result(timeout=120)
        pool.submit(ld.close).result(timeout=60)
    except FutureTimeout:
        hung = True
        row = {"lost": len(files), "repeated": 0, "wrong": 0}
    finally:
        client.execute_command("CLIENT", "UNPAUSE")
        client.close()
        pool.shutdown(wait=False)
    whole = row["lost"] == row["repeated"] == row["wrong"] == 0
    return hung, named, whole


def _worker_kill_row(root: Path, runs: int) -> dict[str, Any]:
    from hotset.bench.redis_server import local_redis

    files = read_files(root, _manifest_keys(root))
    outcomes = []
    with local_redis() as server:
        for run in range(runs):
            outcomes.append(_killed_once(root, server.url, files, run))
    return {
        "scenario": "worker-killed-in-write-turn",
        "runs": runs,
        "failed_runs": sum(not whole for _h, _n, whole in outcomes),
        "hangs": sum(h for h, _n, _w in outcomes),
        "error_named_the_worker": sum(n for _h, n, _w in outcomes),
        "detail": "lru on Redis, 2 workers, the server paused so the worker holding the write "
        "turn waits in its put, then SIGKILLed; failed_runs counts runs whose loader did not "
        "then deliver a whole epoch byte-exact and close",
    }


# -- the package directory --------------------------------------------------------------


@contextlib.contextmanager
def _tmpfs(path: Path, size: str) -> Iterator[bool]:
    """A tmpfs of ``size`` at ``path`` (root only); yields whether it is mounted."""
    path.mkdir(parents=True, exist_ok=True)
    mounted = (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
            capture_output=True,
            check=False,
        ).returncode
        == 0
    )
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


#: the folder (on the package directory's file system) where the filler holds files
_HELD = "filler-held"


def _fill(path: Path) -> None:
    """Another process's file takes every free byte of the file system, and keeps it so.

    Filling it once was not enough: the loader deletes each package once read,
    and the space a deletion freed took the next package, so in about one run in
    six no package write failed and the scenario tested nothing. The filler now
    also holds every file already there (:func:`_hold`), so the loader's
    deletions free no space: the file system stays full until it is unmounted,
    as a disk that another job keeps filling does, and the first package write
    after the fault fails in every run.
    """
    (path / _HELD).mkdir(exist_ok=True)  # before the fill: a folder may need space
    with contextlib.suppress(OSError), open(path / "filler", "wb") as fh:
        while True:
            fh.write(b"\0" * 65536)
            fh.flush()
    _hold(path)


def _hold(path: Path) -> None:
    """A hard link in ``path/filler-held/`` to every file under ``path``: a file's space
    is freed only when its last link goes, so deleting the original frees nothing.

    Deterministic: the loader deletes packages only in its main process's thread,
    the one that runs the fault, so none is deleted while this runs; a file renamed
    meanwhile (a package write finishing) is found under its new name by the next pass.
    """
    held = path / _HELD
    seen: set[int] = {os.stat(path / "filler").st_ino}
    changed = True
    while changed:
        changed = False
        for file in sorted(f for f in path.rglob("*") if held not in f.parents):
            try:
                info = os.stat(file, follow_symlinks=False)
                if not stat.S_ISREG(info.st_mode) or info.st_ino in seen:
                    continue
                os.link(file, held / str(info.st_ino), follow_symlinks=False)
            except FileNotFoundError:
                changed = True  # renamed or removed while listed: look again
                continue
            seen.add(info.st_ino)


def _remount_ro(path: Path) -> None:
    """Remount ``path`` read-only; the kernel refuses (busy) while a package file is open
    for writing there, so try again for up to 5 s: that refusal is the harness racing a
    write, not the loader failing (a loaded machine lost one run of a full suite to it)."""
    deadline = time.monotonic() + 5.0
    while True:
        done = subprocess.run(["mount", "-o", "remount,ro", str(path)], capture_output=True)
        if done.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise subprocess.CalledProcessError(
                done.returncode, done.args, done.stdout, done.stderr
            )
        time.sleep(0.02)


def _learning(loader: Any) -> Callable[[Any], None]:
    """Feed a learning system fixed losses per batch (a benchmark trains no model)."""
    import torch

    def learn(ids: Any) -> None:
        loader.update(ids, torch.linspace(0.1, 2.0, len(ids)))

    return learn


def _package_run(
    root: Path, files: list[bytes], pkdir: Path, fault: Callable[[Path], None], seed: int
) -> tuple[int, dict[str, Any]]:
    """One run of iCACHE with ``fault`` on its package directory before epoch 1's second
    batch: (wrong samples, the loader's policy summary)."""
    import hotset

    data = hotset.open_dataset(root, decode="bytes")
    with hotset.loader(
        data,
        system="icache",
        cache=0.2,
        batch_size=_BATCH,
        num_workers=2,
        seed=seed,
        package_dir=str(pkdir),
    ) as ld:
        learn = _learning(ld)
        rows = [epoch_row(ld, 0, files, on_batch=learn)]
        rows.append(epoch_row(ld, 1, files, functools.partial(fault, pkdir), on_batch=learn))
        rows += [epoch_row(ld, e, files, on_batch=learn) for e in (2, 3, 4)]
        summary = ld.policy_summary()
    # (iCACHE serves some requests by substitution: ids repeat by design)
    return sum(r["wrong"] for r in rows), summary


def _package_rows(root: Path, runs: int) -> list[dict[str, Any]]:
    """Each package-directory fault, ``runs`` times. A run in which no package write
    failed tested nothing (the fault did not land): it counts as a failed run, named."""
    files = read_files(root, _manifest_keys(root))
    rows = []
    faults: dict[str, Callable[[Path], None]] = {
        "package-dir-full": _fill,
        "package-dir-read-only": _remount_ro,
    }
    for scenario, fault in faults.items():
        failed = wrong = fallback = write_errors = 0
        mounted_all = True
        failures: list[str] = []
        for run in range(runs):
            with tempfile.TemporaryDirectory() as tmp, _tmpfs(Path(tmp) / "pk", "8m") as ok:
                mounted_all &= ok
                if not ok:
                    break
                try:
                    bad, summary = _package_run(root, files, Path(tmp) / "pk", fault, run)
                except Exception as exc:
                    failed += 1
                    failures.append(f"{type(exc).__name__}: {exc}"[:200])
                    continue
                wrong += bad
                fallback += int(summary.get("package_fallback_reads", 0))
                errors = int(summary.get("package_write_errors", 0))
                write_errors += errors
                if errors == 0:
                    failed += 1
                    failures.append(f"run {run}: no package write failed, the fault tested nothing")
        rows.append(
            {
                "scenario": scenario,
                "runs": runs if mounted_all else 0,
                "failed_runs": failed,
                "wrong_samples": wrong,
                "package_write_errors": write_errors,
                "package_fallback_reads": fallback,
                "detail": (
                    "icache, 20% cache, package_dir on an 8 MB tmpfs, 2 workers; the fault "
                    "before epoch 1's second batch, 5 epochs; a run with no failed package "
                    "write is a failed run"
                    if mounted_all
                    else "did not run: mounting a tmpfs needs root"
                )
                + (f"; failures: {failures}" if failures else ""),
            }
        )
    return rows


def run_security(root: Path, *, runs: int, say: Callable[[str], None]) -> list[dict[str, Any]]:
    """Every scenario of the module; ``root`` is the suite's data set (PNG synth)."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        say("stale and reordered chunks")
        rows += _chunk_rows(Path(tmp), 1000)
        say("planted payload")
        rows.append(_payload_row(runs))
        say("evicting redis")
        rows.append(_evicting_row(Path(tmp), runs))
        say("worker killed in its write turn")
        rows.append(_worker_kill_row(root, runs))
        say("package dir full / read-only")
        rows += _package_rows(root, max(1, runs // 2))
    return rows
