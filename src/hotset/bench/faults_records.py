"""``hotset bench faults``: records another job writes, poisoned (issue #41, part A).

Jobs on one shared namespace read what the others publish there: Quiver's probe
board (:mod:`hotset.coordination.probe_board`) and iCACHE's benefits and RIVs
(:mod:`hotset.coordination.job_importance`). Any client of the server can write
those keys. Each scenario trains a victim job twice in a process of its own, on
the same seed, data and namespace: alone (the control) and while an attacker
process plants hostile records beside it with a plain redis client, again every
0.3 s. A row counts failed runs and compares the attacked run with its control:
exact hits over the run, the bytes of the state a checkpoint saves, the seconds
its epochs took (reads of the records included) and the victim process's peak RSS,
each a run's on average. Nothing here is simulated.

Scenarios (the victim's system in brackets):

* ``record-deep`` (quiver[placement]): board records of 4 kB of nested arrays,
  which made ``json.loads`` raise ``RecursionError`` in every placement job;
* ``record-huge-claim`` (quiver[placement]): records of the victim's own data set
  claiming ``size_bytes=10**30`` (and one claiming chunks of 10**30 bytes), which
  turned its caching off;
* ``record-non-finite`` (icache[multijob]): entries with benefits of 1e308 (their
  sum overflowed to inf) and NaN;
* ``record-future-dated`` (icache[multijob]): entries stamped a year ahead (they
  never expired), and entries with no lease at all;
* ``records-100000`` (both): 100,000 records of the kinds above (deep, 1e30 bytes,
  non-finite, future-dated, unleased) planted before the victim starts, 8 more every 0.3 s.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import resource
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["hostile", "plant", "run_records", "victim"]

SYSTEMS = {
    "quiver": "quiver[probe=3,placement=true]",
    "icache": "icache[multijob=true,benefit_probe=2,eligible_above=1.0,warm_up=1,window=32]",
}
_N, _BATCH, _EPOCHS, _SHARE = 400, 16, 4, "records"
#: the namespace's budget, a share of the data set: Quiver's whole data set (``full``
#: placement: exact hits from epoch 2 on), iCACHE's H-cache beside its L-cache
_CACHE = {"quiver": 1.0, "icache": 0.4}
#: (scenario, victim system, what is planted, how many to start with)
SCENARIOS = (
    ("record-deep", "quiver", ("deep",), 64),
    ("record-huge-claim", "quiver", ("size-1e30", "chunk-1e30"), 64),
    ("record-non-finite", "icache", ("benefit-1e308", "benefit-nan"), 16),
    ("record-future-dated", "icache", ("future", "unleased"), 16),
    ("records-100000", "quiver", ("deep", "size-1e30", "future", "unleased"), 100_000),
    ("records-100000", "icache", ("benefit-1e308", "future", "unleased"), 100_000),
)


def keys(system: str, namespace: str) -> tuple[str, str]:
    """The records' hash and the leases' sorted set another job writes for ``system``."""
    tag = f"hotset-probe:{{{namespace}}}" if system == "quiver" else f"hotset-jobs:{{{namespace}}}"
    return (f"{tag}:records", f"{tag}:leases") if system == "quiver" else (tag, f"{tag}:leases")


def hostile(system: str, kind: str, i: int, dataset: str, now: float) -> tuple[bytes, float | None]:
    """One hostile record of ``kind`` for ``system``'s records (field ``f"x{i}"``): its
    value and its lease's end (None: no lease)."""
    lease: float | None = now + 300
    if kind == "future":
        lease = now + 365 * 86400 if i % 2 else lease  # half leased a year ahead too
    elif kind == "unleased":
        lease = None
    if kind == "deep":
        return b"[" * 2048 + b"]" * 2048, lease
    if kind == "huge":
        return b"{" + b" " * (1 << 20) + b"}", lease
    if system == "quiver":
        return json.dumps(_board_record(kind, i, dataset)).encode(), lease
    from hotset.coordination.job_importance import encode_entry

    benefit = {"benefit-1e308": 1e308, "benefit-nan": float("nan")}.get(kind, 9.0)
    at = now + 365 * 86400 if kind == "future" else now
    return encode_entry(benefit, np.linspace(1.0, 0.0, _N), at=at), lease


def _board_record(kind: str, i: int, dataset: str) -> dict[str, Any]:
    """A probe record of the victim's data set: well-formed but for what ``kind`` says."""
    record: dict[str, Any] = {"job": f"x{i}", "dataset": dataset, "t_miss": 0.3, "t_hit": 0.01}
    record |= {"gpus": 1, "size_bytes": 10**6, "chunk_bytes": 10**5}
    if kind in ("size-1e30", "chunk-1e30"):
        record[kind.split("-")[0] + "_bytes"] = 10**30
    return record


