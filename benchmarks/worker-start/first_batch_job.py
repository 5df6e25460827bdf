"""One rank of the first-batch benchmark (run under torchrun by ``measure.py``).

Each epoch starts as a data-parallel job's does: a collective (the gradient
all-reduce of the step before), ``set_epoch``, then ``iter(loader)``. The rank
records, per epoch, the seconds from ``iter()`` to the first batch and to the
epoch's end, plus the seconds ``hotset.loader(...)`` took to build (a loader
that started its workers early pays for it there). No model: the wait measured is
the loader's own.

argv: data set directory, out directory, epochs, start method ("default": none
asked), persistent workers ("default": none asked, "true", "false"), and the
seconds of the script's own set-up between building the loader and its first
epoch (a sleep: the model, the optimizer, DDP's wrapping, a checkpoint's load).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

import hotset


def _flag(value: str) -> dict[str, object]:
    return {} if value == "default" else {"persistent_workers": value == "true"}


def main() -> None:
    root, out, epochs, method, persistent, setup_s = sys.argv[1:7]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    data = hotset.open_dataset(root, decode="image")
    options: dict[str, object] = {**_flag(persistent)}
    if method != "default":
        options["multiprocessing_context"] = method
    t0 = time.perf_counter()
    loader = hotset.loader(
        data, system="lru", cache="30%", batch_size=32, num_workers=2, seed=0, **options
    )
    build_s = time.perf_counter() - t0
    time.sleep(float(setup_s))
    waits: list[float] = []
    epoch_s: list[float] = []
    with loader:
        for epoch in range(int(epochs)):
            flat = torch.ones(4)
            dist.all_reduce(flat)  # the collective a DDP step ends with
            loader.set_epoch(epoch)
            start = time.perf_counter()
            it = iter(loader)
            next(it)
            waits.append(time.perf_counter() - start)
            for _ in it:
                pass
            epoch_s.append(time.perf_counter() - start)
        context = loader.multiprocessing_context
    record = {
        "rank": rank,
        "context": context if isinstance(context, str | None) else str(context),
        "build_s": build_s,
        "first_batch_s": waits,
        "epoch_s": epoch_s,
    }
    Path(out, f"rank{rank}.json").write_text(json.dumps(record))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
