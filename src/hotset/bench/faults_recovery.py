"""Fault scenarios of recovery (issue #41, part B): the epoch always finishes, a refused
checkpoint changes nothing, a bad input is named.

Each repeats, on real loaders, one adversarial case the issue counted, and counts what
a user would see (``tests/faults/`` and ``tests/torch/`` assert each once):

* ``worker-killed-at-random``: a DataLoader worker SIGKILLed (a real ``kill -9``) at a
  random moment of a loop that trains (5 ms per step), forked or from a fork server,
  ``10 * runs`` kills: errors that reached the loop as anything but the loader's
  ``HotsetError`` naming the worker (``raw_exceptions``; the issue: 29 of 37), and runs
  whose next epoch was not every sample once, byte-exact (``failed_runs``);
* ``package-lost-mid-run``: iCACHE and ImPACT with every package file deleted, or
  truncated, before each batch is asked for: runs stopped, and samples that differ
  from an untouched twin's (the issue: 6 of 6 stopped);
* ``undecodable-entries-verify-off``: every entry of a shared Redis namespace
  overwritten with zeros of its length, ``verify=False``, a manifest data set and a
  user's raw bytes (``from_dataset(sizes=)``): runs stopped (the issue: 23 of 23),
  samples delivered unlike their files;
* ``refused-state``: for every system the loader runs, a state that is refused
  (a coverage id of -1, then a broken report row) given to a loader mid-epoch: how
  many then yield batches unlike an untouched twin's;
* ``bad-inputs``: the issue's inputs, each given once: the errors that were not a
  ``HotsetError`` naming the argument.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import json
import os
import random
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hotset.bench.fault_epochs import read_files
from hotset.errors import HotsetError

__all__ = ["SCENARIOS", "run_recovery"]

#: the rows :func:`run_recovery` adds to ``hotset bench faults``, in order
SCENARIOS = (
    "worker-killed-at-random",
    "package-lost-mid-run",
    "undecodable-entries-verify-off",
    "refused-state",
    "bad-inputs",
)

_BATCH = 32
#: seconds a killed-worker run may take before it counts as a hang
_HANG_S = 120


# -- a worker killed at a random point ----------------------------------------------------


class _Hung(Exception):
    """Raised by the alarm when a run takes longer than _HANG_S."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Hung(f"no progress in {_HANG_S} s")


def _train(loader: Any, killer: threading.Thread, pids: list[int]) -> BaseException | None:
    """Epochs of a loop with a 5 ms step until the kill's error (returned) or 6 epochs."""
    try:
        for epoch in range(6):
            loader.set_epoch(epoch)
            for _batch in loader:
                pids[:] = loader._watch.pids()
                if killer.ident is None:
                    killer.start()  # the clock starts at the first batch
                time.sleep(0.005)
    except _Hung:
        raise
    except BaseException as exc:  # whatever reached the training loop
        return exc
    return None


def _whole(loader: Any, files: list[bytes]) -> bool:
    loader.set_epoch(99)
    seen = [0] * len(files)
    for x, _y, ids, _w in loader:
        for blob, sid in zip(x, ids.tolist(), strict=True):
            if blob != files[sid]:
                return False
            seen[sid] += 1
    return all(c == 1 for c in seen)


def _kill_once(root: Path, files: list[bytes], run: int, rng: random.Random) -> str:
    """One run: ``raw``, ``named``, ``unnamed`` (a HotsetError not naming the pid),
    ``none`` (the kill landed where nothing was left to fetch); ``+broken`` when the
    next epoch was not whole, ``hang`` when the run did not finish."""
    import hotset

    pids: list[int] = []
    killed: list[int] = []

    def kill() -> None:
        time.sleep(rng.uniform(0.0, 0.3))
        if pids:
            victim = rng.choice(list(pids))
            with contextlib.suppress(ProcessLookupError):  # it already exited: no kill
                os.kill(victim, signal.SIGKILL)
                killed.append(victim)

    data = hotset.open_dataset(root, decode="bytes")
    context = "fork" if run % 2 == 0 else "forkserver"
    try:
        with (
            _hang_alarm(_HANG_S),
            hotset.loader(
                data,
                system="lru",
                cache=0.3,
                batch_size=_BATCH,
                num_workers=2,
                seed=run,
                multiprocessing_context=context,
            ) as ld,
        ):
            killer = threading.Thread(target=kill, daemon=True)
            exc = _train(ld, killer, pids)
            if killer.ident is not None:
                killer.join(timeout=10)
            outcome = _outcome(exc, killed)
            if not _whole(ld, files):
                outcome += "+broken"
    except _Hung:
        outcome = "hang"
    finally:
        # the dead run's iterator sits in a cycle with its error's traceback: collected
        # here, not in a later run's forked worker (where torch's __del__ complains)
        gc.collect()
    return outcome


