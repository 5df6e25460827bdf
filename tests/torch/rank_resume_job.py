"""One rank of a DDP job that checkpoints mid-epoch and resumes (run under torch.distributed.run).

``full`` runs 3 epochs; ``first`` runs epoch 0 and 3 batches of epoch 1, then
saves this rank's ``state_dict`` and exits; ``second`` is a fresh process that
loads it and finishes. Losses are a fixed function of (id, epoch). No pytest here.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import torch
import torch.distributed as dist

import hotset


def _losses(ids: torch.Tensor, epoch: int) -> torch.Tensor:
    return ((ids * 2654435761 + epoch * 40503) % 1000).float() / 1000 + 0.1


def main() -> None:
    root, out, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    data = hotset.open_dataset(root, decode="bytes")
    served: dict[int, list[int]] = {}
    with hotset.loader(data, system="shade", cache="30%", batch_size=16, seed=5) as loader:
        if mode == "second":
            loader.load_state_dict(torch.load(f"{out}/state{rank}.pt"))  # weights_only=True
        start = 1 if mode == "second" else 0
        for epoch in range(start, 3):
            loader.set_epoch(epoch)
            served[epoch] = []
            for i, (_, _, ids, _) in enumerate(loader):
                loader.update(ids, _losses(ids, epoch))
                served[epoch] += ids.tolist()
                if mode == "first" and epoch == 1 and i == 2:
                    torch.save(loader.state_dict(), f"{out}/state{rank}.pt")
                    break
            if mode == "first" and epoch == 1:
                break
        loader.set_epoch(3)
        next(iter(loader), None)  # closes epoch 2 (its merge across ranks)
        scores = np.round(loader.system.table.snapshot().scores, 12).tolist()
    with open(f"{out}/{mode}{rank}.json", "w") as fh:
        json.dump({"served": served, "scores": scores if mode != "first" else []}, fh)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
