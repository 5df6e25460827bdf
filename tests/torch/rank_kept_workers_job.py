"""One rank of a DDP job whose loader has 2 workers (run under torch.distributed.run).

Every epoch begins after a collective, as in data-parallel training, and the
loader is left to choose how workers start (a fork server where a fork could
hang: Python 3.11 < 3.11.10). Each batch's ``x`` is worker_probe's record (the
worker's pid, the samples' bytes); the bytes are checked against the files here.
``full`` runs 3 epochs; ``first`` runs epoch 0 and 3 batches of epoch 1, then
saves this rank's state and exits; ``second`` is a fresh process that loads it
and finishes. No pytest here.
"""

from __future__ import annotations

import json
import sys

import torch
import torch.distributed as dist
from worker_probe import probe_collate

import hotset


def main() -> None:
    root, out, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    data = hotset.open_dataset(root, decode="bytes")
    truth = [data.store.read(k) for k in data.manifest.keys]
    served: dict[int, list[int]] = {}
    pids: dict[int, list[int]] = {}
    loader = hotset.loader(
        data, system="lru", cache="30%", batch_size=16, seed=5, num_workers=2,
        collate_inputs=probe_collate,
    )  # fmt: skip
    with loader:
        if mode == "second":
            loader.load_state_dict(torch.load(f"{out}/state{rank}.pt"))
        for epoch in range(1 if mode == "second" else 0, 3):
            dist.all_reduce(torch.ones(1))  # the collective a DDP step ends with
            loader.set_epoch(epoch)
            served[epoch], seen = [], set()
            for i, (x, _, ids, _) in enumerate(loader):
                assert x["bytes"] == [truth[s] for s in ids.tolist()], f"epoch {epoch}"
                served[epoch] += ids.tolist()
                seen.add(x["pid"])
                if mode == "first" and epoch == 1 and i == 2:
                    torch.save(loader.state_dict(), f"{out}/state{rank}.pt")
                    break
            pids[epoch] = sorted(seen)
            if mode == "first" and epoch == 1:
                break
        context = loader.multiprocessing_context
    with open(f"{out}/{mode}{rank}.json", "w") as fh:
        json.dump({"context": context, "served": served, "pids": pids}, fh)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
