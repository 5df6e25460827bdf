"""Training survives a store that fails transiently: no run fails, no sample is lost.

A 2,000-sample dataset on disk is read through ``hotset.loader`` from a store
that fails 5% of its reads with an ``OSError``, or 1% with a ``TimeoutError``
(and, in one test, hangs a read for good). ``open_dataset`` wraps even a user-supplied store in a
``RetryingStore`` by default, so every epoch must deliver every sample exactly
once, byte for byte as the files hold it, with the main process alone and with
worker processes. Faults injected in worker processes are counted in a log file
(one line per fault, appended), since a worker's counters stay in the worker.
"""

from __future__ import annotations

import errno
import os
import random
import threading
import time
from pathlib import Path

import pytest

import hotset
from hotset.data import SynthConfig, make_synth
from hotset.errors import StorageError
from hotset.storage import LocalStore, RetryingStore, Store
from store_support import FaultyStore

N = 2000


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("faults") / "ds"
    make_synth(path, SynthConfig(n=N, image_size=8, classes=4, seed=7), workers=2)
    return path


class FlakyStore(FaultyStore):
    """A store over real files whose reads fail with probability ``p`` (seeded, per process).

    Each process draws from ``Random((seed, pid))`` so forked workers fail on
    different reads, and appends one line per injected fault to ``log``.
    """

    def __init__(
        self, inner: Store, *, p: float, seed: int, log: Path, error: type[OSError] = OSError
    ) -> None:
        super().__init__(inner)
        self.p = p
        self.error = error
        self.seed = seed
        self.log = log
        self.bad = ""  # a key whose reads fail for good (see the permanent-error test)
        self._pid = -1
        self._rng = random.Random()

    def _before(self, key: str) -> None:
        with self._lock:
            if self._pid != os.getpid():
                self._pid = os.getpid()
                self._rng = random.Random(f"{self.seed}:{self._pid}")
            fail = self._rng.random() < self.p
        if fail:
            with open(self.log, "a") as fh:
                fh.write(f"{os.getpid()} {key}\n")
            raise self.error(errno.EIO, "injected transient I/O error", key)

    def size(self, key: str) -> int:
        return self.inner.size(key)  # metadata never fails here: only reads are faulty

    def __setstate__(self, state: dict[str, object]) -> None:
        super().__setstate__(state)
        self._pid = -1  # a new process draws its own faults
        self._rng = random.Random()

    def __repr__(self) -> str:
        return f"FlakyStore({self.inner!r}, p={self.p})"


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize(("p", "error"), [(0.05, OSError), (0.01, TimeoutError)])
def test_two_epochs_with_faults_lose_nothing(
    dataset: Path, tmp_path: Path, workers: int, p: float, error: type[OSError]
) -> None:
    log = tmp_path / "faults.log"
    log.touch()
    flaky = FlakyStore(LocalStore(dataset), p=p, seed=workers, log=log, error=error)
    # the test's own sleep-free backoff keeps it quick; the retry logic is the default one
    data = hotset.open_dataset(dataset, decode="bytes", store=flaky)
    assert isinstance(data.store, RetryingStore) and data.store.inner is flaky
    data = data.with_store(RetryingStore(flaky, backoff_s=0.001, max_backoff_s=0.01))
    files = [(dataset / key).read_bytes() for key in data.manifest.keys]
    labels = data.manifest.labels
    start = time.perf_counter()
    with hotset.loader(
        data, system="lru", cache=0.2, batch_size=64, num_workers=workers, seed=1, verify=True
    ) as loader:
        for epoch in range(2):
            loader.set_epoch(epoch)
            seen: list[int] = []
            for x, y, ids, _ in loader:
                for blob, sid in zip(x, ids.tolist(), strict=True):
                    assert blob == files[sid]
                assert y.tolist() == labels[ids.numpy()].tolist()
                seen.extend(ids.tolist())
            assert sorted(seen) == list(range(N)), f"epoch {epoch} lost or repeated samples"
        rows = loader.report()
    took = time.perf_counter() - start
    faults = len(log.read_text().splitlines())
    reads = sum(r["storage_reads"] + r["rebuild_reads"] for r in rows)
    print(
        f"workers={workers}: {2 * N} samples delivered, {reads} storage reads, "
        f"{faults} injected {error.__name__}s ({faults / max(reads, 1):.1%}), 0 failures, "
        f"{took:.1f} s"
    )
    assert reads > N  # the 20% cache cannot hold everything: the second epoch read again
    assert faults > 0.4 * p * reads  # the store really did fail, about p of the time
    if workers == 0:
        # in one process the wrapper's own counters are visible: every fault was retried
        assert data.store.failures == 0
        assert data.store.retries >= faults


