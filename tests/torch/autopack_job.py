"""One process training an epoch of Brand on an unpacked data set (no pytest here).

``python autopack_job.py DATASET PACK_DIR OUT``: the loader packs DATASET into
PACK_DIR unless a pack is there already; OUT gets the ids the epoch delivered.
Tests start several at once to see that they pack once between them.
"""

from __future__ import annotations

import json
import sys

import hotset


def main() -> None:
    dataset, pack_dir, out = sys.argv[1:4]
    with hotset.loader(
        dataset, system="brand", cache=0.3, batch_size=8, pack_dir=pack_dir, seed=1
    ) as loader:
        ids = [i for _, _, batch, _ in loader for i in batch.tolist()]
    with open(out, "w") as fh:
        json.dump(ids, fh)


if __name__ == "__main__":
    main()
