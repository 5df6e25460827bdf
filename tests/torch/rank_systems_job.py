"""One rank running every loader-capable system for 2 epochs, with and without workers.

Run under torch.distributed.run by tests (no pytest here). For each (system,
workers) it writes what this rank served per epoch and, for a learning system,
its importance scores after the epochs, so the test can compare the ranks.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import torch.distributed as dist

import hotset
from hotset.systems.registry import capabilities_of, system_names
from hotset.torch.dataset import HotsetDataset


def _run(data: HotsetDataset, name: str, workers: int) -> dict[str, object]:
    """Two epochs of ``name``: what this rank served per epoch, and its scores (if it learns)."""
    served: list[list[int]] = []
    with hotset.loader(
        data, system=name, cache="30%", batch_size=16, seed=2, num_workers=workers
    ) as loader:
        for epoch in range(2):
            loader.set_epoch(epoch)
            mine: list[int] = []
            for _, _, ids, _ in loader:
                loader.update(ids, (ids % 5).float() + 0.25)
                mine += ids.tolist()
            served.append(mine)
        loader.set_epoch(2)
        next(iter(loader))  # iter() of the next epoch closes (and merges) the last
        table = getattr(loader.system, "table", None)
        scores = [] if table is None else np.round(table.snapshot().scores, 12).tolist()
    return {"served": served, "scores": scores}


def main() -> None:
    root, packed, out = sys.argv[1:4]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    results: dict[str, dict[str, object]] = {}
    for name in system_names():
        caps = capabilities_of(name)
        if caps.needs_future or not caps.realizable:
            continue  # offline bounds: the loader refuses them, with a test of its own
        if caps.plans_world:
            continue  # one shared cache for the job (Brand): its own test gives it Redis
        data = hotset.open_dataset(packed if caps.reads_units else root, decode="bytes")
        for workers in (0, 2):
            # in the rank's own log: a failure or a hang shows which run it was in
            print(f"rank {rank}: {name} with {workers} workers", file=sys.stderr, flush=True)
            results[f"{name}/{workers}"] = _run(data, name, workers)
    with open(f"{out}/rank{rank}.json", "w") as fh:
        json.dump(results, fh)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
