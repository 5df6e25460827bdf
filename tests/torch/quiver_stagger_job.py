"""One Quiver job of several on one shared Redis namespace, started after the others
(no pytest here; tests/torch/test_quiver_stagger.py runs it as a separate process).

The start is staggered by progress, not by the clock, so the test means the same on
a loaded machine: every job builds its loader, then waits until job 0 has trained
``index * start_after`` batches (job 0 counts its batches in a key of the test's
own, beside the namespace). A training step is a short sleep. It checks every byte served against the files and
writes, per epoch, the ids it trained, its report rows and its policy's summary.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import redis

import hotset

WAIT_S = 120.0
#: the training step's seconds per batch: jobs then go at the pace of their steps, as
#: the paper's jobs on GPUs do, more than at the pace a loaded test machine gives them
STEP_S = 0.02


def _wait(client: redis.Redis, key: str, at_least: int) -> None:
    """Until ``key`` counts ``at_least``; a job that never gets there fails, not hangs."""
    deadline = time.monotonic() + WAIT_S
    while int(client.get(key) or 0) < at_least:
        if time.monotonic() > deadline:
            raise SystemExit(f"{key} never reached {at_least}")
        time.sleep(0.01)


def main() -> None:
    root, url, port, namespace, index, jobs, epochs, start_after, out = sys.argv[1:10]
    me, start = int(index), int(start_after)
    client = redis.Redis(host="127.0.0.1", port=int(port))
    ready, progress = f"test-ready:{namespace}", f"test-progress:{namespace}"
    data = hotset.open_dataset(root, decode="bytes")
    truth = [data.store.read(k) for k in data.manifest.keys]
    served: list[list[int]] = []
    with hotset.loader(
        data,
        system="quiver",
        cache=url,
        cache_bytes=0.3,
        namespace=namespace,
        batch_size=16,
        seed=20 + me,
    ) as loader:
        client.incr(ready)
        _wait(client, ready, int(jobs))  # every job built: job 0 starts now
        _wait(client, progress, me * start)  # the later jobs once job 0 is that far
        for epoch in range(int(epochs)):
            loader.set_epoch(epoch)
            ids_of_epoch: list[int] = []
            for x, _, ids, _ in loader:
                assert x == [truth[i] for i in ids.tolist()], "bytes differ from the files"
                time.sleep(STEP_S)
                ids_of_epoch += ids.tolist()
                if me == 0:
                    client.incr(progress)
            served.append(ids_of_epoch)
        result = {
            "served": served,
            "rows": loader.report(),
            "policy": loader.policy_summary(),
        }
    Path(out).write_text(json.dumps(result, default=str))


if __name__ == "__main__":
    main()