@contextlib.contextmanager
def _hang_alarm(seconds: float) -> Iterator[None]:
    """:class:`_Hung` after ``seconds``; an outer real-time timer (pytest-timeout's; there
    is one per process) is put back after, less the time spent, so it still bounds what
    follows (a hang in the collection above would otherwise wait for ever)."""
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    started = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer > 0:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - started), 1e-3))


def _outcome(exc: BaseException | None, killed: list[int]) -> str:
    if exc is None:
        return "none"
    if not isinstance(exc, HotsetError):
        return "raw"
    named = bool(killed) and f"DataLoader worker (pid {killed[0]})" in str(exc)
    return "named" if named else "unnamed"


def _worker_kill_row(root: Path, kills: int) -> dict[str, Any]:
    files = read_files(root, _keys(root))
    rng = random.Random(41)
    outcomes = [_kill_once(root, files, run, rng) for run in range(kills)]

    def count(name: str) -> int:
        return sum(o.split("+")[0] == name for o in outcomes)

    raw = [o for o in outcomes if o.startswith("raw")]
    return {
        "scenario": "worker-killed-at-random",
        "runs": kills,
        "failed_runs": sum(o.endswith("+broken") or o == "hang" for o in outcomes),
        "raw_exceptions": len(raw),
        "named_errors": count("named"),
        "unnamed_errors": count("unnamed"),
        "no_error": count("none"),
        "hangs": count("hang"),
        "detail": "lru, 2 workers (forked and from a fork server, alternating), a 5 ms step, "
        "one worker SIGKILLed 0-0.3 s after the first batch; no_error: the kill landed where "
        "nothing was left to fetch; failed_runs: the next epoch not whole and byte-exact",
    }


# -- package files lost while the loader runs -------------------------------------------


def _lose_packages(folder: Path, how: str) -> int:
    lost = 0
    for f in folder.rglob("*.pkg"):
        try:
            if how == "deleted":
                f.unlink()
            else:
                f.write_bytes(f.read_bytes()[:-1])
        except FileNotFoundError:
            continue
        lost += 1
    return lost


def _package_epochs(root: Path, system: str, pkdir: Path, seed: int, how: str | None) -> Any:
    """(batches as (ids, bytes), policy summary, files lost) of 4 epochs, packages lost
    before every batch is asked for when ``how`` is given."""
    import torch

    import hotset

    data = hotset.open_dataset(root, decode="bytes")
    batches, lost = [], 0
    with hotset.loader(
        data, system=system, cache=0.2, batch_size=_BATCH, num_workers=2, seed=seed,
        package_dir=str(pkdir),
    ) as ld:  # fmt: skip
        for epoch in range(4):
            ld.set_epoch(epoch)
            it = iter(ld)
            while True:
                lost += _lose_packages(pkdir, how) if how else 0
                try:
                    x, _y, ids, _w = next(it)
                except StopIteration:
                    break
                batches.append((ids.tolist(), list(x)))
                ld.update(ids, torch.from_numpy(((ids.numpy() * 7919) % 101) / 100 + 0.01))
        summary = ld.policy_summary()
    return batches, summary, lost


