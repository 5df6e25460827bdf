"""One epoch of a fault scenario, every delivered sample compared with its file.

Shared by the fault scenarios (:mod:`hotset.bench.faults`,
:mod:`hotset.bench.faults_security`): what a user cares about in each is the
same three counts -- samples that differ from the files (``wrong``), samples
an epoch never delivered (``lost``) and samples it delivered twice
(``repeated``) -- beside the loader's own report of the epoch.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def epoch_row(
    loader: Any,
    epoch: int,
    files: list[bytes],
    fault: Callable[[], None] | None = None,
    *,
    on_batch: Callable[[Any], None] | None = None,
) -> dict[str, Any]:
    """One epoch, every batch compared with the files; ``fault`` runs before batch 1,
    ``on_batch(ids)`` after each (a learning system's losses)."""
    loader.set_epoch(epoch)
    seen = np.zeros(len(files), dtype=np.int64)
    wrong = 0
    for step, (x, _, ids, _) in enumerate(loader):
        if step == 1 and fault is not None:
            fault()
        for blob, sid in zip(x, ids.tolist(), strict=True):
            seen[sid] += 1
            wrong += blob != files[sid]
        if on_batch is not None:
            on_batch(ids)
    row: dict[str, Any] = dict(loader.report()[-1])
    row["wrong"] = int(wrong)
    row["lost"] = int((seen == 0).sum())
    row["repeated"] = int((seen > 1).sum())
    return row


def read_files(root: Path, keys: list[str]) -> list[bytes]:
    """The bytes of every sample as the data set's files hold them (the truth)."""
    return [(root / k).read_bytes() for k in keys]
