"""The headline demo: every seed system against a tuned PyTorch DataLoader on one store.

One cell of ``hotset bench matrix`` (:mod:`hotset.bench.matrix`), run the way a
person checks a claim: the five seed systems (SHADE, iCACHE, ImPACT, Quiver,
Brand), Scout (hotset's own), the no-cache loader (``pytorch``), a
``torch.utils.data.DataLoader`` tuned to keep as many requests in flight as the
store allows (:mod:`hotset.bench.torch_baseline`) and the no-I/O ceiling read the
same data set through the real loader over one
store preset (real sleeping: latency, link bandwidth, requests in flight). The
accelerator's step is a fixed wait per batch, so a 2-core CPU does not hide the
I/O, and the rows are measured back to back, ``repeats`` times with their order
rotated, so that machine load moves torch's row as much as the others and
cancels in the ratios; the spread over the repeats is shown.

Accuracy and coverage come from the live simulator: a real small model trained
on the same samples in each system's order (simulated time, real learning).
The result ends in :func:`verdict`, one plain sentence naming the winner and the
loser, each with the figure that makes it so.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hotset.bench.demo_options import DEFAULT_STORE as DEFAULT_STORE
from hotset.bench.demo_options import DEFAULT_SYSTEMS as DEFAULT_SYSTEMS
from hotset.bench.demo_options import DEFAULT_WORKLOAD as DEFAULT_WORKLOAD
from hotset.bench.demo_options import DemoOptions
from hotset.bench.matrix import REFERENCES
from hotset.bench.which import MIN_COVERAGE, acc_tolerance_pt, display_name, qualifies
from hotset.errors import HotsetError

#: the options of a run without any (every default)
DEFAULT_OPTIONS = DemoOptions()


def _quiet(_message: str) -> None:
    """The default ``log``: a Python caller asked for no progress lines."""


def run(
    opts: DemoOptions = DEFAULT_OPTIONS,
    *,
    out: Path,
    store: Any,
    log: Callable[[str], None] = _quiet,
) -> dict[str, Any]:
    """Measure every row ``repeats`` times, simulate accuracy, and summarize."""
    from hotset.bench.matrix import accuracy_runs, measure_group, summarize
    from hotset.bench.workloads import workload_dir
    from hotset.data import Manifest

    workload, systems, cache_frac = opts.workload, opts.systems, opts.cache_frac
    log(f"data: the {workload} workload under {out / 'data'} (made once, then reused)")
    path = workload_dir(
        workload, data_dir=out / "data", synth_n=opts.n, imagenet_n=opts.n, packed=True,
        progress=True,
    )  # fmt: skip
    measured: list[dict[str, Any]] = []
    for rep in range(opts.repeats):
        log(
            f"repeat {rep + 1}/{opts.repeats}: torch, {', '.join(systems)}, no-io over "
            f"{store.describe()}"
        )
        rows = measure_group(
            path, store=store, systems=systems, fracs=[cache_frac], epochs=opts.epochs,
            workers=opts.workers, batch_size=opts.batch_size, step_ms=opts.step_ms, seed=0,
            rotate=rep, tick=lambda name: log(f"  {name}"),
        )  # fmt: skip
        measured += [r | {"preset": _label(store), "workload": workload} for r in rows]
    log(f"accuracy: the live simulator trains a small model {opts.sim_epochs} epochs per system")
    accuracy = [
        r | {"workload": workload}
        for r in accuracy_runs(
            path, systems=systems, fracs=[cache_frac], seeds=opts.seeds, epochs=opts.sim_epochs,
            store=store, step_ms=opts.step_ms, tick=lambda name: log(f"  {name}"),
        )
    ]  # fmt: skip
    params = _params(opts, store, Manifest.load(path))
    table = summarize(measured, accuracy)
    return {"params": params, "table": table, "verdict": verdict(table, params)}


def _params(opts: DemoOptions, store: Any, manifest: Any) -> dict[str, Any]:
    """The result's ``params``: the store, the data set as made, what each row ran."""
    return {
        "store": store.as_dict(),
        "workload": opts.workload,
        "n": len(manifest),
        "mean_sample_bytes": round(manifest.total_bytes / len(manifest)),
        "cache_frac": opts.cache_frac,
        "repeats": opts.repeats,
        "epochs": opts.epochs,
        "step_ms": opts.step_ms,
        "workers": opts.workers,
        "batch_size": opts.batch_size,
        "sim_seeds": list(opts.seeds),
        "sim_epochs": opts.sim_epochs,
    }


