"""Real processes stopped mid-write, for the tests of leftover folders (hotset.data.leftovers).

``hotset data pack`` is stopped deterministically: one sample file is swapped for
a FIFO, so the pack blocks there, its temporary folder holding the chunks before
that sample. :func:`blocked` opens the FIFO's other end once the pack is there
(which proves it is) and keeps it open, without writing: the pack then waits in
``read`` for as long as the test wants, even after the sample's file is put back
-- to be SIGKILLed (a dead owner) or to stay alive (a live one). An iCACHE loader process trains until its package folder holds package
files, says so on stdout and waits there to be killed.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from hotset.data.leftovers import Leftover, scan
from hotset.data.manifest import Manifest


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped (nothing runs under it)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


#: every wait here gives up after this long (a hang fails the test, it does not stall it)
WAIT_S = 60.0

_CLI = "from hotset.cli import main; main()"

_LOADER_JOB = """
import sys
import numpy as np
from pathlib import Path
import hotset

data = hotset.open_dataset(sys.argv[1], decode="bytes")
loader = hotset.loader(
    data, system="icache", system_options={"warm_up": 1}, cache="30%", batch_size=16, seed=0
)
folder = Path(sys.argv[1]) / loader._parts.packer.prefix  # this run's own package folder
for epoch in range(4):
    loader.set_epoch(epoch)
    for x, y, ids, w in loader:
        loader.update(ids, ((ids.numpy() * 7919) % 101) / 100.0 + 0.01)
        if any(folder.rglob("*.pkg")):
            print("packages written", flush=True)
            sys.stdin.read()  # wait here to be killed
raise SystemExit("no package was ever written")
"""


@contextlib.contextmanager
def fifo_sample(dataset_dir: Path, sid: int) -> Iterator[Path]:
    """Sample ``sid``'s file swapped for a FIFO for the block (a read of it blocks),
    then put back as it was."""
    path = dataset_dir / Manifest.load(dataset_dir).keys[sid]
    data = path.read_bytes()
    path.unlink()
    os.mkfifo(path)
    try:
        yield path
    finally:
        path.unlink()
        path.write_bytes(data)


def blocked(fifo: Path, proc: subprocess.Popen[str]) -> int:
    """Wait until ``proc`` opens ``fifo`` to read it; the writing end, held open (close
    it after ``proc`` is gone: the reader would get an end of file)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO: no reader yet
        except OSError:
            if proc.poll() is not None:
                raise AssertionError(
                    f"process {proc.pid} ended: {proc.communicate()[1][-3000:]}"
                ) from None
            time.sleep(0.01)
    kill(proc)
    raise AssertionError(f"process {proc.pid} never opened {fifo}")


def start_pack(dataset_dir: Path, *args: str) -> subprocess.Popen[str]:
    """A real ``hotset data pack DATASET ARGS`` in a process of its own."""
    return subprocess.Popen(
        [sys.executable, "-c", _CLI, "data", "pack", str(dataset_dir), "--quiet", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def start_loader(dataset_dir: Path) -> subprocess.Popen[str]:
    """A real iCACHE loader training on ``dataset_dir``; returns once it has written
    packages (and waits there)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _LOADER_JOB, str(dataset_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], WAIT_S)
    if not ready or proc.stdout.readline().strip() != "packages written":
        raise AssertionError(f"the loader never wrote packages: {kill(proc)[-3000:]}")
    return proc


def wait_for_leftover(directory: Path, proc: subprocess.Popen[str], kind: str) -> Leftover:
    """The ``kind`` folder ``proc`` owns in ``directory``, once it holds some bytes."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        for item in scan(directory, (kind,)):
            if item.owner_pid == proc.pid and item.size_bytes > 0:
                return item
        if proc.poll() is not None:
            raise AssertionError(f"process {proc.pid} ended: {proc.communicate()[1][-3000:]}")
        time.sleep(0.02)
    kill(proc)
    raise AssertionError(f"no {kind} folder of process {proc.pid} in {directory}")


def kill(proc: subprocess.Popen[str]) -> str:
    """SIGKILL ``proc``'s whole session (a loader's workers too), reap it; its stderr."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    return proc.communicate()[1] or ""
