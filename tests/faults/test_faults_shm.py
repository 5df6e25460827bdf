"""Hard kills leave no shared memory behind: process-group SIGKILL, SIGTERM, orphaned workers.

Every test runs the victim as a real subprocess in its own session (so its
process group can be killed like Slurm, docker or ``timeout`` do) and kills
whatever is left of that group at teardown.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from victim_support import READY_TIMEOUT, Victim, gone

from hotset.cachestore.shm import SharedMemoryCache
from hotset.cachestore.shm_gc import (
    list_segments,
    owner_identity,
    owner_state,
    process_start_time,
    reclaim_stale_segments,
)
from hotset.cli import cli

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not os.path.isdir("/dev/shm"),
    reason="needs Linux /dev/shm and /proc",
)


def _bytes_of_owner(pid: int) -> int:
    """Bytes (file sizes) of every hotset segment in /dev/shm that ``pid`` created."""
    return sum(i.size_bytes for i in list_segments() if i.owner_pid == pid)


CACHE_VICTIM = """
    import os, time
    from hotset.cachestore import CacheKey, SharedMemoryCache
    import xxhash
    cache = SharedMemoryCache("4mb", n_slots=64)
    blob = os.urandom(60_000)
    cache.put_many([(CacheKey(i, xxhash.xxh3_64_hexdigest(blob)), blob) for i in range(48)])
    print(os.getpid(), cache.name, flush=True)
    time.sleep(120)
"""


def test_process_group_sigkill_is_reclaimed_by_the_next_cache(victims: list[Victim]) -> None:
    victim = Victim(CACHE_VICTIM)
    victims.append(victim)
    pid_text, name = victim.line().split()
    pid = int(pid_text)
    assert name.startswith(f"hotset_{pid}_")
    before = _bytes_of_owner(pid)
    assert before >= 4_000_000 * 1.25  # capacity x (1 + slack) mapped in /dev/shm
    victim.kill_group()  # owner and its resource tracker die together: nobody unlinks
    assert os.path.exists(f"/dev/shm/{name}")
    assert _bytes_of_owner(pid) == before

    with SharedMemoryCache(1000, n_slots=4) as fresh:
        assert fresh.is_owner
        assert _bytes_of_owner(pid) == 0
        assert not os.path.exists(f"/dev/shm/{name}")


LOADER_VICTIM = """
    import os, time
    import torch.utils.data as tud
    from hotset.cachestore import SharedMemoryCache
    from hotset.torch.workers import exit_with_parent

    cache = SharedMemoryCache("2mb", n_slots=16)

    class Slow(tud.Dataset):
        def __len__(self):
            return 1000
        def __getitem__(self, i):
            if i >= 4:
                time.sleep(120)  # a read stuck on slow storage
            return os.getpid(), len(cache)

    loader = tud.DataLoader(Slow(), batch_size=None, num_workers=2,
                            multiprocessing_context="fork",
                            worker_init_fn=lambda _: exit_with_parent())
    it = iter(loader)
    workers = sorted({int(next(it)[0]) for _ in range(4)})
    print(os.getpid(), cache.name, *workers, flush=True)
    time.sleep(120)
