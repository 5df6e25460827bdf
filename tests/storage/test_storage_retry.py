"""RetryingStore: transient faults are retried, permanent ones named, hung reads abandoned.

The faulty stores here are real stores: they wrap a :class:`LocalStore` over real
files and raise on a scripted or seeded schedule before the inner read, the way
a flaky network mount or object store would.
"""

from __future__ import annotations

import errno
import multiprocessing
import pickle
import random
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hotset
from hotset.errors import HotsetError, StorageError
from hotset.storage import LocalStore, RetryingStore, Store
from hotset.storage.retry import is_transient
from store_support import FaultyStore

KEYS = [f"d/{i:03d}.bin" for i in range(12)]


def _blob(i: int) -> bytes:
    return bytes([i % 251]) * (10 + 7 * i)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("retry")
    store = LocalStore(path)
    for i, key in enumerate(KEYS):
        store.write(key, _blob(i))
    return path


class ScriptedStore(FaultyStore):
    """Raises the scripted exceptions for a key, in order, then reads normally."""

    def __init__(self, inner: Store, script: Mapping[str, Sequence[BaseException]]) -> None:
        super().__init__(inner)
        self.script = {k: list(v) for k, v in script.items()}
        self.calls: list[str] = []

    def _before(self, key: str) -> None:
        with self._lock:
            self.calls.append(key)
            pending = self.script.get(key)
            exc = pending.pop(0) if pending else None
            if exc is not None:
                self.faults += 1
        if exc is not None:
            raise exc

    def __repr__(self) -> str:
        return f"ScriptedStore({self.inner!r})"


class FlakyStore(FaultyStore):
    """Fails each request with probability ``p`` (an OSError), on a seeded schedule."""

    def __init__(self, inner: Store, *, p: float, seed: int) -> None:
        super().__init__(inner)
        self.p = p
        self.rng = random.Random(seed)

    def _before(self, key: str) -> None:
        with self._lock:
            fail = self.rng.random() < self.p
            if fail:
                self.faults += 1
        if fail:
            raise OSError(errno.EIO, "injected I/O error", key)


class HangingStore(FaultyStore):
    """The first ``hangs`` reads block until ``release`` is set (a read that never answers)."""

    def __init__(self, inner: Store, *, hangs: int) -> None:
        super().__init__(inner)
        self.hangs = hangs
        self.release = threading.Event()

    def _before(self, key: str) -> None:
        with self._lock:
            hang = self.faults < self.hangs
            if hang:
                self.faults += 1
        if hang:
            self.release.wait()

    def __getstate__(self) -> dict[str, object]:
        state = super().__getstate__()
        del state["release"]
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        super().__setstate__(state)
        self.release = threading.Event()


