"""Build a loader whose embedded cache may not fit /dev/shm (no pytest here).

Run by tests/cachestore/test_cachestore_shm_room.py inside a mount namespace whose
/dev/shm is a small tmpfs: ``DATA WORKERS CACHE`` alone, or under torchrun (a gloo
group: every local rank shares one node cache). Prints ``OK <samples>`` or
``HOTSET <message>``, then ``LEFT <names in /dev/shm>``, and exits 0 either way.
"""

from __future__ import annotations

import os
import sys

import hotset
from hotset.errors import HotsetError


def main() -> None:
    data, workers, cache = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    ranked = "RANK" in os.environ
    if ranked:
        import torch.distributed as dist

        dist.init_process_group("gloo")
    try:
        ds = hotset.open_dataset(data)
        with hotset.loader(ds, system="lru", cache=cache, num_workers=workers, batch_size=8) as ld:
            ld.set_epoch(0)
            print("OK", sum(len(b[2]) for b in ld), flush=True)
    except HotsetError as exc:
        print("HOTSET", exc, flush=True)
    if ranked:
        dist.barrier()
    print("LEFT", sorted(os.listdir("/dev/shm")), flush=True)


if __name__ == "__main__":
    main()
