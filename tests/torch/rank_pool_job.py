"""One rank of a data-parallel job on one pooled Redis Cluster namespace (no pytest here).

Checks what only a rank can see while the job runs -- every byte served equals
the file's, the pool's byte counter never exceeds the job's budget at an epoch
end -- and writes what it served and its report rows for the test to compare.
"""

from __future__ import annotations

import json
import sys

import torch.distributed as dist

import hotset


def main() -> None:
    root, out, url, system, epochs = sys.argv[1:6]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    data = hotset.open_dataset(root, decode="bytes")
    truth = [data.store.read(k) for k in data.manifest.keys]
    served, used = [], []
    with hotset.loader(
        data,
        system=system,
        cache=url,
        cache_bytes="40%",
        namespace=f"ddp-pool-{system}",  # fresh per test: shared ones are never cleared
        batch_size=16,
        seed=3,
        num_workers=1,
    ) as loader:
        for epoch in range(int(epochs)):
            loader.set_epoch(epoch)
            mine: list[int] = []
            for x, _, ids, _ in loader:
                assert x == [truth[i] for i in ids.tolist()], "bytes differ from the files"
                loader.update(ids, (ids % 7).float() + 0.5)
                mine += ids.tolist()
            served.append(mine)
            assert loader.cache is not None
            used.append(loader.cache.used_bytes())
        capacity = loader.capacity_bytes
        rows = loader.report()
    result = {"served": served, "used": used, "capacity": capacity, "rows": rows}
    with open(f"{out}/rank{rank}.json", "w") as fh:
        json.dump(result, fh, default=str)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
