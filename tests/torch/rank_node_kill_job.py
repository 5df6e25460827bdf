"""One rank of a job sharing the node's cache, one rank of which is SIGKILLed mid-write.

Started by tests/torch/test_torch_node_cache.py as ``WORLD`` plain processes
(no torchrun: its agent would stop every rank once one dies) that meet on a
TCPStore the test process holds, so that the store outlives the rank killed.

Every rank trains epoch 0 and measures ``/dev/shm`` for the job (all alive).
In epoch 1 the victim, after 3 batches, starts a put into the shared cache and
is SIGKILLed inside it (the others wait there until it is dead, so what follows
comes after the death) -- its slot's counter odd, its arena bytes taken, the
writer mark set, the write lock held: what a rank killed in the middle of a
write leaves. The others go on, finish epoch 1, train epoch 2 (its DataLoader
workers attach to the cache by name, after the death of the rank that created
it), check every sample's bytes against the manifest (the loader runs with
``verify=False``, trusting the cache) and close. No collective runs after the
kill. No pytest here.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

import torch.distributed as dist
from rank_node_job import BATCH, CACHE, bad_bytes, shm_use

import hotset
from hotset.cachestore import shm_alloc
from hotset.cachestore.base import CacheKey
from hotset.liveness import owner_state


def die_inside_a_put(loader: Any, data: Any, hashes: list[str]) -> None:
    """Take one entry out and put it back, dying once its extent is taken (the room
    it left makes sure the put gets that far, however full the cache)."""
    cache = loader.cache
    sid = next(i for i in range(len(hashes)) if cache.contains(CacheKey(i, hashes[i])))
    cache.delete_many([CacheKey(sid, hashes[sid])])
    blob = data.store.read(data.manifest.keys[sid])
    real_alloc = shm_alloc.alloc

    def alloc_then_die(seg: Any, size: int) -> int:
        real_alloc(seg, size)
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")

    shm_alloc.alloc = alloc_then_die
    cache.put_many([(CacheKey(sid, hashes[sid]), blob)])


def wait_for_death(store: Any) -> None:
    """Until the victim is dead: the survivors' next batches come after it, always."""
    pid = int(store.get("victim"))  # blocks until the victim sets it
    deadline = time.monotonic() + 60
    while owner_state(pid, 0, 0)[0] != "dead":  # a zombie counts as dead
        assert time.monotonic() < deadline, f"victim {pid} still alive"
        time.sleep(0.02)


def main() -> None:
    root, out, port, rank, world, victim = sys.argv[1:7]
    rank_i, world_i = int(rank), int(world)
    store = dist.TCPStore("127.0.0.1", int(port), world_i, is_master=False)
    dist.init_process_group("gloo", store=store, rank=rank_i, world_size=world_i)
    data = hotset.open_dataset(root, decode="bytes")
    hashes = list(data.manifest.hashes)
    served: list[list[int]] = []
    bad = 0
    loader = hotset.loader(
        data, system="lru", cache=CACHE, batch_size=BATCH, seed=5, num_workers=2, verify=False
    )
    with loader:
        for epoch in range(3):
            loader.set_epoch(epoch)
            mine: list[int] = []
            for i, (x, _, ids, _) in enumerate(loader):
                bad += bad_bytes(x, ids, hashes)
                mine += ids.tolist()
                if epoch == 1 and i == 2:
                    if rank_i == int(victim):
                        store.set("victim", str(os.getpid()))
                        die_inside_a_put(loader, data, hashes)
                    wait_for_death(store)
            served.append(mine)
            if epoch == 0:
                shm = shm_use(loader)  # the last collective: every rank is alive
        rows = loader.report()
        name = loader.cache.name
    result = {"served": served, "bad": bad, "shm": shm, "rows": rows, "segment": name}
    with open(f"{out}/rank{rank_i}.json", "w") as fh:
        json.dump(result, fh)
    # Torn down here, not by the interpreter's exit, which leaves gloo's threads
    # unjoined and may abort a rank that did everything right (tests/cachestore's
    # shm_room_job did, in a full run). Local to this rank: the dead one is not asked.
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
