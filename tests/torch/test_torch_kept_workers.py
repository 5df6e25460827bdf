"""Workers started from a fork server are kept across epochs, and do what fresh ones did.

Before, DataLoader started every epoch's workers afresh, and from a fork server
(what the loader picks under torchrun on Python 3.11 < 3.11.10) each start costs
seconds. Now they are kept unless ``persistent_workers=False``: the same
processes serve every epoch (their pids), and nothing else may change: every
sample exactly once, byte-exact, the same decisions, the same draws in the
workers and in the main process, a discarded iterator consuming no epoch,
``set_epoch`` after ``iter``, a break mid-epoch, a resume, a dead worker.
Real worker processes throughout; the batch's ``x`` is
:func:`worker_probe.probe_collate`'s record of the worker that made it.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch_support import loss_of
from worker_probe import eof_collate, probe_collate, seed_numpy_from_torch

import hotset
from hotset.errors import HotsetError, WorkerDied
from hotset.torch.forksafe import fork_can_deadlock, keeps_workers
from hotset.torch.loader import HotsetLoader, _worker_died
from process_support import run_torchrun

HERE = Path(__file__).resolve().parent

CONFIG: dict[str, Any] = {"cache": 0.3, "batch_size": 16, "num_workers": 2, "verify": True}


def _loader(dataset_dir: Path, system: str = "lru", **options: Any) -> HotsetLoader:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    return hotset.loader(
        data,
        system=system,
        worker_init_fn=seed_numpy_from_torch,
        seed=3,
        **{
            "multiprocessing_context": "forkserver",
            "collate_inputs": probe_collate,
            **CONFIG,
            **options,
        },
    )


def _truth(dataset_dir: Path) -> list[bytes]:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    return [data.store.read(k) for k in data.manifest.keys]


def _take(loader: HotsetLoader, epoch: int, truth: list[bytes], stop: int | None = None) -> dict:
    """One epoch (or its first ``stop`` batches): ids in order, the workers' records,
    every sample's bytes checked against its file."""
    loader.set_epoch(epoch)
    ids_seen: list[int] = []
    records: list[dict[str, Any]] = []
    for i, (x, _y, ids, _w) in enumerate(loader):
        assert x["bytes"] == [truth[s] for s in ids.tolist()], f"epoch {epoch}: bytes differ"
        loader.update(ids, torch.from_numpy(loss_of(ids.numpy(), epoch)))
        ids_seen += ids.tolist()
        records.append({k: v for k, v in x.items() if k != "bytes"})
        if stop is not None and i + 1 == stop:
            break
    return {"ids": ids_seen, "records": records, "rows": loader.decisions().rows()}


def _pids(run: dict) -> set[int]:
    return {r["pid"] for r in run["records"]}


def _draws(run: dict) -> list[tuple[Any, ...]]:
    return [(r["seed"], r["torch"], r["random"], r["numpy"]) for r in run["records"]]


def _session(dataset_dir: Path, truth: list[bytes], **options: Any) -> tuple[list[dict], float]:
    """Three epochs as a training script may run them, and the main process's next draw.

    Epoch 0 whole; an iterator made and dropped (it consumes no epoch); epoch 1
    with ``set_epoch`` after ``iter``, closed after a batch, then begun again and left
    after 3 batches; epoch 2 whole.
    """
    torch.manual_seed(123)
    with _loader(dataset_dir, **options) as loader:
        runs = [_take(loader, 0, truth)]
        iter(loader)  # discarded before its first batch
        it = iter(loader)
        loader.set_epoch(1)
        first = next(it)
        assert first[0]["bytes"] == [truth[s] for s in first[2].tolist()]
        runs.append({"ids": first[2].tolist(), "records": [first[0]], "rows": []})
        it.close()
        runs.append(_take(loader, 1, truth, stop=3))
        runs.append(_take(loader, 2, truth))
        assert [r["epoch"] for r in loader.report()] == [0, 1, 1, 2]  # epoch 1 begun twice
    return runs, float(torch.rand(()))


def test_fork_server_workers_are_kept_and_serve_as_fresh_ones(dataset_dir: Path) -> None:
    truth = _truth(dataset_dir)
    kept, kept_next = _session(dataset_dir, truth)
    fresh, fresh_next = _session(dataset_dir, truth, persistent_workers=False)
    # kept: the same two processes served every epoch; fresh: new ones each epoch
    assert len(_pids(kept[0])) == 2
    assert all(_pids(run) <= _pids(kept[0]) for run in kept)  # (one batch: one of them)
    assert _pids(kept[3]) == _pids(kept[0])
    assert all(not _pids(a) & _pids(b) for a, b in itertools.pairwise(fresh))
    # every sample exactly once in a whole epoch, and the same batches and decisions
    for epoch_run in (kept[0], kept[3]):
        assert sorted(epoch_run["ids"]) == list(range(len(truth)))
    for a, b in zip(kept, fresh, strict=True):
        assert a["ids"] == b["ids"] and a["rows"] == b["rows"]
        # the workers drew what fresh workers draw (seeded per epoch, init rerun)
        assert _draws(a) == _draws(b)
    assert kept_next == fresh_next  # and so did the main process


