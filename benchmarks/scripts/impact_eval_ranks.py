"""ImPACT's re-evaluation of S per data-parallel rank: samples and forward-pass time.

Why: ImPACT §III-E has each node buffer and re-evaluate a non-overlapping part of
the set S; before issue #30 every rank re-evaluated all of S. This measures what
one rank pays per epoch for it -- samples re-evaluated and the seconds of its
forward pass -- with 1, 2 and 4 ranks (gloo on CPU, real DDP training of the
examples' digits net), for the code under ``--src`` (run it once per code tree).

    python benchmarks/scripts/impact_eval_ranks.py --label after --src src --worlds 1,2,4

writes ``benchmarks/results/impact-eval-ranks.json``. Rows already there under other
labels are kept, so a "before" run from an older checkout (``--src /tmp/old/src``)
lands beside the "after" one. Only the
public API is used (``hotset.loader``, ``evaluate_with``), so both trees run it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EPOCHS = 12
SUITE = "impact-eval-ranks"
SEED = 3


def _rank(root: str, out: str, cache: str, epochs: int) -> None:
    """One rank: DDP training with impact, its forward pass timed per epoch."""
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch import nn, optim
    from torch.nn.parallel import DistributedDataParallel

    import hotset

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1)
    torch.set_num_threads(1)
    net = nn.Sequential(
        nn.Flatten(),
        nn.Linear(64, 256),
        nn.ReLU(),
        nn.Linear(256, 256),
        nn.ReLU(),
        nn.Linear(256, 10),
        nn.LogSoftmax(dim=1),
    )
    model = DistributedDataParallel(net)
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = hotset.open_dataset(root, decode="image")
    stats: list[dict[str, float]] = []

    def forward(x: torch.Tensor, y: torch.Tensor, _ids: torch.Tensor) -> torch.Tensor:
        start = time.perf_counter()
        with torch.no_grad():
            loss = F.nll_loss(net(x), y, reduction="none")
        stats[-1]["evaluated"] += len(y)
        stats[-1]["forward_s"] += time.perf_counter() - start
        return loss

    def timed(evaluate):  # the loader's whole step: bytes from the cache, decode, forward
        def run(ids):
            start = time.perf_counter()
            try:
                return evaluate(ids)
            finally:
                stats[-1]["evaluate_s"] += time.perf_counter() - start

        return run

    with hotset.loader(data, system="impact", cache=cache, batch_size=64, seed=SEED) as loader:
        loader.evaluate_with(forward)
        loader._evaluate = timed(loader._evaluate)  # private, in both code trees
        for epoch in range(epochs):
            stats.append({"epoch": epoch, "evaluated": 0, "forward_s": 0.0, "evaluate_s": 0.0})
            loader.set_epoch(epoch)
            for x, y, ids, w in loader:
                opt.zero_grad()
                loss = F.nll_loss(model(x), y, reduction="none")
                loader.update(ids, loss.detach())
                (loss * w).mean().backward()
                opt.step()
            stats[-1]["evaluate_reads"] = loader.evaluate_reads
            known = loader.system.policy.tracker.s_ids
            stats[-1]["s_size"] = 0 if known is None else len(known)
    Path(out, f"rank{rank}.json").write_text(
        json.dumps({"rank": rank, "world": world, "epochs": stats})
    )
    dist.destroy_process_group()


def _job(src: str, root: str, world: int, cache: str, epochs: int) -> list[dict]:
    with tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "PYTHONPATH": str(Path(src).resolve())}
        subprocess.run(
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--standalone",
                "--nproc_per_node",
                str(world),
                __file__,
                "--rank-job",
                root,
                out,
                cache,
                str(epochs),
            ],
            check=True,
            env=env,
        )
        return [json.loads(Path(out, f"rank{r}.json").read_text()) for r in range(world)]


def _rows(label: str, world: int, ranks: list[dict]) -> list[dict]:
    """One row per rank over the epochs after the warm-up (S known): the mean count, and
    the median times (this machine is shared: a mean would follow its spikes)."""
    from statistics import median

    rows = []
    for r in ranks:
        after = [e for e in r["epochs"] if e["evaluated"]]
        rows.append(
            {
                "code": label,
                "world": world,
                "rank": r["rank"],
                "s_size": max(e["s_size"] for e in r["epochs"]),
                "epochs_evaluating": len(after),
                "evaluated_per_epoch": round(
                    sum(e["evaluated"] for e in after) / max(1, len(after)), 1
                ),
                "forward_ms_median": round(
                    1000 * median([e["forward_s"] for e in after] or [0]), 3
                ),
                "evaluate_ms_median": round(
                    1000 * median([e["evaluate_s"] for e in after] or [0]), 3
                ),
                "evaluate_reads": r["epochs"][-1]["evaluate_reads"],
                "per_epoch_evaluated": [e["evaluated"] for e in r["epochs"]],
            }
        )
    return rows


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--rank-job":
        root, out, cache, epochs = sys.argv[2:6]
        _rank(root, out, cache, int(epochs))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--label", required=True)
    parser.add_argument("--src", required=True, help="the src/ directory of the code to measure")
    parser.add_argument("--worlds", default="1,2,4")
    parser.add_argument("--cache", default="40%")
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument(
        "--data", default=os.path.join(tempfile.gettempdir(), f"hotset-digits-{os.getuid()}")
    )
    parser.add_argument(
        "--root", default=".", help="the checkout whose benchmarks/results to write"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.src).resolve()))
    from hotset.data import make_digits

    if not Path(args.data, "manifest.csv").exists():
        make_digits(args.data, force=True)
    from hotset.bench.results import write_result

    out = Path(args.root, "benchmarks", "results", f"{SUITE}.json")
    old = json.loads(out.read_text())["result"] if out.exists() else {"table": [], "commands": {}}
    rows = [r for r in old["table"] if r["code"] != args.label]
    runs = [r for r in old.get("runs", []) if r["code"] != args.label]
    for world in [int(w) for w in args.worlds.split(",")]:
        got = _rows(args.label, world, _job(args.src, args.data, world, args.cache, args.epochs))
        runs += [{k: r[k] for k in ("code", "world", "rank", "per_epoch_evaluated")} for r in got]
        rows += [{k: v for k, v in r.items() if k != "per_epoch_evaluated"} for r in got]
    command = "python " + " ".join(sys.argv)
    commands = {**old.get("commands", {}), args.label: command}
    result = {
        "table": rows,
        "runs": runs,
        "commands": commands,
        "notes": [
            "ImPACT: what one rank pays per epoch to re-evaluate S once the warm-up ended "
            "(over those epochs): samples (evaluated_per_epoch, mean), the forward pass "
            "(forward_ms_median: the median epoch's) and the loader's whole step, bytes from "
            "the cache, decode and forward (evaluate_ms_median); times on a 2-core machine "
            "shared with other jobs, so noisy; evaluate_reads: samples read from storage because the "
            "cache lacked them, over the run. Measured with gloo on CPU, one thread per rank, "
            "DDP training of a 64-1024-1024-10 MLP on sklearn digits (1,797 samples), "
            f"cache {args.cache} of one node shared by its ranks, batch 64, {args.epochs} "
            f"epochs, seed {SEED}. code=before: every rank re-evaluates all of S; "
            "code=after: each rank its part, sorted(S)[rank::world]. S is sized to one "
            "rank's share of the node's cache, so it shrinks as ranks are added.",
            *[f"{label}: {cmd}" for label, cmd in commands.items()],
        ],
    }
    write_result(SUITE, result, root=Path(args.root), command=" ; ".join(commands.values()))
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()
