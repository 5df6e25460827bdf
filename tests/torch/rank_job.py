"""One rank of a data-parallel job (run by tests under torch.distributed.run; no pytest here).

Trains nothing: losses are a fixed function of (id, epoch), so every rank would
give the same loss for the same id, and any difference between the ranks'
tables can only come from who trained what.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import torch.distributed as dist

import hotset
from hotset.samplers.base import EpochContext


def main() -> None:
    root, out, system, epochs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    data = hotset.open_dataset(root, decode="bytes")
    served = []
    # 40%: split between up to 4 ranks on this node, each share still holds a batch of 16
    with hotset.loader(data, system=system, cache="40%", batch_size=16, seed=5) as loader:
        assert (loader.rank, loader.world_size) == (rank, world)  # taken from the group
        for epoch in range(epochs + 1):
            loader.set_epoch(epoch)
            mine: list[int] = []
            for i, (_, _, ids, _) in enumerate(loader):
                if epoch == epochs and i == 0:
                    break  # iter() of this epoch closed the last one: stop here
                losses = ((ids * 2654435761 + epoch * 40503) % 1000).float() / 1000 + 0.1
                loader.update(ids, losses)
                mine += ids.tolist()
            if epoch < epochs:
                loader.record_validation(0.1 * (epoch + 1) + 0.01 * rank)
                served.append(mine)
        system_ = loader.system
        snapshot = system_.table.snapshot()
        ctx = EpochContext(
            epoch=epochs + 1,
            world_size=world,
            scores=snapshot.scores,
            val_accuracy=tuple(system_.val_accuracy),
            train_loss=tuple(system_.train_loss),
        )
        draw = system_.sampler.global_draw(ctx) if hasattr(system_.sampler, "global_draw") else []
    result = {
        "rank": rank,
        "scores": np.round(snapshot.scores, 12).tolist(),
        "train_loss": system_.train_loss,
        "val_accuracy": system_.val_accuracy,
        "draw": [int(x) for x in draw],
        "served": served,
    }
    with open(f"{out}/rank{rank}.json", "w") as fh:
        json.dump(result, fh)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