def test_resume_with_kept_workers(dataset_dir: Path) -> None:
    """Mid-epoch state: restored into the running loader (its workers kept) and into a
    new one, both go on exactly as the uninterrupted run."""
    truth = _truth(dataset_dir)
    with _loader(dataset_dir, "shade") as whole:
        want = [_take(whole, e, truth) for e in range(3)]
    with _loader(dataset_dir, "shade") as first:
        head = _take(first, 0, truth)
        assert head["ids"] == want[0]["ids"]
        part = _take(first, 1, truth, stop=3)
        state = first.state_dict()
        pids = _pids(head)
        assert _pids(part) == pids
        first.load_state_dict(state)  # the same loader, its workers kept
        tail = _take(first, 1, truth)
        assert part["ids"] + tail["ids"] == want[1]["ids"]
        assert _pids(tail) == pids
        assert _take(first, 2, truth)["ids"] == want[2]["ids"]
    with _loader(dataset_dir, "shade") as second:
        second.load_state_dict(state)
        tail = _take(second, 1, truth)
        assert part["ids"] + tail["ids"] == want[1]["ids"]
        assert tail["rows"] == want[1]["rows"]
        assert _take(second, 2, truth)["ids"] == want[2]["ids"]


def test_a_kept_worker_that_dies_is_replaced(dataset_dir: Path) -> None:
    """Killed while idle between epochs: the next epoch starts fresh workers and is whole.
    Killed mid-epoch: an error, and the next epoch is whole."""
    truth = _truth(dataset_dir)
    with _loader(dataset_dir) as loader:
        first = _take(loader, 0, truth)
        victim = min(_pids(first))
        os.kill(victim, signal.SIGKILL)
        second = _take(loader, 1, truth)
        assert sorted(second["ids"]) == list(range(len(truth)))
        assert victim not in _pids(second)
        loader.set_epoch(2)
        # torch reports the death, or, when a batch the worker had sent is still
        # queued, fails to take that batch's tensors from the dead process (a bare
        # ConnectionResetError or EOFError from the fd hand-over): either way the user
        # gets hotset's "worker died" error and the next epoch starts fresh workers
        with pytest.raises(WorkerDied, match="a DataLoader worker died"):
            for x, _y, _ids, _w in loader:
                os.kill(x["pid"], signal.SIGKILL)  # the first batch's worker
        third = _take(loader, 3, truth)
        assert sorted(third["ids"]) == list(range(len(truth)))
        assert not _pids(third) & _pids(second)


@pytest.mark.parametrize("workers", [0, 2])
def test_an_eof_error_of_the_users_own_code_is_not_a_dead_worker(
    dataset_dir: Path, workers: int
) -> None:
    """A bare EOFError while taking a batch means its worker is gone (see above); one
    the user's code raised, in a worker or in this process, reaches the user as it is."""
    context = "forkserver" if workers else None
    options = {"collate_inputs": eof_collate, "num_workers": workers}
    with _loader(dataset_dir, multiprocessing_context=context, **options) as loader:
        loader.set_epoch(0)
        with pytest.raises(EOFError) as caught:
            next(iter(loader))
    assert "truncated record" in str(caught.value)
    assert not isinstance(caught.value, HotsetError)


@pytest.mark.parametrize(
    ("exc", "died"),
    [
        (RuntimeError("DataLoader worker (pid(s) 12) exited unexpectedly"), True),
        (EOFError(), True),  # taking a dead worker's queued batch over its fds
        (ConnectionResetError(104, "Connection reset by peer"), True),
        (EOFError("Caught EOFError in DataLoader worker process 0.\nOriginal"), False),
        (RuntimeError("CUDA out of memory"), False),
        (ValueError("bad sample"), False),
    ],
)
def test_what_counts_as_a_dead_worker(exc: BaseException, died: bool) -> None:
    assert _worker_died(exc) is died


def test_workers_go_with_close(dataset_dir: Path) -> None:
    truth = _truth(dataset_dir)
    loader = _loader(dataset_dir)
    pids = _pids(_take(loader, 0, truth))
    loader.close()
    for pid in pids:
        assert not _alive(pid), f"worker {pid} outlived close()"


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not): its /proc state."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


