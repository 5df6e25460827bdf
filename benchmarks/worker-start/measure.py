"""Time each epoch's first batch under ``torchrun --standalone --nproc_per_node 2``.

Runs ``first_batch_job.py`` (2 ranks, a loader with 2 workers per rank over the
data set) ``--repeats`` times for each start method asked, and writes a JSON
file: every run's per-rank, per-epoch wait from ``iter()`` to the first batch,
and per epoch their median and range over runs and ranks; with the command, the
machine's load (``uptime`` before and after) and the versions. Prints a table.

    python benchmarks/worker-start/measure.py --data /tmp/ws-synth \
        --out benchmarks/worker-start/after.json --modes default,fork

It measures whatever ``hotset`` the Python imports (``PYTHONPATH`` decides),
so the same script times the code before and after a change.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _one_run(
    data: str, epochs: int, method: str, persistent: str, setup_s: float
) -> list[dict[str, object]]:
    """One torchrun job; each rank's record."""
    with tempfile.TemporaryDirectory() as out:
        argv = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            str(HERE / "first_batch_job.py"),
            data,
            out,
            str(epochs),
            method,
            persistent,
            str(setup_s),
        ]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise SystemExit(f"torchrun failed:\n{proc.stderr[-3000:]}")
        return [json.loads(Path(out, f"rank{r}.json").read_text()) for r in range(2)]


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
    }


def _mode(data: str, epochs: int, repeats: int, mode: str, setup_s: float) -> dict[str, object]:
    """``mode`` is a start method ("default": none asked), optionally ``:persistent``."""
    method, _, persistent = mode.partition(":")
    runs = [
        _one_run(data, epochs, method, persistent or "default", setup_s) for _ in range(repeats)
    ]
    per_epoch = [
        _summary([float(r["first_batch_s"][e]) for run in runs for r in run])  # type: ignore[index]
        for e in range(epochs)
    ]
    build = _summary([float(r["build_s"]) for run in runs for r in run])  # type: ignore[arg-type]
    return {
        "mode": mode,
        "context": runs[0][0]["context"],
        "first_batch_s": per_epoch,
        "build_s": build,
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="a data set (hotset data synth)")
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--modes",
        default="default,fork",
        help="start methods, comma-separated (default: none asked), each optionally "
        "with :true or :false for persistent_workers",
    )
    parser.add_argument(
        "--setup-s",
        type=float,
        default=0.0,
        help="seconds each rank sleeps between building the loader and its first epoch "
        "(the script's own set-up)",
    )
    parser.add_argument("--label", default="", help="what code was measured (e.g. a commit)")
    args = parser.parse_args()
    import torch

    import hotset

    load_before = _uptime()
    started = time.time()
    modes = [
        _mode(args.data, args.epochs, args.repeats, m, args.setup_s) for m in args.modes.split(",")
    ]
    result = {
        "command": "python " + " ".join(sys.argv),
        "label": args.label,
        "hotset": str(Path(hotset.__file__).parent),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpus": os.cpu_count(),
        "uptime_before": load_before,
        "uptime_after": _uptime(),
        "seconds": round(time.time() - started, 1),
        "world": 2,
        "num_workers": 2,
        "epochs": args.epochs,
        "setup_s": args.setup_s,
        "repeats": args.repeats,
        "modes": modes,
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    for m in modes:
        cells = "  ".join(
            f"e{e}: {s['median']:.2f} ({s['min']:.2f}-{s['max']:.2f})"
            for e, s in enumerate(m["first_batch_s"])  # type: ignore[arg-type]
        )
        print(f"{m['mode']:<22} [{m['context']}] build {m['build_s']['median']:.2f}s  {cells}")  # type: ignore[index]
    print(f"load: {load_before} -> {result['uptime_after']}")


if __name__ == "__main__":
    main()
