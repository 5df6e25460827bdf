"""``hotset bench loader --dataset s3://...`` (or ``--s3-server``): the loader over a real
S3 server, with the requests and bytes of each epoch as hotset counts them and as the
server counts them.

Why: every other loader figure is measured over a *modeled* store
(:mod:`hotset.bench.loader`); here the store is an S3 server answering HTTP, so
what the table says a system costs in requests and bytes can be checked against
the server's own counters (:mod:`hotset.bench.s3_counts`), row by row. No
latency is modeled and nothing is throttled: with ``--s3-server`` the server is
SeaweedFS on loopback (:mod:`hotset.bench.s3_server`), so the speeds are this
machine's, not a cloud's, and the figure to read is requests and bytes per epoch.

Rows: the tuned ``torch`` DataLoader (:mod:`hotset.bench.torch_baseline`), the
hotset systems asked for, and ``no-io``. Reads are made without hotset's retry
wrapper (``retries=0``), so a request counted is a request sent once; a
transient failure would stop the run rather than be retried unseen. The data set
must be packed in its store when a system reads chunks (``hotset data pack
URL``), so a chunk read is a GET of a chunk object there.
"""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from hotset.bench.loader import (
    DEFAULT_SYSTEMS,
    TUNED_NOTE,
    MemoryStore,
    hotset_row,
    plain_row,
)
from hotset.bench.s3_counts import ServerCount, ServerCounter
from hotset.bench.torch_baseline import TUNED, Baseline, tuned
from hotset.errors import HotsetError

__all__ = ["run_local_s3", "run_s3"]


def _per_epoch(row: dict[str, Any], epochs: int, served: ServerCount | None) -> dict[str, Any]:
    """The row with requests and MB per epoch, hotset's count beside the server's."""
    out = dict(row)
    out["requests_per_epoch"] = round(row["storage_requests"] / epochs, 1)
    out["mb_per_epoch"] = round(row["storage_bytes"] / epochs / 1e6, 3)
    if served is not None:
        out["server_requests"] = served.requests
        out["server_bytes"] = served.bytes
        out["server_requests_per_epoch"] = round(served.requests / epochs, 1)
        out["server_mb_per_epoch"] = round(served.bytes / epochs / 1e6, 3)
    return out


