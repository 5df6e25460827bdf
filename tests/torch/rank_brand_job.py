"""One rank of a data-parallel Brand job over a shared Redis namespace (no pytest here).

With a sixth argument ``sync`` the ranks all-reduce after every batch, as DDP's
gradient sync keeps them in step; without it they run free. Every rank checks that each batch holds the files' bytes, and writes what it
served per epoch, its report rows and Brand's counters of its own requests (in
all, and after each epoch).
"""

from __future__ import annotations

import json
import sys

import torch
import torch.distributed as dist

import hotset


def main() -> None:
    root, out, url, epochs, workers = (
        sys.argv[1],
        sys.argv[2],
        sys.argv[3],
        *map(int, sys.argv[4:6]),
    )
    #: "sync": an all-reduce after every batch, as DDP's gradient sync keeps ranks in step
    sync = sys.argv[6:7] == ["sync"]
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    data = hotset.open_dataset(root, decode="bytes")
    truth = [data.store.read(k) for k in data.manifest.keys]
    served, counts = [], []
    with hotset.loader(
        data,
        system="brand",
        cache=url,
        cache_bytes="40%",
        namespace=f"brand-ddp-{world}-{workers}",
        batch_size=8,
        seed=4,
        num_workers=workers,
    ) as loader:
        for epoch in range(epochs):
            loader.set_epoch(epoch)
            mine: list[int] = []
            for x, _, ids, _ in loader:
                assert x == [truth[i] for i in ids.tolist()], "bytes differ from the files"
                mine += ids.tolist()
                if sync:
                    dist.all_reduce(torch.zeros(1))
            served.append(mine)
            counts.append(dict(loader.system.policy.counts))  # type: ignore[attr-defined]
        policy = loader.system.policy
        result = {
            "served": served,
            "rows": loader.report(),
            "counts": dict(policy.counts),  # type: ignore[attr-defined]
            "epoch_counts": counts,  # cumulative, after each epoch
            "remote_memory_peak": policy.remote_memory_peak,  # type: ignore[attr-defined]
            "capacity": policy.budget.capacity_bytes,
        }
    with open(f"{out}/rank{rank}.json", "w") as fh:
        json.dump(result, fh, default=str)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