def test_a_hung_read_does_not_hang_the_loader(dataset: Path) -> None:
    release = threading.Event()
    hung: list[str] = []

    class HangOnce(FlakyStore):
        def read(self, key: str) -> bytes:
            if not hung:
                hung.append(key)
                release.wait()
            return self.inner.read(key)

    store = HangOnce(LocalStore(dataset), p=0.0, seed=0, log=Path(os.devnull))
    data = hotset.open_dataset(dataset, decode="bytes", store=store, read_timeout_s=0.2)
    try:
        start = time.perf_counter()
        with hotset.loader(data, system="lru", cache=0.2, batch_size=64, num_workers=0) as ld:
            ld.set_epoch(0)
            seen = [i for _, _, ids, _ in ld for i in ids.tolist()]
        assert sorted(seen) == list(range(N))
        assert hung and time.perf_counter() - start < 20
        assert isinstance(data.store, RetryingStore) and data.store.timeouts == 1
    finally:
        release.set()


@pytest.mark.parametrize("workers", [0, 2])
def test_a_permanent_error_stops_the_run_naming_key_and_store(dataset: Path, workers: int) -> None:
    class Denied(FlakyStore):
        def read(self, key: str) -> bytes:
            if key == self.bad:
                raise PermissionError(errno.EACCES, "Permission denied", key)
            return self.inner.read(key)

    store = Denied(LocalStore(dataset), p=0.0, seed=0, log=Path(os.devnull))
    data = hotset.open_dataset(dataset, decode="bytes", store=store)
    store.bad = data.manifest.keys[123]
    with (
        hotset.loader(data, system="lru", cache=0.2, batch_size=64, num_workers=workers) as ld,
        pytest.raises(StorageError) as info,
    ):
        ld.set_epoch(0)
        for _ in ld:
            pass
    message = str(info.value)
    assert repr(store.bad) in message and repr(store) in message and str(dataset) in message
    assert "permanent" in message and "PermissionError" in message


class _Broken(FaultyStore):
    """Real files, less a few: some denied for good, one returned corrupted."""

    denied: frozenset[str] = frozenset()
    corrupted: str = ""

    def read(self, key: str) -> bytes:
        if key in self.denied:
            raise PermissionError(errno.EACCES, "Permission denied", key)
        data = self.inner.read(key)
        return data[:-1] + bytes([data[-1] ^ 1]) if key == self.corrupted else data


@pytest.mark.parametrize("workers", [0, 2])
def test_on_error_skip_skips_counts_and_names_every_failed_sample(
    dataset: Path, workers: int
) -> None:
    store = _Broken(LocalStore(dataset))
    data = hotset.open_dataset(dataset, decode="bytes", store=store)
    keys = data.manifest.keys
    denied, corrupted = {7, 300, 1999}, 1024
    store.denied = frozenset(keys[i] for i in denied)
    store.corrupted = keys[corrupted]
    bad = denied | {corrupted}
    files = [(dataset / k).read_bytes() for k in keys]
    with hotset.loader(
        data,
        system="lru",
        cache=0.2,
        batch_size=64,
        num_workers=workers,
        on_error="skip",
        check_store="off",
    ) as ld:
        for epoch in range(2):
            ld.set_epoch(epoch)
            with pytest.warns(RuntimeWarning, match="on_error='skip'"):
                seen = []
                for x, _, ids, _ in ld:
                    assert x == [files[i] for i in ids.tolist()]  # the rest, byte for byte
                    seen += ids.tolist()
            assert sorted(seen) == sorted(set(range(N)) - bad)  # each other sample once
            row = ld.report()[-1]
            assert row["skipped"] == len(bad) and row["never_trained"] == len(bad)
        skipped = ld.skipped()
    assert set(skipped) == bad
    assert all(repr(keys[i]) in skipped[i] for i in bad)
    assert "Permission denied" in skipped[7] and "hash" in skipped[corrupted]


def test_on_error_must_be_raise_or_skip(dataset: Path) -> None:
    data = hotset.open_dataset(dataset, decode="bytes")
    with pytest.raises(hotset.HotsetError, match="on_error must be one of 'raise', 'skip'"):
        hotset.loader(data, cache=0.2, on_error="ignore")
