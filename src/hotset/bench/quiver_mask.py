"""Quiver's failure masking (FAST'20 §4.8) measured: its Redis flushed, or killed, mid-epoch.

Each run trains three epochs of a packed synthetic set through a real loader on a
real ``redis-server``: epoch 0 warms the cache, epoch 1 loses it after its first
batch (``flushed``: every entry gone, the server answers; ``killed``: the server
dies and stays down through epoch 2), epoch 2 runs on what is left. The rows give,
per epoch, the reads the cache failed to serve that were read from storage in the
batch (``rebuild_reads``: the entry was gone; ``degraded_reads``: the cache call
failed), beside every storage request, with ``quiver[mask_failures=True]`` (the
default: substitute what is still cached, reload lost entries with the chunks)
and ``False`` (serve each failed read from storage). Every delivered sample is
compared with its file; an epoch that lost, repeated or changed one is a failure.

    python -m hotset.bench.quiver_mask OUT.json [--n 2000] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

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


def run(root: Path, *, kind: str, mask: bool, workers: int, seed: int) -> list[dict[str, Any]]:
    """Three epochs of one scenario; the rows the module docstring describes."""
    import redis

    import hotset
    from hotset.bench.fault_epochs import epoch_row, read_files
    from hotset.bench.redis_server import local_redis

    data = hotset.open_dataset(root, decode="bytes")
    files = read_files(root, data.manifest.keys)
    with local_redis() as server:

        def flush() -> None:
            client = redis.Redis.from_url(server.url)
            client.flushall()
            client.close()

        fault = {"flushed": flush, "killed": server.kill}[kind]
        url = f"{server.url}?socket_timeout=0.3&socket_connect_timeout=0.3"
        with hotset.loader(
            data,
            system=f"quiver[mask_failures={mask}]",
            cache=url,
            cache_bytes=0.2,
            batch_size=16,
            num_workers=workers,
            seed=seed,
        ) as ld:
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
        for kind in ("flushed", "killed"):
            for mask in (False, True):
                rows = run(root, kind=kind, mask=mask, workers=args.workers, seed=args.seed)
                results.append({"scenario": kind, "mask_failures": mask, "epochs": rows})
                print(kind, mask, json.dumps(rows))
    args.out.write_text(
        json.dumps(
            {
                "command": "python -m hotset.bench.quiver_mask "
                f"{args.out} --n {args.n} --workers {args.workers} --seed {args.seed}",
                "setup": f"quiver, {args.n} 8x8 PNGs packed 8 a chunk, cache 20%, batch 16, "
                f"{args.workers} workers, one local redis-server; fault after epoch 1's "
                "first batch",
                "results": results,
            },
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