def _package_row(root: Path, runs: int) -> dict[str, Any]:
    failed = wrong = lost = fallback = 0
    failures: list[str] = []
    for system in ("icache", "impact"):
        for run in range(runs):
            how = "deleted" if run % 2 == 0 else "truncated"
            with tempfile.TemporaryDirectory() as tmp:
                want, _, _ = _package_epochs(root, system, Path(tmp) / "twin", run, None)
                try:
                    got, summary, gone = _package_epochs(root, system, Path(tmp) / "pk", run, how)
                except Exception as exc:
                    failed += 1
                    failures.append(f"{system}: {type(exc).__name__}: {exc}"[:200])
                    continue
            wrong += sum(len(a[0]) for a, b in zip(got, want, strict=False) if a != b)
            wrong += abs(len(got) - len(want)) * _BATCH
            lost += int(summary.get("packages_lost", 0))
            fallback += int(summary.get("package_fallback_reads", 0))
            failed += int(gone == 0 or not summary.get("packages_lost"))  # tested nothing
    return {
        "scenario": "package-lost-mid-run",
        "runs": 2 * runs,
        "failed_runs": failed,
        "wrong_samples": wrong,
        "packages_lost": lost,
        "package_fallback_reads": fallback,
        "detail": "icache and impact, 20% cache, 2 workers, 4 epochs; every package file "
        "deleted (even runs) or truncated (odd) before each batch is asked for; wrong: "
        "samples unlike an untouched twin's; a run where no package was lost is a failed run"
        + (f"; failures: {failures}" if failures else ""),
    }


# -- undecodable cache entries with verify=False ------------------------------------------


def _overwrite(url: str, namespace: str) -> int:
    import redis

    client = redis.Redis.from_url(url)
    done = 0
    try:
        for key in list(client.scan_iter(match=f"hotset:{namespace}:*")):
            name = key.decode()
            if name.endswith(":used-bytes") or name.count(":") != 3:
                continue
            client.set(key, bytes(int(client.strlen(key))))
            done += 1
    finally:
        client.close()
    return done


class _Files:
    """A user's Dataset over files, read as raw bytes (picklable for workers)."""

    def __init__(self, root: Path, keys: list[str]) -> None:
        self.root, self.keys = root, keys

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, i: int) -> bytes:
        return self.read(i)

    def read(self, i: int) -> bytes:
        return (self.root / self.keys[i]).read_bytes()


def _undecodable_run(root: Path, url: str, kind: str, run: int) -> tuple[int, int]:
    """(samples unlike their files, integrity errors) of the epoch after the overwrite."""
    import torch

    import hotset
    from hotset.data.decode import decode

    keys = _keys(root)
    folder = _Files(root, keys)
    labels = [int(v) for v in hotset.open_dataset(root, decode="bytes").manifest.labels]
    if kind == "manifest":
        data = hotset.open_dataset(root, decode="image")
    else:
        sizes = [len(folder.read(i)) for i in range(len(keys))]
        data = hotset.from_dataset(folder, read=folder.read, decode="image", sizes=sizes,
                                   labels=labels)  # fmt: skip
    namespace = f"undecodable-{kind}-{run}"
    with hotset.loader(
        data, system="lru", cache=url, cache_bytes="100%", namespace=namespace,
        batch_size=_BATCH, num_workers=2, seed=run, verify=False,
    ) as ld:  # fmt: skip
        ld.set_epoch(0)
        for _ in ld:
            pass
        assert ld.namespace is not None
        _overwrite(url, ld.namespace)
        ld.set_epoch(1)
        wrong = 0
        for x, _y, ids, _w in ld:
            for row, sid in zip(x, ids.tolist(), strict=True):
                want = torch.from_numpy(decode(folder.read(sid), keys[sid]))
                wrong += not torch.equal(row, want)
        return wrong, int(ld.report()[1]["integrity_errors"])


def _undecodable_row(root: Path, runs: int) -> dict[str, Any]:
    from hotset.bench.redis_server import local_redis

    failed = wrong = errors = 0
    failures: list[str] = []
    with local_redis() as server:
        for kind in ("manifest", "raw-bytes"):
            for run in range(runs):
                try:
                    bad, found = _undecodable_run(root, server.url, kind, run)
                except Exception as exc:
                    failed += 1
                    failures.append(f"{kind}: {type(exc).__name__}: {exc}"[:200])
                    continue
                wrong, errors = wrong + bad, errors + found
    return {
        "scenario": "undecodable-entries-verify-off",
        "runs": 2 * runs,
        "failed_runs": failed,
        "wrong_samples": wrong,
        "integrity_errors": errors,
        "detail": "lru on a shared Redis namespace holding 100%, verify=False, 2 workers; after "
        "a warm epoch another client overwrites every entry with zeros of its length; a "
        "manifest set and from_dataset(read=, sizes=) alternate; decode='image'"
        + (f"; failures: {failures}" if failures else ""),
    }


