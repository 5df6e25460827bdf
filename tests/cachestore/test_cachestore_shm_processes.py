"""SharedMemoryCache across real processes: fork and spawn workers, kills, crashes, tearing."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from typing import Any

import cachestore_support as support
import pytest
from cachestore_support import item, payload

from hotset.cachestore import CacheKey
from hotset.cachestore.shm import SharedMemoryCache

JOIN_TIMEOUT = 30


@pytest.fixture
def filled() -> Iterator[tuple[SharedMemoryCache, list[tuple[CacheKey, bytes]]]]:
    """An owned cache holding 40 random payloads of varied sizes (one empty)."""
    cache = SharedMemoryCache(400_000, n_slots=64)
    entries = [item(i, payload(i, (i * 997) % 5000)) for i in range(40)]
    cache.put_many(entries)
    yield cache, entries
    cache.close()


@pytest.fixture
def children() -> Iterator[list[multiprocessing.process.BaseProcess]]:
    """Processes a test starts; any still alive at teardown are killed (no hung session)."""
    started: list[multiprocessing.process.BaseProcess] = []
    yield started
    for process in started:
        if process.is_alive():
            process.kill()
            process.join(5)


def _start(
    children: list[multiprocessing.process.BaseProcess], ctx: Any, target: object, *args: object
) -> multiprocessing.process.BaseProcess:
    process = ctx.Process(target=target, args=args, daemon=True)
    children.append(process)
    process.start()
    return process


def _join(process: multiprocessing.process.BaseProcess) -> None:
    process.join(JOIN_TIMEOUT)
    assert process.exitcode == 0, f"child exited with {process.exitcode}"


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_workers_read_the_parents_bytes_and_write_their_own(
    filled: tuple[SharedMemoryCache, list[tuple[CacheKey, bytes]]],
    method: str,
    children: list[multiprocessing.process.BaseProcess],
) -> None:
    cache, entries = filled
    ctx = multiprocessing.get_context(method)
    queue = ctx.Queue()
    new_items = [item(i, payload(10_000 + i, 3000)) for i in range(50, 54)]
    keys = [k for k, _ in entries]
    child = _start(children, ctx, support.read_and_write, cache, keys, new_items, queue)
    pid, child_is_owner, got = queue.get(timeout=JOIN_TIMEOUT)
    _join(child)
    assert pid != os.getpid() and not child_is_owner
    assert got == [d for _, d in entries]
    # What the worker wrote is in the parent's cache, byte for byte.
    assert cache.get_many([k for k, _ in new_items]) == [d for _, d in new_items]
    assert cache.used_bytes() == sum(len(d) for _, d in entries + new_items)
    # The child's exit did not unlink the parent's segment.
    assert os.path.exists(f"/dev/shm/{cache.name}")


def test_a_killed_worker_is_replaced_by_one_that_sees_the_same_bytes(
    filled: tuple[SharedMemoryCache, list[tuple[CacheKey, bytes]]],
    children: list[multiprocessing.process.BaseProcess],
) -> None:
    cache, entries = filled
    keys = [k for k, _ in entries]
    ctx = multiprocessing.get_context("spawn")
    # One queue per worker: a worker killed right after sending may still hold its queue's lock.
    first_queue, second_queue = ctx.Queue(), ctx.Queue()
    first = _start(children, ctx, support.read_then_hang, cache, keys, first_queue)
    assert first_queue.get(timeout=JOIN_TIMEOUT) == [d for _, d in entries]
    os.kill(first.pid, signal.SIGKILL)  # type: ignore[arg-type]
    first.join(JOIN_TIMEOUT)
    assert first.exitcode == -signal.SIGKILL
    second = _start(children, ctx, support.read_and_write, cache, keys, [], second_queue)
    _, _, got = second_queue.get(timeout=JOIN_TIMEOUT)
    _join(second)
    assert got == [d for _, d in entries]


def test_a_writer_killed_mid_write_leaves_no_lock_and_no_torn_sample(
    filled: tuple[SharedMemoryCache, list[tuple[CacheKey, bytes]]],
    children: list[multiprocessing.process.BaseProcess],
) -> None:
    cache, entries = filled
    victim = 7
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = _start(children, ctx, support.crash_mid_write, cache, victim, queue)
    assert queue.get(timeout=JOIN_TIMEOUT) == "crashing"
    child.join(JOIN_TIMEOUT)
    assert child.exitcode == -signal.SIGKILL
    keys = [k for k, _ in entries]
    started = time.monotonic()
    got = cache.get_many(keys)
    assert time.monotonic() - started < 5, "a reader waited on a dead writer"
    assert got[victim] is None  # half-written: a miss, never the scribbled bytes
    assert got[:victim] + got[victim + 1 :] == [
        d for i, (_, d) in enumerate(entries) if i != victim
    ]
    # The kernel dropped the dead writer's lock; the next write repairs the index.
    fresh = item(60, payload(60, 1000))
    cache.put_many([fresh])
    assert cache.get_many([fresh[0], keys[victim]]) == [fresh[1], None]
    survivors = sum(len(d) for i, (_, d) in enumerate(entries) if i != victim)
    assert cache.used_bytes() == survivors + 1000
    # The repaired allocator hands out exactly the rest of the budget.
    room = cache.capacity_bytes - cache.used_bytes()
    last = item(61, payload(61, room))
    cache.put_many([last])
    assert cache.used_bytes() == cache.capacity_bytes
    assert cache.get_many([*keys[:victim], last[0]]) == [d for _, d in entries[:victim]] + [last[1]]


def test_readers_never_see_a_torn_sample_while_a_writer_rewrites_it(
    children: list[multiprocessing.process.BaseProcess],
) -> None:
    size = 256 * 1024
    first = item(0, bytes([0x11]) * size)
    second = item(0, bytes([0xEE]) * size)
    with SharedMemoryCache(2 * size, n_slots=1, arena_slack=0) as cache:
        cache.put_many([first])
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        writer = _start(children, ctx, support.alternate_writes, cache, first, second, 1.0, queue)
        assert queue.get(timeout=JOIN_TIMEOUT) == "started"
        seen = {first[1]: 0, second[1]: 0, None: 0}
        while writer.is_alive():
            for key in (first[0], second[0]):
                value = cache.get_many([key])[0]
                assert value in seen, "a torn or foreign sample was served"
                seen[value] += 1
        rounds = queue.get(timeout=JOIN_TIMEOUT)
        _join(writer)
    assert rounds > 10
    assert seen[first[1]] > 0 and seen[second[1]] > 0  # the reads overlapped the writes


def test_an_unrelated_process_attaching_and_exiting_does_not_destroy_the_segment(
    filled: tuple[SharedMemoryCache, list[tuple[CacheKey, bytes]]],
) -> None:
    cache, entries = filled
    key, data = entries[5]
    code = textwrap.dedent(
        f"""
        from hotset.cachestore import CacheKey, SharedMemoryCache
        c = SharedMemoryCache(name={cache.name!r}, create=False)
        print(c.get_many([CacheKey({key.sample_id}, {key.content_hash!r})])[0].hex())
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=JOIN_TIMEOUT
    )
    assert out.returncode == 0, out.stderr
    assert bytes.fromhex(out.stdout.strip()) == data
    assert "leaked" not in out.stderr
    assert os.path.exists(f"/dev/shm/{cache.name}")
    assert cache.get_many([key]) == [data]


def test_a_killed_owner_leaves_nothing_in_dev_shm() -> None:
    code = textwrap.dedent(
        """
        import os, signal, sys
        from hotset.cachestore import SharedMemoryCache
        c = SharedMemoryCache(1000, n_slots=4)
        print(c.name, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=JOIN_TIMEOUT
    )
    assert out.returncode == -signal.SIGKILL
    name = out.stdout.strip()
    assert name.startswith("hotset_")
    deadline = time.monotonic() + 10
    while os.path.exists(f"/dev/shm/{name}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/dev/shm/{name}")
