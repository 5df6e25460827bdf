"""``examples/lightning_mnist.py`` as a user runs it, plus a recorder of what it trained.

Run as a script (Lightning's DDP re-runs this same file in its other processes):
``python lightning_job.py TRACE ARGS...`` writes, per rank, ``TRACE.rank<r>.json``:
each trained batch's (epoch, batch index, sample ids) and a digest of the final
weights, so a test can compare an uninterrupted run with a resumed one.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import lightning.pytorch as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

from lightning_mnist import main


class Recorder(pl.Callback):
    """Each trained batch's ids, and the final weights' digest, of this rank."""

    def __init__(self, trace: str) -> None:
        self.trace = trace
        self.batches: list[list[Any]] = []

    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, i: int
    ) -> None:
        self.batches.append([trainer.current_epoch, i, batch[2].tolist()])

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        digest = hashlib.sha256()
        for p in pl_module.parameters():
            digest.update(p.detach().numpy().tobytes())
        out = {"batches": self.batches, "weights": digest.hexdigest()}
        Path(f"{self.trace}.rank{trainer.global_rank}.json").write_text(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[2:], callbacks=[Recorder(sys.argv[1])])
