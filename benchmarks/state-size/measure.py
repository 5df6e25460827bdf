"""The size of a loader's checkpoint at ImageNet-1k's 1,281,167 ids (issue #28).

Run from the checkout: ``.venv/bin/python benchmarks/state-size/measure.py [SYSTEM ...]``.
Each system trains two epochs of float32 losses fed back with ``update`` and half of a
third, then ``torch.save`` writes ``loader.state_dict()`` to memory; its bytes are the
figure (:func:`hotset.bench.statesize.state_bytes`: 8-byte samples, a 10% cache,
batches of 1,024, no workers; the state is read back with
``torch.load(weights_only=True)``). Writes ``results.json`` beside this file.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from hotset.bench.statesize import state_bytes

N = 1_281_167


def main(systems: list[str]) -> None:
    out = Path(__file__).with_name("results.json")
    rows = json.loads(out.read_text())["rows"] if out.exists() else []
    for system in systems:
        started = time.perf_counter()
        extra = {"package_dir": "/tmp/hotset-state-size"} if system in ("icache", "impact") else {}
        size = state_bytes(system, N, full_epochs=2, **extra)
        row = {
            "system": system,
            "ids": N,
            "state_bytes": size,
            "bytes_per_sample": round(size / N, 2),
            "seconds": round(time.perf_counter() - started, 1),
        }
        print(json.dumps(row), flush=True)
        rows = [r for r in rows if r["system"] != system] + [row]
        doc = {
            "command": "python benchmarks/state-size/measure.py "
            + " ".join(r["system"] for r in rows),
            "setup": "1,281,167 ids of 8 bytes, cache 10%, batch 1,024, no workers; two epochs "
            "of float32 losses fed back, then half of the third; torch.save of state_dict()",
            "rows": rows,
        }
        out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:] or ["lru", "shade", "quiver"])
