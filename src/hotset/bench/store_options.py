"""``bench store``'s options (:class:`StoreBenchOptions`), apart from the measurement.

The bench command group loads every suite's options to build its command line; the
measurement (:mod:`hotset.bench.store`) imports the data package and fsspec, so the
options live here and ``hotset bench`` starts as fast as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hotset.errors import HotsetError
from hotset.options import cli


def check_count(name: str, value: int, *, minimum: int) -> None:
    """Refuse anything but an int (not a bool) of at least ``minimum``, naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise HotsetError(f"{name}: must be an integer >= {minimum}, got {value!r}")


@dataclass(frozen=True)
class StoreBenchOptions:
    """What ``bench store`` reads; the command line is generated from the fields
    (:mod:`hotset.cli.typed_options`), so a run built in Python is checked alike.

    ``sample_bytes`` and ``repeats`` (of each chunk case) are Python-only.
    """

    n: int = field(default=2000, metadata=cli(type=int))
    threads: int = field(default=8, metadata=cli(type=int))
    latency_ms: float = field(default=2.0, metadata=cli(type=float))
    concurrency: int = field(default=4, metadata=cli(type=int))
    bandwidth_mb_s: float = field(default=1000.0, metadata=cli(type=float))
    chunk_size: int = field(
        default=64,
        metadata=cli("Samples read as one chunk, against as many single reads.", type=int),
    )
    sample_bytes: int = 3072
    repeats: int = 5

    def __post_init__(self) -> None:
        # the order of the checks the two measurements make, so a bad value is named
        # as it was before any work started
        if self.chunk_size < 1:
            raise HotsetError(f"--chunk-size must be a positive integer, got {self.chunk_size!r}")
        check_count("n", self.n, minimum=1)
        check_count("threads", self.threads, minimum=1)
        check_count("sample_bytes", self.sample_bytes, minimum=0)
        check_count("repeats", self.repeats, minimum=1)