"""


def test_process_group_sigkill_of_a_loader_is_reclaimed_by_cache_gc(
    victims: list[Victim],
) -> None:
    from click.testing import CliRunner

    victim = Victim(LOADER_VICTIM)
    victims.append(victim)
    pid_text, name, *worker_pids = victim.line().split()
    pid = int(pid_text)
    assert len(worker_pids) == 2
    assert _bytes_of_owner(pid) > 0
    victim.kill_group()
    assert os.path.exists(f"/dev/shm/{name}")

    result = CliRunner().invoke(cli, ["cache", "gc"])
    assert result.exit_code == 0, result.output
    assert name in result.output and "freed" in result.output
    assert _bytes_of_owner(pid) == 0


def test_sigkilled_main_process_takes_its_workers_along(victims: list[Victim]) -> None:
    victim = Victim(LOADER_VICTIM)
    victims.append(victim)
    pid_text, name, *worker_text = victim.line().split()
    workers = [int(w) for w in worker_text]
    assert len(workers) == 2 and not any(gone(w) for w in workers)

    os.kill(int(pid_text), signal.SIGKILL)  # the main process only, not its group
    victim.proc.wait(timeout=READY_TIMEOUT)
    t0 = time.monotonic()
    while not all(gone(w) for w in workers) and time.monotonic() - t0 < 5.0:
        time.sleep(0.01)
    assert all(gone(w) for w in workers), "orphaned workers still running"
    # The resource tracker (still alive: only the main process was killed) or a
    # reclaim removes the dead owner's segment.
    deadline = time.monotonic() + 5.0
    while os.path.exists(f"/dev/shm/{name}") and time.monotonic() < deadline:
        reclaim_stale_segments()
        time.sleep(0.05)
    assert not os.path.exists(f"/dev/shm/{name}")


def test_exit_with_parent_kills_a_child_whose_parent_is_alreadygone() -> None:
    # A parent pid that is not the real one: the race check must fire at once.
    code = textwrap.dedent(
        """
        import os
        from hotset.torch.workers import exit_with_parent
        exit_with_parent(parent_pid=os.getppid() + 1_000_000)
        print("survived", flush=True)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == -signal.SIGKILL and "survived" not in out.stdout
    # With the real parent alive it is set and returns.
    code = code.replace(" + 1_000_000", "").replace('"survived"', "'set'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "set", out.stderr


SIGTERM_VICTIM = """
    import os, signal, time
    from hotset.cachestore import SharedMemoryCache
    {prelude}
    cache = SharedMemoryCache("1mb", n_slots=16)
    print(os.getpid(), cache.name, signal.getsignal(signal.SIGTERM).__name__, flush=True)
    time.sleep(120)
"""


def test_sigterm_to_the_owner_unlinks_its_segment(victims: list[Victim]) -> None:
    victim = Victim(SIGTERM_VICTIM.format(prelude=""))
    victims.append(victim)
    pid_text, name, handler = victim.line().split()
    assert handler == "_exit_on_sigterm" and os.path.exists(f"/dev/shm/{name}")
    os.kill(int(pid_text), signal.SIGTERM)
    assert victim.proc.wait(timeout=READY_TIMEOUT) == 128 + signal.SIGTERM
    assert not os.path.exists(f"/dev/shm/{name}")


def test_sigterm_handler_of_the_application_is_left_alone(victims: list[Victim]) -> None:
    prelude = (
        "def mine(signum, frame): raise SystemExit(7)\n    signal.signal(signal.SIGTERM, mine)"
    )
    victim = Victim(SIGTERM_VICTIM.format(prelude=prelude))
    victims.append(victim)
    pid_text, name, handler = victim.line().split()
    assert handler == "mine"
    os.kill(int(pid_text), signal.SIGTERM)
    assert victim.proc.wait(timeout=READY_TIMEOUT) == 7  # theirs ran, and it exited cleanly
    assert not os.path.exists(f"/dev/shm/{name}")


def test_live_owners_and_foreign_files_are_never_reclaimed(victims: list[Victim]) -> None:
    victim = Victim(CACHE_VICTIM)
    victims.append(victim)
    _, name = victim.line().split()
    foreign = f"/dev/shm/not_hotset_gc_probe_{os.getpid()}"
    with open(foreign, "wb") as fh:
        fh.write(b"HOTSHM01" + bytes(200))
    try:
        removed = reclaim_stale_segments()
        assert name not in {r.name for r in removed}
        assert os.path.exists(f"/dev/shm/{name}") and os.path.exists(foreign)
    finally:
        os.unlink(foreign)


def test_owner_identity_and_pid_reuse() -> None:
    pid, start, pidns = owner_identity()
    assert pid == os.getpid() and start == process_start_time(pid) and start > 0
    assert owner_state(pid, start, pidns)[0] == "alive"
    assert owner_state(pid, start + 1, pidns) == (
        "dead",
        f"pid reused (start {start} != {start + 1})",
    )
    assert owner_state(pid, start, pidns + 1)[0] == "unknown"  # another container's pid
    assert owner_state(0, 0, 0)[0] == "unknown"
