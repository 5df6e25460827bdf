"""The fetcher's grouped settings refuse a bad value by name, before any worker starts."""

from __future__ import annotations

import pytest

from hotset.errors import HotsetError
from hotset.torch.fetch import BatchAssembly, FetchIO


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"io_threads": 0, "verify": True}, "io_threads must be an integer >= 1, got 0"),
        ({"io_threads": True, "verify": True}, "io_threads must be an integer >= 1, got True"),
        ({"io_threads": 2, "verify": "no"}, "verify must be True or False, got 'no'"),
        ({"io_threads": 2, "verify": True, "skip_errors": 1}, "skip_errors must be True"),
        ({"io_threads": 2, "verify": True, "shared": None}, "shared must be True or False"),
    ],
)
def test_bad_io_settings_name_the_value(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(HotsetError, match=match):
        FetchIO(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"decode": "jpeg"}, "decode must be one of"),
        ({"decode": "image", "transform": 3}, "transform must be a callable or None, got 3"),
        ({"decode": "bytes", "collate_fn": "x"}, "collate_fn must be a callable or None"),
        ({"decode": "bytes", "collate_inputs": 1}, "collate_inputs must be a callable or None"),
    ],
)
def test_bad_assembly_names_the_value(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(HotsetError, match=match):
        BatchAssembly(**kwargs)  # type: ignore[arg-type]


def test_good_settings_keep_their_values() -> None:
    io = FetchIO(io_threads=4, verify=False, skip_errors=True)
    assert (io.io_threads, io.verify, io.skip_errors, io.shared) == (4, False, True, False)
    assembly = BatchAssembly(decode=lambda data, key: data, transform=None)
    assert assembly.collate_fn is None and assembly.vision is None