class FakeTime:
    """A clock that only sleeping moves, so backoff and deadlines are checked exactly."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def test_retries_transient_errors_then_succeeds(root: Path) -> None:
    key = KEYS[3]
    inner = ScriptedStore(
        LocalStore(root),
        {key: [ConnectionResetError("reset"), TimeoutError("slow"), OSError(errno.EIO, "eio")]},
    )
    fake = FakeTime()
    store = RetryingStore(
        inner, backoff_s=0.1, max_backoff_s=0.3, sleep=fake.sleep, clock=fake.clock
    )
    assert store.read(key) == _blob(3)
    assert inner.calls == [key] * 4
    assert store.retries == 3 and store.failures == 0 and store.timeouts == 0
    # full jitter: retry k waits in [0, min(max_backoff, backoff * 2**k)]
    assert len(fake.sleeps) == 3
    for k, slept in enumerate(fake.sleeps):
        assert 0 <= slept <= min(0.3, 0.1 * 2**k)
    # stats count the one logical read; the inner store saw only the attempt that got through
    assert store.stats().reads == 1 and store.stats().bytes_read == len(_blob(3))
    assert inner.stats().reads == 1
    assert store.retry_stats() == {"retries": 3, "timeouts": 0, "failures": 0}
    store.reset_stats()
    assert store.retries == 0 and store.stats().reads == 0


def test_jitter_is_deterministic_for_a_seed(root: Path) -> None:
    def sleeps(seed: int) -> list[float]:
        inner = ScriptedStore(LocalStore(root), {KEYS[0]: [OSError("x")] * 5})
        fake = FakeTime()
        RetryingStore(inner, seed=seed, sleep=fake.sleep, clock=fake.clock).read(KEYS[0])
        return fake.sleeps

    assert sleeps(1) == sleeps(1)
    assert sleeps(1) != sleeps(2)


@pytest.mark.parametrize(
    "exc",
    [
        FileNotFoundError(errno.ENOENT, "gone"),
        PermissionError(errno.EACCES, "denied"),
        IsADirectoryError(errno.EISDIR, "a dir"),
        NotADirectoryError(errno.ENOTDIR, "not a dir"),
    ],
)
def test_permanent_errors_fail_at_once_naming_key_and_store(root: Path, exc: OSError) -> None:
    key = KEYS[1]
    inner = ScriptedStore(LocalStore(root), {key: [exc]})
    fake = FakeTime()
    store = RetryingStore(inner, sleep=fake.sleep, clock=fake.clock)
    with pytest.raises(StorageError) as info:
        store.read(key)
    assert info.value.__cause__ is exc
    message = str(info.value)
    assert repr(key) in message and repr(inner) in message and str(root) in message
    assert "permanent" in message
    assert isinstance(info.value, HotsetError)
    assert inner.calls == [key] and fake.sleeps == [] and store.failures == 1
    assert not is_transient(exc)


def test_hotset_errors_pass_through_unretried(root: Path) -> None:
    inner = ScriptedStore(LocalStore(root), {})
    store = RetryingStore(inner, sleep=FakeTime().sleep)
    with pytest.raises(HotsetError, match=r"no such key 'd/missing\.bin'") as info:
        store.read("d/missing.bin")
    assert not isinstance(info.value, StorageError)
    assert inner.calls == ["d/missing.bin"]


def test_gives_up_after_retries(root: Path) -> None:
    key = KEYS[2]
    errors = [OSError(errno.EIO, f"fault {i}") for i in range(10)]
    inner = ScriptedStore(LocalStore(root), {key: errors})
    fake = FakeTime()
    store = RetryingStore(inner, retries=3, sleep=fake.sleep, clock=fake.clock)
    with pytest.raises(StorageError, match=r"gave up after 4 attempts \(retries=3\)") as info:
        store.read(key)
    assert info.value.__cause__ is errors[3]
    assert repr(key) in str(info.value) and repr(inner) in str(info.value)
    assert len(inner.calls) == 4 and store.retries == 3 and store.failures == 1


def test_deadline_bounds_a_read(root: Path) -> None:
    key = KEYS[4]
    inner = ScriptedStore(LocalStore(root), {key: [OSError("down")] * 1000})
    fake = FakeTime()
    store = RetryingStore(
        inner,
        retries=1000,
        deadline_s=2.0,
        backoff_s=0.25,
        max_backoff_s=0.25,
        sleep=fake.sleep,
        clock=fake.clock,
    )
    start = fake.now
    with pytest.raises(StorageError, match=r"deadline_s=2") as info:
        store.read(key)
    assert fake.now - start < 2.0  # no sleep was begun that would end past the deadline
    assert 2 < len(inner.calls) < 1000
    assert repr(key) in str(info.value)


def test_deadline_in_real_time(root: Path) -> None:
    inner = ScriptedStore(LocalStore(root), {KEYS[5]: [OSError("down")] * 1000})
    store = RetryingStore(inner, retries=1000, deadline_s=0.3, backoff_s=0.02, max_backoff_s=0.05)
    start = time.monotonic()
    with pytest.raises(StorageError, match="deadline"):
        store.read(KEYS[5])
    assert time.monotonic() - start < 0.5


def test_timeout_abandons_a_hung_read_and_retries(root: Path) -> None:
    inner = HangingStore(LocalStore(root), hangs=1)
    store = RetryingStore(inner, timeout_s=0.2, backoff_s=0.0, max_backoff_s=0.0)
    try:
        start = time.monotonic()
        assert store.read(KEYS[6]) == _blob(6)
        took = time.monotonic() - start
        assert 0.2 <= took < 2.0
        assert store.timeouts == 1 and store.retries == 1
        # the thread of the abandoned read is a daemon: it never keeps the process alive
        stuck = [t for t in threading.enumerate() if t.name == "hotset-retry-read"]
        assert stuck and all(t.daemon for t in stuck)
    finally:
        inner.release.set()


def test_a_read_that_always_hangs_fails_in_bounded_time(root: Path) -> None:
    inner = HangingStore(LocalStore(root), hangs=10**9)
    store = RetryingStore(inner, retries=2, timeout_s=0.2, backoff_s=0.0, max_backoff_s=0.0)
    try:
        start = time.monotonic()
        with pytest.raises(StorageError, match="TimeoutError") as info:
            store.read(KEYS[7])
        assert time.monotonic() - start < 2.0
        assert repr(KEYS[7]) in str(info.value) and repr(inner) in str(info.value)
        assert isinstance(info.value.__cause__, TimeoutError)
        assert store.timeouts == 3
    finally:
        inner.release.set()


def test_deadline_caps_the_timeout(root: Path) -> None:
    inner = HangingStore(LocalStore(root), hangs=10**9)
    store = RetryingStore(inner, retries=100, timeout_s=30.0, deadline_s=0.3)
    try:
        start = time.monotonic()
        with pytest.raises(StorageError):
            store.read(KEYS[8])
        assert time.monotonic() - start < 1.5
    finally:
        inner.release.set()


def test_read_many_falls_back_to_single_reads(root: Path) -> None:
    keys = KEYS[:6]
    inner = ScriptedStore(LocalStore(root), {KEYS[2]: [OSError("blip"), OSError("blip")]})
    store = RetryingStore(inner, sleep=FakeTime().sleep)
    assert store.read_many(keys) == [_blob(i) for i in range(6)]
    assert store.retries == 2  # the batch, then KEYS[2] alone once
    assert store.stats().reads == 6
    assert store.read_many([]) == []
    assert store.read_many(keys) == [_blob(i) for i in range(6)]
    assert store.stats().reads == 12


def test_read_many_permanent_error_names_the_batch(root: Path) -> None:
    inner = ScriptedStore(LocalStore(root), {KEYS[1]: [PermissionError(errno.EACCES, "no")]})
    store = RetryingStore(inner, sleep=FakeTime().sleep)
    with pytest.raises(StorageError, match=r"'d/000.bin' and 2 more") as info:
        store.read_many(KEYS[:3])
    assert repr(inner) in str(info.value)
    assert isinstance(info.value.__cause__, PermissionError)


def test_size_is_retried(root: Path) -> None:
    inner = ScriptedStore(LocalStore(root), {KEYS[9]: [ConnectionError("x")]})
    store = RetryingStore(inner, sleep=FakeTime().sleep)
    assert store.size(KEYS[9]) == len(_blob(9))
    assert store.exists(KEYS[9]) and not store.exists("d/nope.bin")
    assert list(store.list_keys()) == KEYS
    assert store.retries == 1


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("retries", -1),
        ("retries", 2.5),
        ("retries", True),
        ("deadline_s", 0),
        ("deadline_s", float("nan")),
        ("deadline_s", float("inf")),
        ("deadline_s", "60"),
        ("timeout_s", 0),
        ("timeout_s", -1.0),
        ("backoff_s", -0.1),
        ("max_backoff_s", 0.01),
        ("seed", "x"),
        ("sleep", 3),
        ("clock", "now"),
    ],
)
def test_options_are_validated(root: Path, option: str, value: object) -> None:
    with pytest.raises(HotsetError, match=rf"^{option}: .*{value!r}"):
        RetryingStore(LocalStore(root), **{option: value})  # type: ignore[arg-type]


def test_inner_must_be_a_store() -> None:
    with pytest.raises(HotsetError, match="inner: expected a Store, got 'nope'"):
        RetryingStore("nope")  # type: ignore[arg-type]


def test_repr_names_the_inner_store(root: Path) -> None:
    store = RetryingStore(LocalStore(root), retries=3, deadline_s=5, timeout_s=0.5)
    assert repr(store) == (
        f"RetryingStore(LocalStore({str(root)!r}), retries=3, deadline_s=5, timeout_s=0.5)"
    )


def _read_in_child(store: RetryingStore, key: str) -> tuple[bytes, int, int]:
    data = store.read(key)
    return data, store.stats().reads, store.max_retries


def test_pickles_and_reads_in_another_process(root: Path) -> None:
    inner = ScriptedStore(LocalStore(root), {KEYS[10]: [OSError("once")]})
    store = RetryingStore(inner, retries=5, deadline_s=7.0, timeout_s=1.0, seed=3)
    assert store.read(KEYS[10]) == _blob(10)  # starts its daemon thread and counts
    clone = pickle.loads(pickle.dumps(store))
    assert repr(clone) == repr(store)
    assert (clone.max_retries, clone.deadline_s, clone.timeout_s, clone.seed) == (5, 7.0, 1.0, 3)
    assert clone.stats().reads == 0 and clone.retries == 0  # counters stay in their process
    assert clone.read(KEYS[11]) == _blob(11)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        data, reads, retries = pool.apply(_read_in_child, (store, KEYS[11]))
    assert (data, reads, retries) == (_blob(11), 1, 5)


def test_open_dataset_wraps_by_default(tmp_path: Path) -> None:
    from hotset.data import SynthConfig, make_synth

    make_synth(tmp_path / "ds", SynthConfig(n=20, image_size=4, classes=2), workers=1)
    data = hotset.open_dataset(tmp_path / "ds", decode="bytes")
    assert isinstance(data.store, RetryingStore) and isinstance(data.store.inner, LocalStore)
    assert (data.store.max_retries, data.store.deadline_s, data.store.timeout_s) == (8, 60.0, None)
    plain = hotset.open_dataset(tmp_path / "ds", retries=0)
    assert isinstance(plain.store, LocalStore)
    timed = hotset.open_dataset(tmp_path / "ds", retries=0, read_timeout_s=2.0)
    assert isinstance(timed.store, RetryingStore) and timed.store.timeout_s == 2.0
    mine = FlakyStore(LocalStore(tmp_path / "ds"), p=0.0, seed=0)
    given_store = hotset.open_dataset(tmp_path / "ds", store=mine, read_deadline_s=5)
    assert isinstance(given_store.store, RetryingStore) and given_store.store.inner is mine
    assert given_store.store.deadline_s == 5.0
    already = RetryingStore(mine, retries=2)
    assert hotset.open_dataset(tmp_path / "ds", store=already).store is already
    for bad, match in [
        ({"retries": -1}, "retries: .*-1"),
        ({"read_deadline_s": 0}, "read_deadline_s: .*0"),
        ({"read_timeout_s": float("nan")}, "read_timeout_s: .*nan"),
        ({"store": "x"}, "store: expected a Store"),
    ]:
        with pytest.raises(HotsetError, match=match):
            hotset.open_dataset(tmp_path / "ds", **bad)  # type: ignore[arg-type]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    p=st.floats(min_value=0.0, max_value=0.2),
    seed=st.integers(min_value=0, max_value=2**32),
    batched=st.booleans(),
)
def test_every_read_returns_the_right_bytes(root: Path, p: float, seed: int, batched: bool) -> None:
    # retries=40: all 41 attempts fail with probability p**41 <= 0.2**41, about 2e-29
    inner = FlakyStore(LocalStore(root), p=p, seed=seed)
    store = RetryingStore(inner, retries=40, seed=seed, sleep=FakeTime().sleep)
    got = store.read_many(KEYS) if batched else [store.read(key) for key in KEYS]
    assert got == [_blob(i) for i in range(len(KEYS))]
    assert store.failures == 0 and store.stats().reads == len(KEYS)
    if not batched:
        assert store.retries == inner.faults  # every fault was retried, once each
