"""One rank of a job whose local ranks share the node's embedded cache (no pytest here).

Run under torch.distributed.run by tests/torch/test_torch_node_cache.py:

``run ROOT OUT EPOCHS``
    for each system of :data:`SYSTEMS` and 0 and 2 DataLoader workers, a loader
    over ROOT with the embedded cache, ``EPOCHS`` epochs; per epoch the ids this
    rank trained, how many of the bytes it was handed do not hash to the
    manifest's xxh3 (the loader runs with ``verify=False``: it trusts the cache,
    so the check here is the only one), and what ``/dev/shm`` holds for the job.
``full|first|second ROOT OUT`` (or ``full,first``: one, then the other)
    the checkpoint round trip of ``rank_resume_job.py`` (SHADE, no workers):
    ``first`` stops 3 batches into epoch 1 and saves, ``second`` resumes.

``/dev/shm`` for the job: every rank names the segment its loader's cache is
in, all are gathered, and rank 0 adds up each distinct segment's size
(``st_size``), the pages it holds (``st_blocks * 512``) and the payload bytes
in it -- one segment per rank or one per node, whatever the code under test does.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import torch
import torch.distributed as dist
import xxhash

import hotset

SYSTEMS = ("minio", "lru")
CACHE = "30%"
BATCH = 8


def shm_use(loader: Any) -> dict[str, Any]:
    """What /dev/shm holds for the job now (every rank calls it; rank 0's answer counts)."""
    cache = loader.cache
    mine = (cache.name, cache.used_bytes())
    parts: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(parts, mine)
    segments = dict(parts)  # name -> payload bytes (one entry per distinct segment)
    sizes = blocks = 0
    for name in segments:
        st = os.stat(f"/dev/shm/{name}")
        sizes += st.st_size
        blocks += st.st_blocks * 512
    dist.barrier()  # no rank closes its loader while another looks
    return {
        "segments": sorted(segments),
        "size_bytes": sizes,
        "resident_bytes": blocks,
        "payload_bytes": sum(segments.values()),
        "capacity": loader.capacity_bytes,
    }


def bad_bytes(x: list[bytes], ids: torch.Tensor, hashes: list[str]) -> int:
    """How many samples of the batch are not the manifest's bytes."""
    return sum(
        xxhash.xxh3_64_hexdigest(b) != hashes[i] for b, i in zip(x, ids.tolist(), strict=True)
    )


def run(root: str, out: str, epochs: int) -> None:
    rank = dist.get_rank()
    data = hotset.open_dataset(root, decode="bytes")
    hashes = list(data.manifest.hashes)
    results: dict[str, Any] = {}
    for system in SYSTEMS:
        for workers in (0, 2):
            loader = hotset.loader(
                data,
                system=system,
                cache=CACHE,
                batch_size=BATCH,
                seed=5,
                num_workers=workers,
                verify=False,
            )
            served, bad, shm = [], 0, []
            with loader:
                for epoch in range(epochs):
                    loader.set_epoch(epoch)
                    mine: list[int] = []
                    for x, _, ids, _ in loader:
                        bad += bad_bytes(x, ids, hashes)
                        mine += ids.tolist()
                    served.append(mine)
                    shm.append(shm_use(loader))
                rows = loader.report()
                names = shm[-1]["segments"]
            dist.barrier()  # every rank closed its loader
            left = [n for n in names if os.path.exists(f"/dev/shm/{n}")]
            results[f"{system}/{workers}"] = {
                "served": served,
                "bad": bad,
                "shm": shm,
                "left": left,
                "rows": rows,
            }
    with open(f"{out}/rank{rank}.json", "w") as fh:
        json.dump(results, fh)


def _losses(ids: torch.Tensor, epoch: int) -> torch.Tensor:
    return ((ids * 2654435761 + epoch * 40503) % 1000).float() / 1000 + 0.1


def resume(mode: str, root: str, out: str) -> None:
    rank = dist.get_rank()
    data = hotset.open_dataset(root, decode="bytes")
    hashes = list(data.manifest.hashes)
    served: dict[int, list[int]] = {}
    bad = 0
    loader = hotset.loader(
        data, system="shade", cache=CACHE, batch_size=BATCH, seed=5, verify=False
    )
    with loader:
        if mode == "second":
            loader.load_state_dict(torch.load(f"{out}/state{rank}.pt", weights_only=False))
        for epoch in range(1 if mode == "second" else 0, 3):
            loader.set_epoch(epoch)
            served[epoch] = []
            for i, (x, _, ids, _) in enumerate(loader):
                bad += bad_bytes(x, ids, hashes)
                loader.update(ids, _losses(ids, epoch))
                served[epoch] += ids.tolist()
                if mode == "first" and epoch == 1 and i == 2:
                    torch.save(loader.state_dict(), f"{out}/state{rank}.pt")
                    break
            if mode == "first" and epoch == 1:
                break
        shm = shm_use(loader)
    with open(f"{out}/{mode}{rank}.json", "w") as fh:
        json.dump({"served": served, "bad": bad, "shm": shm}, fh)


def main() -> None:
    mode = sys.argv[1]
    dist.init_process_group("gloo")
    if mode == "run":
        run(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        for part in mode.split(","):  # "full,first": two loaders, one after the other
            resume(part, sys.argv[2], sys.argv[3])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