def _label(store: Any) -> str:
    return str(store.preset) if store.preset else "custom"


def _store_moved(row: dict[str, Any], params: dict[str, Any]) -> str:
    """What the store moved an epoch, against the data set's size: bytes read ahead, by
    chunk or for a substitute are read all the same, so no share of them is "cached"."""
    data_mb = params["n"] * params["mean_sample_bytes"] / 1e6
    mb = row.get("mb_read_per_epoch") or 0.0
    return (
        f"the store moved {mb:.0f} MB an epoch ({mb / data_mb:.2f}x the {data_mb:.0f} MB data "
        f"set) in {row.get('requests_per_epoch') or 0:.0f} requests"
    )


def _why_slow(row: dict[str, Any], params: dict[str, Any]) -> str:
    """The figure that explains a losing row, most telling first."""
    if (row.get("sim_distinct_share") or 1.0) < MIN_COVERAGE:
        return f"it trains only {row['sim_distinct_share']:.0%} of the samples per epoch"
    if (row.get("read_per_delivered") or 0.0) > 1.5:
        return (
            f"it reads {row['read_per_delivered']:.1f}x the bytes it delivers "
            "(whole chunks over a limited link)"
        )
    if (row.get("sim_acc_delta_pt") or 0.0) < -acc_tolerance_pt(row):
        return f"its accuracy is {row['sim_acc_delta_pt']:+.1f} pt off full-data training"
    return _store_moved(row, params)


def verdict(table: list[dict[str, Any]], params: dict[str, Any]) -> str:
    """Which system wins here, by how much, at what accuracy and coverage; which loses, why.

    The winner is the fastest row that trains at least :data:`MIN_COVERAGE` of the
    samples per epoch and loses no accuracy beyond the noise
    (:func:`~hotset.bench.which.qualifies`; a cache that wins by training a subset has not won); the loser is the slowest
    system row.
    """
    rows = [r for r in table if r["system"] not in REFERENCES]
    if not rows:
        raise HotsetError("the demo measured no system")
    fair = sorted((r for r in rows if qualifies(r)), key=lambda r: -r["vs_torch"])
    loser = min(rows, key=lambda r: r["vs_torch"])
    store = params["store"]
    where = (
        f"On {store['preset'] or 'this store'} ({store['latency_ms']:g} ms per request, "
        f"{store['bandwidth_mb_s'] or 'unlimited'} MB/s, {store['max_concurrency']} in flight) "
        f"with {params['mean_sample_bytes'] / 1e3:.0f} kB samples and a "
        f"{params['cache_frac']:.0%} cache, "
    )
    if not fair:
        return where + "no system kept full coverage and accuracy; see the table."
    win = fair[0]
    text = (
        f"{where}{display_name(win['system'])} wins: {win['vs_torch']:.2f}x a DataLoader tuned "
        f"to the store's requests in flight "
        f"({win['vs_torch_min']:.2f}-{win['vs_torch_max']:.2f} over {win['repeats']} repeats), "
        f"{win['vs_no_io']:.2f} of the no-I/O ceiling; {_store_moved(win, params)}; "
        f"at {win.get('sim_acc_delta_pt') or 0.0:+.1f} pt accuracy (noise: "
        f"{win.get('sim_acc_noise_pt') or 0.0:.1f} pt) and "
        f"{win.get('sim_distinct_share') or 1.0:.0%} coverage."
    )
    if loser is not win:
        text += (
            f" {display_name(loser['system'])} is slowest at {loser['vs_torch']:.2f}x torch: "
            f"{_why_slow(loser, params)}."
        )
    return text
