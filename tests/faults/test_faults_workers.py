"""The real loader's DataLoader workers die with its main process (a SIGKILL leaves no orphans)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest
from victim_support import READY_TIMEOUT, Victim, gone

from hotset.data import SynthConfig, make_synth

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux /proc")

LOADER_VICTIM = """
    import os, time
    import hotset

    seen = 0

    def decode(data, key):
        global seen
        seen += 1
        if seen > 4:
            time.sleep(120)  # every read after the first batch is stuck on slow storage
        return os.getpid()

    data = hotset.open_dataset({path!r}, decode=decode)
    loader = hotset.loader(data, system="lru", cache=0.5, batch_size=4, num_workers=2, seed=0)
    it = iter(loader)
    pids = set()
    for _ in range(2):
        x, _y, _ids, _w = next(it)
        pids |= set(x.tolist())  # ints are collated into a tensor, as DataLoader does
    print(os.getpid(), *sorted(pids), flush=True)
    time.sleep(120)
"""


def test_sigkilled_loader_takes_its_workers_along(tmp_path: Path, victims: list[Victim]) -> None:
    path = tmp_path / "ds"
    make_synth(path, SynthConfig(n=64, image_size=8, classes=2, seed=0), workers=1)
    victim = Victim(LOADER_VICTIM.format(path=str(path)))
    victims.append(victim)
    main, *workers = (int(p) for p in victim.line().split())
    assert len(workers) == 2 and not any(gone(w) for w in workers)

    os.kill(main, signal.SIGKILL)  # the main process only, not its group
    victim.proc.wait(timeout=READY_TIMEOUT)
    t0 = time.monotonic()
    while not all(gone(w) for w in workers) and time.monotonic() - t0 < 5.0:
        time.sleep(0.01)
    assert all(gone(w) for w in workers), "orphaned loader workers still running"
