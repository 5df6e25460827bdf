"""A loader whose ``read=`` is a lambda, its workers started as nobody asked the loader to.

Run by tests/torch/test_torch_picklehint.py (no pytest here). argv: data set, an
out file, and how workers start: ``group`` runs in a real gloo process group
(world 1), where the loader picks the start method itself
(:mod:`hotset.torch.forksafe`: a fork server where a fork could hang, as under
torchrun); ``spawn-default`` makes spawn this Python's default
(``multiprocessing.set_start_method``). The file records the method the loader
gave the DataLoader and what iterating the loader raised.
"""

from __future__ import annotations

import json
import multiprocessing
import sys
import warnings
from pathlib import Path

import torch.distributed as dist

import hotset


def main() -> None:
    root, out, how = sys.argv[1:4]
    if how == "group":
        dist.init_process_group("gloo", init_method=f"file://{out}.store", rank=0, world_size=1)
    else:
        multiprocessing.set_start_method("spawn")
    manifest = hotset.open_dataset(root, decode="bytes").manifest
    keys = list(manifest.keys)
    data = hotset.from_dataset(
        keys,
        read=lambda i: Path(root, keys[i]).read_bytes(),
        decode="bytes",
        labels=manifest.labels,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the loader's own warning about its choice
        loader = hotset.loader(data, system="lru", cache="30%", batch_size=16, num_workers=2)
    error = None
    with loader:
        try:
            served = sorted(i for _, _, ids, _ in loader for i in ids.tolist())
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            served = []
    record = {"context": loader.multiprocessing_context, "error": error, "served": served}
    with open(out, "w") as fh:
        json.dump(record, fh)
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