def _counted(
    counter: ServerCounter | None, epochs: int, make: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    before = counter.snapshot() if counter is not None else None
    row = make()
    served = counter.snapshot() - before if counter is not None and before is not None else None
    return _per_epoch(row, epochs, served)


def run_s3(
    url: str,
    *,
    server_metrics: str | None = None,
    concurrency: int = 4,
    workers: int = 4,
    batch_size: int = 64,
    compute_ms: float = 20.0,
    cache_frac: float = 0.2,
    epochs: int = 3,
    systems: Sequence[str] = DEFAULT_SYSTEMS,
    io_threads: int = 8,
    seed: int = 0,
) -> dict[str, Any]:
    """Every row once over the data set at ``url`` (see the module); ``server_metrics`` is
    the server's Prometheus URL (SeaweedFS's), for its counts of the URL's bucket."""
    from hotset.bench.workloads import needs_chunks
    from hotset.storage.s3_client import parse_s3_url
    from hotset.systems.registry import parse_system
    from hotset.torch import open_dataset

    for name in systems:
        parse_system(name)
    if not 0 < cache_frac <= 1:
        raise HotsetError(f"cache_frac must be in (0, 1], got {cache_frac!r}")
    if epochs < 1 or workers < 0 or batch_size < 1 or compute_ms < 0 or concurrency < 1:
        raise HotsetError("epochs, batch_size and concurrency must be >= 1, workers >= 0")
    data = open_dataset(url, retries=0)  # see the module: every request sent once
    if needs_chunks(systems) and data.layout is None:
        raise HotsetError(f"{url} is not packed: run `hotset data pack {url}` first")
    counter = ServerCounter(server_metrics, parse_s3_url(url)[0]) if server_metrics else None
    manifest, store = data.manifest, data.store
    compute_s = compute_ms / 1000.0
    common: dict[str, Any] = {"workers": workers, "batch_size": batch_size, "epochs": epochs}
    how = _tuned(concurrency, workers, io_threads)
    table = [
        _counted(
            counter,
            epochs,
            lambda: plain_row(
                TUNED, store, manifest, baseline=how, store_in_flight=concurrency,
                compute_s=compute_s, seed=seed, **common,
            ),
        )
    ]  # fmt: skip
    for name in systems:
        table.append(
            _counted(
                counter,
                epochs,
                lambda name=name: hotset_row(  # type: ignore[misc]
                    name, data, cache_frac=cache_frac, compute_s=compute_s, seed=seed,
                    io_threads=io_threads, **common,
                ) | {"requests_in_flight": max(1, workers) * io_threads},
            )
        )  # fmt: skip
    memory = MemoryStore({k: store.read(k) for k in manifest.keys})
    row = plain_row("no-io", memory, manifest, compute_s=compute_s, seed=seed, **common)
    row["storage_requests"], row["storage_bytes"] = 0, 0
    table.append(_per_epoch(row, epochs, None))
    return {
        "params": {
            "dataset": url,
            "store": "a real S3 server: no modeled latency, no throttling",
            "server_counts": counter is not None,
            "workers": workers,
            "batch_size": batch_size,
            "compute_ms": compute_ms,
            "cache_frac": cache_frac,
            "n": len(manifest),
            "epochs": epochs,
            "io_threads": io_threads,
            "seed": seed,
            "chunk_size": data.layout.chunk_size if data.layout is not None else None,
            "torch": how.fields(concurrency),
            "mean_sample_bytes": round(manifest.total_bytes / len(manifest)),
        },
        "table": table,
        "notes": _notes(url, counter is not None, compute_ms, batch_size, concurrency),
    }


def _tuned(concurrency: int, workers: int, io_threads: int) -> Baseline:
    return tuned(concurrency, workers=workers, io_threads=io_threads)


def _notes(
    url: str, counted: bool, compute_ms: float, batch_size: int, in_flight: int
) -> list[str]:
    return [
        f"a real S3 server ({url}): no modeled latency, no throttling, the speeds are this "
        "machine's; read requests and MB per epoch. hotset's count is the loader's report "
        "(storage_requests + rebuild_reads, storage_bytes + rebuild_bytes + pack_bytes); "
        "torch's is one GET per sample read"
        + (
            "; server_* are the server's own counters for the bucket (GETs of any status, "
            "HEADs included, and response bytes), read before and after each row"
            if counted
            else ""
        ),
        "reads are not retried (retries=0): a request counted was sent once; a chunk read "
        "is one GET of a chunk object, scout's partial read one ranged GET per contiguous "
        "run of members (S3 answers one range per GET)",
        f"compute is a {compute_ms:g} ms sleep per batch; ceiling "
        f"{1000.0 * batch_size / compute_ms if compute_ms else math.inf:.0f} samples/s",
        TUNED_NOTE.format(in_flight=in_flight),
    ]


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """``os.environ`` with ``values`` set (DataLoader workers inherit it), restored after."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run_local_s3(
    *, n: int, sizes: str, image_size: int, chunk_size: int, seed: int, **rows: Any
) -> dict[str, Any]:
    """``--s3-server``: a throwaway SeaweedFS on loopback, a synthetic set of ``n`` samples
    uploaded to it and packed there (``hotset data upload``, ``hotset data pack URL``),
    then :func:`run_s3` with the server's counts."""
    from hotset.bench.s3_server import local_s3
    from hotset.data import SynthConfig, make_synth
    from hotset.data.store_pack import pack_store
    from hotset.data.upload import upload_dataset

    with tempfile.TemporaryDirectory(prefix="hotset-bench-s3-") as tmp:
        local = Path(tmp) / "synth"
        make_synth(
            local, SynthConfig(n=n, image_size=image_size, seed=seed, sizes=sizes), workers=1
        )
        with local_s3(Path(tmp) / "server") as server, _environment(server.env()):
            bucket = server.create_bucket("hotset-bench")
            url = f"s3://{bucket}/synth"
            upload_dataset(local, url)
            pack_store(url, chunk_size=chunk_size)
            result = run_s3(url, server_metrics=server.metrics_url, seed=seed, **rows)
    result["params"] |= {"server": "SeaweedFS (weed server -s3) on loopback", "sizes": sizes}
    return result