@pytest.mark.parametrize(("asked", "kept"), [(None, False), (True, True)])
def test_forked_workers_are_started_each_epoch_unless_asked(
    dataset_dir: Path, asked: bool | None, kept: bool
) -> None:
    """Forked workers start in milliseconds: the DataLoader's default stays."""
    truth = _truth(dataset_dir)
    options: dict[str, Any] = {} if asked is None else {"persistent_workers": asked}
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    with hotset.loader(
        data,
        system="lru",
        multiprocessing_context="fork",
        collate_inputs=probe_collate,
        **{**CONFIG, **options},
    ) as loader:
        runs = [_take(loader, e, truth) for e in range(2)]
    assert (_pids(runs[0]) == _pids(runs[1])) is kept
    assert np.array_equal(np.sort(runs[1]["ids"]), np.arange(len(truth)))


@pytest.mark.parametrize(
    ("asked", "method", "workers", "kept"),
    [
        (None, "forkserver", 2, True),
        (None, "spawn", 2, True),
        (None, "fork", 2, False),
        (None, "forkserver", 0, False),
        (False, "forkserver", 2, False),
        (True, "fork", 2, True),
    ],
)
def test_which_workers_are_kept(asked: bool | None, method: str, workers: int, kept: bool) -> None:
    """Left out: kept where workers are not forks of this process; as given otherwise."""
    assert keeps_workers(asked, method, num_workers=workers) is kept


def _torchrun(dataset_dir: Path, out: Path, mode: str) -> list[dict[str, Any]]:
    script = [str(HERE / "rank_kept_workers_job.py"), str(dataset_dir), str(out), mode]
    run_torchrun(script, nproc=2, logs=out / "logs")
    return [json.loads((out / f"{mode}{r}.json").read_text()) for r in range(2)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork is Linux's default")
def test_under_torchrun_workers_are_kept_exactly_once_and_resume(
    dataset_dir: Path, tmp_path: Path
) -> None:
    """2 ranks, a collective before each epoch: where the loader starts workers from a
    fork server, each rank's workers serve all 3 epochs; every sample once per epoch
    across the ranks, byte-exact (checked in the job); a rank's mid-epoch state
    resumes exactly in a new job, whose workers are kept too."""
    full, first, second = (_torchrun(dataset_dir, tmp_path, m) for m in ("full", "first", "second"))
    kept = fork_can_deadlock()  # the loader picks a fork server here (hotset.torch.forksafe)
    for ranks in (full, second):
        for r in ranks:
            assert r["context"] == ("forkserver" if kept else None)
            pids = list(r["pids"].values())
            assert all(len(p) == 2 for p in pids)
            assert all(p == pids[0] for p in pids) is kept
    for epoch in ("0", "1", "2"):
        assert sorted(i for r in full for i in r["served"][epoch]) == list(range(200))
    for rank in range(2):
        assert first[rank]["served"]["0"] == full[rank]["served"]["0"]
        assert first[rank]["served"]["1"] + second[rank]["served"]["1"] == full[rank]["served"]["1"]
        assert second[rank]["served"]["2"] == full[rank]["served"]["2"]


def _hold_lock_and_die(event: Any) -> None:
    """What a worker SIGKILLed inside ``done_event.is_set()`` leaves: the lock held."""
    event._cond.acquire()
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_kept_worker_dead_holding_the_done_lock_does_not_hang_the_old_shutdown(
    dataset_dir: Path,
) -> None:
    """Killed while idle between epochs, holding the lock of the iterator's "workers
    done" event (every worker polls it): the next epoch is whole, on fresh workers,
    and the kept iterator it replaces can still shut down. Without the check, iter()
    hung for ever inside torch's reset (marking the dead worker unavailable reads that
    event), before the death was even known."""
    import multiprocessing
    import threading

    truth = _truth(dataset_dir)
    with _loader(dataset_dir) as loader:
        first = _take(loader, 0, truth)
        old = loader._parts.dataloader
        assert old is not None and old._iterator is not None
        old_it, event = old._iterator, old._iterator._workers_done_event
        holder = multiprocessing.get_context("fork").Process(
            target=_hold_lock_and_die, args=(event,)
        )
        holder.start()
        holder.join(10)
        assert holder.exitcode == -signal.SIGKILL
        assert not event._cond.acquire(True, 0.2)  # held for ever
        os.kill(min(_pids(first)), signal.SIGKILL)
        try:
            second = _take(loader, 1, truth)
            replaced = old_it._workers_done_event is not event
        finally:  # a failure here must not hang the test's own clean-up on that lock
            old_it._workers_done_event = threading.Event()
        assert sorted(second["ids"]) == list(range(len(truth)))
        assert replaced, "the replaced iterator kept the event whose lock the dead worker holds"
        assert not _pids(second) & _pids(first)  # fresh workers: the survivor was frozen too
        done = threading.Event()

        def shutdown() -> None:
            old_it._shutdown_workers()
            done.set()

        threading.Thread(target=shutdown, daemon=True).start()
        assert done.wait(30), "the replaced iterator's shutdown did not end"
