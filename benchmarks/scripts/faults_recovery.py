"""The recovery rows of ``hotset bench faults`` (issue #41, part B), run on their own.

Why a script: the faults suite's other rows were committed before these existed, and
the whole suite takes long on a 2-core machine; this runs only
:func:`hotset.bench.faults_recovery.run_recovery` on the suite's own data set (2,000
PNG samples of ``make_synth`` seed 7, as ``hotset bench faults`` makes it) at the
suite's default ``runs=4`` (40 worker kills), and writes
``benchmarks/results/faults-recovery.json``:

    python benchmarks/scripts/faults_recovery.py

``hotset bench faults`` runs the same rows after its own.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

SUITE = "faults-recovery"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results") / f"{SUITE}.json")
    args = parser.parse_args()

    from hotset.bench.faults_recovery import run_recovery
    from hotset.bench.results import write_result_file
    from hotset.data import SynthConfig, make_synth

    start = time.perf_counter()

    def say(msg: str) -> None:
        print(f"[{time.perf_counter() - start:7.1f} s] {msg}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ds"
        make_synth(root, SynthConfig(n=args.n, image_size=8, classes=4, seed=7), workers=2)
        rows = run_recovery(root, runs=args.runs, say=say)
    command = f"python benchmarks/scripts/faults_recovery.py --n {args.n} --runs {args.runs}"
    result = {"n": args.n, "runs": args.runs, "table": rows}
    print(write_result_file(args.out, SUITE, result, command))


if __name__ == "__main__":  # a fork server's workers import this module: no run there
    main()
