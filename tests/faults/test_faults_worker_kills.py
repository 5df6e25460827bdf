"""A DataLoader worker SIGKILLed at a random point: always a HotsetError naming it.

Before, torch's SIGCHLD handler raised its own ``RuntimeError("DataLoader worker (pid
N) is killed by signal: Killed.")`` at whatever line the main thread was running --
mostly the training step, outside the loader -- so in 29 of 37 kills the user got
that raw error instead of the loader's. Each run here trains (a short sleep per
step, where a real loop computes), a thread kills one of the epoch's workers
(``kill -9`` of a real process, found by the pid its batches carry) after a random
delay, and every error that reaches the loop must be the loader's, naming that pid;
iterating again then delivers every sample once, byte-exact.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import hotset
from hotset.data import SynthConfig, make_synth
from hotset.errors import WorkerDied

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "torch"))
from worker_probe import probe_collate  # importable by a fork server's workers

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs SIGCHLD")

RUNS = 6
STEP_S = 0.01


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("kills") / "ds"
    make_synth(path, SynthConfig(n=160, image_size=8, classes=2, seed=4), workers=1)
    return path


def _loader(data_dir: Path, context: str, seed: int) -> Any:
    data = hotset.open_dataset(data_dir, decode="bytes")
    return hotset.loader(
        data,
        system="lru",
        cache=0.3,
        batch_size=8,
        num_workers=2,
        seed=seed,
        collate_inputs=probe_collate,
        multiprocessing_context=context,
    )


class _Killer(threading.Thread):
    """Kills one of the workers that made the current epoch's batches, after ``delay``."""

    def __init__(self, delay: float, rng: random.Random) -> None:
        super().__init__(daemon=True)
        self.delay, self.rng = delay, rng
        self.pids: list[int] = []
        self.killed: int | None = None

    def run(self) -> None:
        time.sleep(self.delay)
        deadline = time.monotonic() + 10
        while not self.pids and time.monotonic() < deadline:  # a new epoch's first batch
            time.sleep(0.001)
        if self.pids:
            self.killed = self.rng.choice(list(self.pids))
            os.kill(self.killed, signal.SIGKILL)


def _train_until_killed(loader: Any, killer: _Killer) -> BaseException | None:
    """Epochs of a loop with a step, until the kill's error (returned) or 6 epochs."""
    try:
        for epoch in range(6):
            loader.set_epoch(epoch)
            killer.pids.clear()
            for x, _y, _ids, _w in loader:
                killer.pids.append(x["pid"])
                if not killer.is_alive() and killer.ident is None:
                    killer.start()  # the clock starts at the first batch
                time.sleep(STEP_S)
    except BaseException as exc:  # what reached the training loop, whatever it is
        return exc
    return None


def _whole_epoch(loader: Any, epoch: int, truth: list[bytes]) -> None:
    loader.set_epoch(epoch)
    seen: list[int] = []
    for x, _y, ids, _w in loader:
        assert x["bytes"] == [truth[s] for s in ids.tolist()]
        seen += ids.tolist()
    assert sorted(seen) == list(range(len(truth)))


@pytest.mark.parametrize("context", ["fork", "forkserver"])
def test_a_worker_killed_anywhere_is_the_loaders_error_naming_it(
    data_dir: Path, context: str
) -> None:
    truth = [(data_dir / k).read_bytes() for k in hotset.open_dataset(data_dir).manifest.keys]
    rng = random.Random(41)
    raised = 0
    for run in range(RUNS):
        killer = _Killer(rng.uniform(0.0, 0.25), rng)
        with _loader(data_dir, context, run) as loader:
            exc = _train_until_killed(loader, killer)
            killer.join(timeout=10)
            assert killer.killed is not None, "the kill never happened"
            if exc is not None:
                assert isinstance(exc, WorkerDied), f"run {run}: raw {type(exc).__name__}: {exc}"
                assert f"DataLoader worker (pid {killer.killed}) was killed by SIGKILL" in str(
                    exc
                ) or f"pid(s) {killer.killed})" in str(exc), str(exc)
                assert "a DataLoader worker died" in str(exc)
                raised += 1
            _whole_epoch(loader, 10, truth)  # iterating again: every sample, byte-exact
    assert raised >= RUNS // 2, f"only {raised} of {RUNS} kills landed mid-epoch"


def test_another_dataloaders_dead_worker_is_still_torchs_error(data_dir: Path) -> None:
    """The loader's SIGCHLD guard takes only its own workers' deaths: a plain DataLoader
    beside it still gets torch's RuntimeError for its own."""
    with _loader(data_dir, "fork", 0) as loader:
        next(iter(loader))  # the guard is installed around torch's handler now
        plain = torch.utils.data.DataLoader(
            _Slow(), batch_size=1, num_workers=1, multiprocessing_context="fork"
        )
        it = iter(plain)
        next(it)
        pid = plain_worker_pid(it)
        with pytest.raises(RuntimeError, match=rf"DataLoader worker \(pid\(?s?\)? ?{pid}"):
            os.kill(pid, signal.SIGKILL)
            for _ in it:
                pass
        del it


class _Slow(torch.utils.data.Dataset[Any]):
    def __len__(self) -> int:
        return 1000

    def __getitem__(self, i: int) -> Any:
        time.sleep(0.01)
        return np.zeros(1)


def plain_worker_pid(it: Any) -> int:
    return int(it._workers[0].pid)