# -- a refused state changes nothing -----------------------------------------------------


def _refused_differs(system: str, root: Path, pkdir: Path, breakage: str) -> bool | None:
    """Whether, after refusing a broken state mid-epoch, ``system``'s loader yields other
    batches than an untouched twin; None if the state was not refused with a HotsetError."""
    import hotset
    from hotset.systems.registry import capabilities_of
    from hotset.torch.statecodec import unpack

    def started(ld: Any) -> Iterator[Any]:
        for _ in _steps(ld, iter(_epoch_of(ld, 0)), 0):
            pass
        it = iter(_epoch_of(ld, 1))
        for _ in range(3):
            _step(ld, next(it), 1)
        return it

    data = hotset.open_dataset(root, decode="bytes")
    extra = {"package_dir": str(pkdir)} if capabilities_of(system).packs else {}
    opts = {"system": system, "cache": 0.3, "batch_size": 16, "seed": 5, **extra}
    with hotset.loader(data, **opts) as ld, hotset.loader(data, **opts) as twin:
        it, twin_it = started(ld), started(twin)
        bad = copy.deepcopy(unpack(ld.state_dict()))
        if breakage == "coverage":
            bad["coverage"]["ever"] = [0, 1, -1]
        else:
            bad["history"] = [*bad["history"], {"epoch": "x"}]
        try:
            ld.load_state_dict(bad)
            return None
        except HotsetError:
            pass
        rest = list(_steps(ld, it, 1)) != list(_steps(twin, twin_it, 1))
        after = list(_steps(ld, iter(_epoch_of(ld, 2)), 2))
        return rest or after != list(_steps(twin, iter(_epoch_of(twin, 2)), 2))


def _epoch_of(ld: Any, epoch: int) -> Any:
    ld.set_epoch(epoch)
    return ld


def _step(ld: Any, batch: Any, epoch: int) -> tuple[list[int], list[bytes]]:
    import torch

    x, _y, ids, _w = batch
    ld.update(ids, torch.from_numpy(((ids.numpy() * 2654435761 + epoch) % 1000) / 1000 + 0.1))
    return ids.tolist(), list(x)


def _steps(ld: Any, it: Iterator[Any], epoch: int) -> Iterator[tuple[list[int], list[bytes]]]:
    for batch in it:
        yield _step(ld, batch, epoch)


def _refused_row(tmp: Path) -> dict[str, Any]:
    from hotset.data import SynthConfig, make_synth
    from hotset.data.chunks import pack_dataset
    from hotset.systems.registry import capabilities_of, system_names

    plain, packed = tmp / "plain", tmp / "packed"
    make_synth(plain, SynthConfig(n=200, image_size=8, classes=4, seed=3), workers=1)
    make_synth(packed, SynthConfig(n=200, image_size=8, classes=4, seed=3), workers=1)
    pack_dataset(packed, chunk_size=8, shuffle_seed=1)
    systems = [
        s
        for s in system_names()
        if not capabilities_of(s).needs_future and capabilities_of(s).realizable
    ]
    differ: list[str] = []
    accepted: list[str] = []
    for system in systems:
        root = packed if capabilities_of(system).reads_units else plain
        for breakage in ("coverage", "history"):
            got = _refused_differs(system, root, tmp / "pk", breakage)
            if got is None:
                accepted.append(f"{system}/{breakage}")
            elif got:
                differ.append(f"{system}/{breakage}")
    return {
        "scenario": "refused-state",
        "runs": 2 * len(systems),
        "failed_runs": len(differ) + len(accepted),
        "batches_differ": len(differ),
        "accepted": len(accepted),
        "detail": f"every system the loader runs ({len(systems)}), 3 batches into epoch 1, "
        "given its own state with a coverage id of -1, then with a broken report row; "
        "batches_differ: the rest of the epoch or the next unlike an untouched twin's"
        + (f"; differ: {differ}" if differ else "")
        + (f"; accepted: {accepted}" if accepted else ""),
    }


