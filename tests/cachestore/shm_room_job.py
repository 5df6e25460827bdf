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


def _say(line: str) -> None:
    """One write per line: two ranks share the pipe, and print's pieces interleaved."""
    os.write(1, (line + "\n").encode())


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
            _say(f"OK {sum(len(b[2]) for b in ld)}")
    except HotsetError as exc:
        _say(f"HOTSET {exc}")
    if ranked:
        dist.barrier()
    _say(f"LEFT {sorted(os.listdir('/dev/shm'))}")
    if ranked:
        # A group left to the interpreter's exit tears gloo's threads down unjoined:
        # a rank then aborted ("terminate called without an active exception") in a
        # full run, after it had refused the cache as it should.
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
