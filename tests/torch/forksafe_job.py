"""One process in a real gloo process group (world 1) iterating a loader with workers.

Run by tests/torch/test_torch_forksafe.py (no pytest here). argv: data set, an
out file, and the start method to ask for ("default": none). Each epoch begins
right after a collective, as in a data-parallel job, and the file records the
start method the loader chose, the warnings it gave and what each epoch served.
"""

from __future__ import annotations

import json
import sys
import warnings

import torch.distributed as dist

import hotset


def main() -> None:
    root, out, asked = sys.argv[1:4]
    dist.init_process_group("gloo", init_method=f"file://{out}.store", rank=0, world_size=1)
    data = hotset.open_dataset(root, decode="bytes")
    context = None if asked == "default" else asked
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loader = hotset.loader(
            data,
            system="lru",
            cache="30%",
            batch_size=16,
            num_workers=2,
            multiprocessing_context=context,
        )
    served: list[list[int]] = []
    with loader:
        for epoch in range(2):
            gathered: list[object] = [None]
            dist.all_gather_object(gathered, {"epoch": epoch})  # the collective a DDP job runs
            loader.set_epoch(epoch)
            served.append(sorted(i for _, _, ids, _ in loader for i in ids.tolist()))
    record = {
        "context": loader.multiprocessing_context,
        "warnings": [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)],
        "served": served,
    }
    with open(out, "w") as fh:
        json.dump(record, fh)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