# -- the inputs -------------------------------------------------------------------


def _inputs(tmp: Path, root: Path) -> dict[str, Callable[[], object]]:
    """Each bad input of the issue, as a call that must raise a HotsetError naming it."""
    import torch

    import hotset
    from hotset.data.chunks import pack_dataset
    from hotset.data.itemcodec import decode_item, encode_item

    data = hotset.open_dataset(root, decode="bytes")
    packed = tmp / "packed-bad"
    shutil.copytree(root, packed)
    pack_dataset(packed, chunk_size=8)
    doc = json.loads((packed / "chunks.json").read_text())
    doc["chunk_size"] = 2**64
    (packed / "chunks.json").write_text(json.dumps(doc))
    zero_d = (
        b"HSI\x01" + bytes((8,)) + (300_000).to_bytes(8, "little") + b"\x0d\x02\x00\x01" * (300_000)
    )

    def pairs_x() -> object:
        items = [(torch.full((2,), float(i)), i % 2) for i in range(8)]
        ds = _Pairs(items)
        sizes = [len(encode_item(it)) for it in items]
        d = hotset.from_dataset(ds, sizes=sizes, labels=[i % 2 for i in range(8)])
        with hotset.loader(d, system="lru", cache=1.0, batch_size=8, verify=False) as ld:
            x = next(iter(ld))[0]
        if not (isinstance(x, torch.Tensor) and x.shape == (8, 2)):
            return f"x is {type(x).__name__}"  # the bug: [inputs, labels]
        raise HotsetError("x is the inputs")  # right: counted as refused/handled

    return {
        "cache=10**15": lambda: hotset.loader(data, system="lru", cache=10**15),
        "ftp:// URL": lambda: hotset.open_dataset("ftp://127.0.0.1:1/data"),
        "num_workers=1_000_000": lambda: hotset.loader(data, system="lru", num_workers=10**6),
        "chunk_size=2**64": lambda: hotset.open_dataset(packed, decode="bytes"),
        "cache='0.9'": lambda: hotset.loader(data, system="lru", cache="0.9"),
        "0-d tensor list": lambda: decode_item(zero_d),
        "from_dataset(sizes=) x": pairs_x,
    }


class _Pairs:
    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> Any:
        return self.items[i]


def _inputs_row(tmp: Path, root: Path) -> dict[str, Any]:
    cases = _inputs(tmp, root)
    raw: list[str] = []
    for name, call in cases.items():
        try:
            got = call()
        except HotsetError:
            continue
        except Exception as exc:
            raw.append(f"{name}: {type(exc).__name__}: {exc}"[:160])
            continue
        if hasattr(got, "close"):
            got.close()
        raw.append(f"{name}: accepted")
    return {
        "scenario": "bad-inputs",
        "runs": len(cases),
        "failed_runs": len(raw),
        "detail": f"each given once, each must be a HotsetError naming it: {', '.join(cases)}"
        + (f"; not: {raw}" if raw else ""),
    }


def _keys(root: Path) -> list[str]:
    from hotset.data.manifest import Manifest

    return list(Manifest.load(root).keys)


def run_recovery(root: Path, *, runs: int, say: Callable[[str], None]) -> list[dict[str, Any]]:
    """Every scenario of the module; ``root`` is the suite's data set (PNG synth);
    ``10 * runs`` worker kills (40 at the default 4 runs)."""
    rows: list[dict[str, Any]] = []
    say("worker killed at random")
    rows.append(_worker_kill_row(root, 10 * runs))
    say("package files lost mid-run")
    rows.append(_package_row(root, runs))
    say("undecodable entries, verify off")
    rows.append(_undecodable_row(root, runs))
    with tempfile.TemporaryDirectory() as tmp:
        say("refused states, every system")
        rows.append(_refused_row(Path(tmp)))
        say("bad inputs")
        rows.append(_inputs_row(Path(tmp), root))
    return rows
