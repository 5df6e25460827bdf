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
    import os, sys, time
    sys.path.insert(0, {faults!r})  # victim_support: a decode a fork server's worker can import
    import hotset
    from victim_support import stuck_after_first_batch

    data = hotset.open_dataset({path!r}, decode=stuck_after_first_batch)
    loader = hotset.loader(data, system="lru", cache=0.5, batch_size=4, num_workers=2, seed=0,
                           multiprocessing_context={context!r})
    it = iter(loader)
    pids = set()
    for _ in range(2):
        x, _y, _ids, _w = next(it)
        pids |= set(x.tolist())  # ints are collated into a tensor, as DataLoader does
    print(os.getpid(), *sorted(pids), flush=True)
    time.sleep(120)
"""


@pytest.mark.parametrize("context", ["fork", "forkserver"])
def test_sigkilled_loader_takes_its_workers_along(
    tmp_path: Path, victims: list[Victim], context: str
) -> None:
    """With a fork server the workers' parent is the server: it exits with the main
    process, and its workers with it."""
    path = tmp_path / "ds"
    make_synth(path, SynthConfig(n=64, image_size=8, classes=2, seed=0), workers=1)
    faults = str(Path(__file__).resolve().parent)
    victim = Victim(LOADER_VICTIM.format(path=str(path), faults=faults, context=context))
    victims.append(victim)
    main, *workers = (int(p) for p in victim.line().split())
    assert len(workers) == 2 and not any(gone(w) for w in workers)

    os.kill(main, signal.SIGKILL)  # the main process only, not its group
    victim.proc.wait(timeout=READY_TIMEOUT)
    t0 = time.monotonic()
    while not all(gone(w) for w in workers) and time.monotonic() - t0 < 5.0:
        time.sleep(0.01)
    assert all(gone(w) for w in workers), "orphaned loader workers still running"