def plant(url: str, system: str, namespace: str, kinds: tuple[str, ...], count: int) -> int:
    """Write ``count`` hostile records (the ``kinds`` in turn) around the scripts."""
    import redis

    dataset = namespace.split("@", 1)[1]
    records, leases = keys(system, namespace)
    client = redis.Redis.from_url(url)
    now = time.time()
    try:
        for start in range(0, count, 2000):
            pipe = client.pipeline(transaction=False)
            for i in range(start, min(count, start + 2000)):
                value, lease = hostile(system, kinds[i % len(kinds)], i, dataset, now)
                pipe.hset(records, f"x{i}", value)
                if lease is not None:
                    pipe.zadd(leases, {f"x{i}": lease})
            pipe.execute()
    finally:
        client.close()
    return count


def _attacker(url: str, system: str, namespace: str, kinds: tuple[str, ...], stop: Any) -> None:
    """A process: plant a few records again every 0.3 s until told to stop."""
    while not stop.wait(0.3):
        plant(url, system, namespace, kinds, 8)


def victim(root: str, url: str, system: str, seed: int, out: str) -> None:
    """A process: train ``system`` ``_EPOCHS`` epochs on a namespace shared with whoever
    writes there; write what it measured (or the error that stopped it) to ``out``."""
    result: dict[str, Any] = {}
    try:
        result = _train(root, url, system, seed)
    except Exception as exc:  # a failed run is what this benchmark counts
        result = {"error": f"{type(exc).__name__}: {exc}"[:300], "trace": traceback.format_exc()}
    result["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    Path(out).write_text(json.dumps(result))


def _train(root: str, url: str, system: str, seed: int) -> dict[str, Any]:
    import torch

    import hotset
    from hotset.storage.throttled import ThrottledStore

    data = hotset.open_dataset(root, decode="bytes")
    data = data.with_store(ThrottledStore(data.store, latency_ms=4.0, max_concurrency=1))
    hard = np.random.default_rng(seed).random(len(data.manifest)) + 0.1
    epoch_s = []
    with hotset.loader(
        data, system=SYSTEMS[system], cache=url, cache_bytes=_CACHE[system], namespace=_SHARE,
        batch_size=_BATCH, seed=seed, check_store="off",
    ) as loader:  # fmt: skip
        for epoch in range(_EPOCHS):
            start = time.perf_counter()
            loader.set_epoch(epoch)
            for _x, _y, ids, _w in loader:
                loader.update(ids, torch.from_numpy(hard[ids.numpy()]))
            epoch_s.append(time.perf_counter() - start)
        buf = io.BytesIO()
        torch.save(loader.state_dict(), buf)
        link = (
            loader._parts.coordination.probes
            if system == "quiver"
            else loader._parts.coordination.jobs
        )
        stats: dict[str, int] = getattr(
            link, "stats", dict
        )()  # (a hotset before these counts has none)
        return {
            "exact_hits": [int(r["exact_hits"]) for r in loader.report()],
            "substitutions": [int(r["substitutions"]) for r in loader.report()],
            "state_bytes": buf.getbuffer().nbytes,
            "epoch_s": epoch_s,
            "skipped": stats,
            "summary": {k: v for k, v in loader.policy_summary().items() if "board" in k},
        }


def _run_victim(ctx: Any, root: str, url: str, system: str, seed: int, tmp: str) -> dict[str, Any]:
    out = str(Path(tmp) / f"victim-{system}-{seed}-{time.monotonic_ns()}.json")
    proc = ctx.Process(target=victim, args=(root, url, system, seed, out))
    proc.start()
    proc.join(timeout=600)
    if proc.is_alive():
        proc.kill()
        proc.join()
        return {"error": "hung: killed after 600 s"}
    if not Path(out).exists():
        return {"error": f"exited {proc.exitcode} without a result"}
    return dict(json.loads(Path(out).read_text()))


def _pair(
    ctx: Any, root: str, url: str, scenario: tuple[str, str, tuple[str, ...], int], seed: int
) -> tuple[dict[str, Any], dict[str, Any], int]:
    """The control run, then the attacked one; and how many records were planted."""
    import redis

    import hotset

    _, system, kinds, count = scenario
    client = redis.Redis.from_url(url)
    namespace = f"{_SHARE}@{hotset.open_dataset(root, decode='bytes').manifest.identity()}"
    with tempfile.TemporaryDirectory() as tmp:
        client.flushall()
        control = _run_victim(ctx, root, url, system, seed, tmp)
        client.flushall()
        planted = plant(url, system, namespace, kinds, count)
        stop = ctx.Event()
        attacker = ctx.Process(target=_attacker, args=(url, system, namespace, kinds, stop))
        attacker.start()
        try:
            attacked = _run_victim(ctx, root, url, system, seed, tmp)
        finally:
            stop.set()
            attacker.join(timeout=30)
    client.close()
    return control, attacked, planted


#: what a row compares with its control: exact hits, state bytes, seconds, peak RSS
_MEASURED = ("exact_hits", "state_bytes", "epoch_s", "rss_mb")


def _ratio(attacked: float, control: float) -> float | None:
    return None if not control else round(attacked / control, 3)


def _row(
    scenario: tuple[str, str, tuple[str, ...], int], pairs: list[Any], planted: int
) -> dict[str, Any]:
    name, system, kinds, _ = scenario
    failed = [p[1]["error"] for p in pairs if "error" in p[1]]
    failed += [f"control: {p[0]['error']}" for p in pairs if "error" in p[0]]
    ok = [(c, a) for c, a, _ in pairs if "error" not in c and "error" not in a]

    def total(key: str, side: int) -> float:
        """``key`` of the pairs' ``side`` (0: control) a run, on average (a list: its sum)."""
        values = [pair[side][key] for pair in ok]
        return float(sum(sum(v) if isinstance(v, list) else v for v in values)) / max(1, len(ok))

    hits, state, run_s, rss = ([total(k, s) for s in (0, 1)] for k in _MEASURED)
    return {
        "scenario": f"{name} ({system})",
        "runs": len(pairs),
        "failed_runs": sum(1 for c, a, _ in pairs if "error" in a or "error" in c),
        "exact_hits": int(hits[1]),
        "exact_hits_control": int(hits[0]),
        "state_bytes": int(state[1]),
        "state_bytes_control": int(state[0]),
        "state_vs_control": _ratio(state[1], state[0]),
        "run_s": round(run_s[1], 3),
        "run_s_control": round(run_s[0], 3),
        "run_s_vs_control": _ratio(run_s[1], run_s[0]),
        "rss_mb": round(rss[1], 1),
        "rss_vs_control": _ratio(rss[1], rss[0]),
        "detail": f"{SYSTEMS[system]}, {_N} samples, {_EPOCHS} epochs, a 4 ms store; "
        f"{planted} records planted a run ({', '.join(kinds)}), 8 more every 0.3 s; skipped "
        f"{ok[-1][1].get('skipped') if ok else {}}" + (f"; failures: {failed}" if failed else ""),
    }


def run_records(*, runs: int, say: Callable[[str], None]) -> list[dict[str, Any]]:
    """Every scenario, ``runs`` control/attacked pairs each; rows for the result file."""
    from hotset.bench.redis_server import local_redis
    from hotset.data import SynthConfig, make_synth

    ctx = multiprocessing.get_context("spawn")
    rows = []
    with tempfile.TemporaryDirectory() as tmp, local_redis() as server:
        root = str(Path(tmp) / "ds")
        make_synth(Path(root), SynthConfig(n=_N, image_size=8, classes=4, seed=3), workers=1)
        for scenario in SCENARIOS:
            say(f"records: {scenario[0]} ({scenario[1]})")
            pairs = [_pair(ctx, root, server.url, scenario, seed) for seed in range(runs)]
            rows.append(_row(scenario, pairs, sum(p[2] for p in pairs) // max(1, len(pairs))))
    return rows


def main(argv: list[str] | None = None) -> None:
    """``python -m hotset.bench.faults_records OUT.json [--runs N]``: these rows alone."""
    import argparse
    import sys

    from hotset.bench.results import write_result_file

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args(argv)
    rows = run_records(runs=args.runs, say=lambda msg: print(msg, file=sys.stderr, flush=True))
    command = f"python -m hotset.bench.faults_records {args.out} --runs {args.runs}"
    notes = [
        "Each row: a victim job process trained alone (control) and while an attacker "
        "process planted hostile records in its namespace's probe board (quiver) or job "
        "entries (icache); the same seed, data and namespace. Values are a run's on "
        "average: exact hits over the 4 epochs, the bytes of the saved state (torch.save "
        "of loader.state_dict()), the seconds of the 4 epochs (reads of the records "
        "included), the victim process's peak RSS.",
        "Every record planted is invalid, so the documented cap is no change: exact hits "
        "equal to the control's; state, time and RSS within 10% "
        "(docs/distributed.md#what-another-job-can-change).",
    ]
    result = {"runs": args.runs, "table": rows, "notes": notes}
    write_result_file(args.out, "faults-records", result, command)


if __name__ == "__main__":
    main()
