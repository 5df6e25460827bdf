"""One rank of an ImPACT job re-evaluating S (run by tests under torch.distributed.run).

Trains nothing: training losses are a fixed function of (id, epoch) below 1.1, and
the forward pass given to ``evaluate_with`` returns a different fixed function of
(id, epoch) above 5, so the test can tell in any rank's table which losses came
from a re-evaluation, and by which epoch's. Writes what this rank re-evaluated, asked
for and was served per epoch, S as its policy knows it, and its table's losses at the end.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import torch
import torch.distributed as dist

import hotset

EPOCHS = 7
OPTIONS = {"window": 32, "max_warm_up": 3}  # 200 ids: a short window, a short warm-up


def eval_loss(ids: np.ndarray, epoch: int) -> np.ndarray:
    """What the forward pass of ``epoch``'s re-evaluation says (always above 5)."""
    return 5.0 + ((ids * 31 + epoch * 7) % 97) / 100.0


def main() -> None:
    root, out = sys.argv[1], sys.argv[2]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    data = hotset.open_dataset(root, decode="bytes")
    evaluated: list[list[int]] = []
    served: list[list[int]] = []
    requested: list[list[int]] = []
    s_ids: list[list[int]] = []
    epoch_now = [0]

    def forward(_x: object, _y: object, ids: torch.Tensor) -> torch.Tensor:
        evaluated[-1] += ids.tolist()
        return torch.from_numpy(eval_loss(ids.numpy(), epoch_now[0]))

    with hotset.loader(
        data, system="impact", system_options=OPTIONS, cache="40%", batch_size=16, seed=5
    ) as loader:
        loader.evaluate_with(forward)
        policy = loader.system.policy
        for epoch in range(EPOCHS + 1):
            epoch_now[0] = epoch
            evaluated.append([])
            loader.set_epoch(epoch)
            mine: list[int] = []
            for i, (_, _, ids, _) in enumerate(loader):
                if epoch == EPOCHS and i == 0:
                    break  # iter() merged the last epoch and re-evaluated S: stop here
                losses = ((ids * 2654435761 + epoch * 40503) % 1000).double() / 1000 + 0.1
                loader.update(ids, losses)
                mine += ids.tolist()
            served.append(mine)
            requested.append([int(row[0]) for row in loader.decisions().rows()])
            known = policy.tracker.s_ids  # type: ignore[attr-defined]
            s_ids.append([] if known is None else [int(s) for s in known])
        losses = loader.system.table.snapshot().losses
        evaluate_reads = loader.evaluate_reads
    result = {
        "rank": rank,
        "evaluated": evaluated,
        "served": served,
        "requested": requested,
        "evaluate_reads": evaluate_reads,
        "s_ids": s_ids,
        "losses": [None if np.isnan(v) else round(float(v), 12) for v in losses],
    }
    with open(f"{out}/rank{rank}.json", "w") as fh:
        json.dump(result, fh)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
