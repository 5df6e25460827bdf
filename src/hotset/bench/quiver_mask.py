"""Quiver's failure masking (FAST'20 §4.8) measured: its Redis flushed, or killed, mid-epoch.

Each run trains three epochs of a packed synthetic set through a real loader on a
real ``redis-server``: epoch 0 warms the cache, epoch 1 loses it after its first
batch (``flushed``: every entry gone, the server answers; ``killed``: the server
dies and stays down through epoch 2; ``node-flushed``: one node of a three-node
Redis Cluster loses what it held, the paper's case of one failed server of a
distributed cache), epoch 2 runs on what is left. The rows give,
per epoch, the reads the cache failed to serve that were read from storage in the
batch (``rebuild_reads``: the entry was gone; ``degraded_reads``: the cache call
failed), beside every storage request, with ``quiver[mask_failures=True]``
(substitute what is still cached, reload lost entries with the chunks) and
``False``, the default (serve each failed read from storage). Every delivered sample is
compared with its file; an epoch that lost, repeated or changed one is a failure.

    python -m hotset.bench.quiver_mask OUT.json [--n 2000] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from hotset.bench.results import write_result_file
from hotset.errors import HotsetError

_KEYS = (
    "rebuild_reads",
    "rebuild_bytes",
    "degraded_reads",
    "degraded_bytes",
    "storage_requests",
    "unit_reads",
    "storage_bytes",
    "exact_hits",
    "substitutions",
    "cache_errors",
    "wrong",
    "lost",
    "repeated",
)


def _flush(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    client.flushall()
    client.close()


def _cluster_port() -> int:
    """A free port whose cluster bus port (+10000) is free too."""
    from hotset.bench.redis_server import free_port

    for _ in range(100):
        port = free_port()
        if port < 55000:
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port + 10000))
                except OSError:
                    continue
            return port
    raise HotsetError("no free port pair for a Redis Cluster node")


@contextmanager
def _cluster() -> Iterator[tuple[str, list[str]]]:
    """Three Redis Cluster masters on loopback: (the cluster URL, each node's URL)."""
    import redis

    from hotset.bench.redis_server import LocalRedis

    cli, server = shutil.which("redis-cli"), shutil.which("redis-server")
    if cli is None or server is None:
        raise HotsetError("redis-server and redis-cli must be on PATH: install redis")
    with ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory())
        nodes: list[LocalRedis] = []
        for _ in range(3):
            port = _cluster_port()
            args = ("--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{port}.conf")
            nodes.append(LocalRedis(server, tmp, port=port, extra=args))
            stack.callback(nodes[-1].stop)
        addrs = [f"127.0.0.1:{n.port}" for n in nodes]
        subprocess.run(
            [cli, "--cluster", "create", *addrs, "--cluster-replicas", "0", "--cluster-yes"],
            check=True,
            capture_output=True,
            timeout=60,
        )
        deadline = time.monotonic() + 30
        for n in nodes:
            client = redis.Redis.from_url(n.url)
            while client.cluster("INFO").get("cluster_state") != "ok":
                if time.monotonic() > deadline:
                    raise HotsetError("the Redis Cluster did not reach cluster_state:ok")
                time.sleep(0.1)
            client.close()
        yield "redis+cluster://" + ",".join(addrs), [n.url for n in nodes]


@contextmanager
def _scenario(kind: str) -> Iterator[tuple[str, Callable[[], None]]]:
    """(the cache URL, the fault) of scenario ``kind``."""
    from hotset.bench.redis_server import local_redis

    if kind == "node-flushed":
        with _cluster() as (url, nodes):
            yield url, lambda: _flush(nodes[1])
        return
    with local_redis() as server:
        fault = {"flushed": lambda: _flush(server.url), "killed": server.kill}[kind]
        yield f"{server.url}?socket_timeout=0.3&socket_connect_timeout=0.3", fault


def run(root: Path, *, kind: str, mask: bool, workers: int, seed: int) -> list[dict[str, Any]]:
    """Three epochs of one scenario; the rows the module docstring describes."""
    import hotset
    from hotset.bench.fault_epochs import epoch_row, read_files

    data = hotset.open_dataset(root, decode="bytes")
    files = read_files(root, data.manifest.keys)
    with (
        _scenario(kind) as (url, fault),
        hotset.loader(
            data,
            system=f"quiver[mask_failures={mask}]",
            cache=url,
            cache_bytes=0.2,
            batch_size=16,
            num_workers=workers,
            seed=seed,
        ) as ld,
    ):
        rows = [epoch_row(ld, 0, files), epoch_row(ld, 1, files, fault)]
        rows.append(epoch_row(ld, 2, files))
    return [{"epoch": e, **{k: int(r[k]) for k in _KEYS}} for e, r in enumerate(rows)]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    from hotset.data import SynthConfig, make_synth
    from hotset.data.chunks import pack_dataset

    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ds"
        make_synth(root, SynthConfig(n=args.n, image_size=8, classes=4, seed=3), workers=1)
        pack_dataset(root, chunk_size=8, shuffle_seed=0)
        for kind in ("flushed", "node-flushed", "killed"):
            for mask in (False, True):
                rows = run(root, kind=kind, mask=mask, workers=args.workers, seed=args.seed)
                results.append({"scenario": kind, "mask_failures": mask, "epochs": rows})
                print(kind, mask, json.dumps(rows))
    command = (
        f"python -m hotset.bench.quiver_mask {args.out} --n {args.n} "
        f"--workers {args.workers} --seed {args.seed}"
    )
    setup = (
        f"quiver, {args.n} 8x8 PNGs packed 8 a chunk, cache 20%, batch 16, "
        f"{args.workers} workers, one local redis-server; fault after epoch 1's first batch"
    )
    write_result_file(args.out, "quiver-mask", {"setup": setup, "results": results}, command)


if __name__ == "__main__":
    main()
