"""Package files: the format round-trips, a damaged file is refused, a growing set's keys."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotset.engine.packages import (
    PACKAGE_BYTES,
    PackageFiles,
    PackageSet,
    decode,
    encode,
    header_bytes,
)
from hotset.errors import HotsetError, IntegrityError


def test_the_package_size_is_the_papers_one_megabyte() -> None:
    assert PACKAGE_BYTES == 1 << 20


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**40), st.binary(max_size=64)), unique_by=lambda t: t[0]))
def test_encode_then_decode_is_the_identity(items: list[tuple[int, bytes]]) -> None:
    blob = encode(items)
    assert len(blob) == header_bytes(len(items)) + sum(len(b) for _, b in items)
    assert list(decode(blob).items()) == items


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b"X" + b[1:],  # magic
        lambda b: b[:-1],  # truncated
        lambda b: b + b"\0",  # trailing bytes
        lambda b: b[:12],  # header cut
    ],
)
def test_a_damaged_package_is_an_integrity_error(damage: object) -> None:
    blob = encode([(3, b"abc"), (7, b"defg")])
    with pytest.raises(IntegrityError):
        decode(damage(blob))  # type: ignore[operator]


def test_a_set_sizes_its_packages_and_checks_what_it_reads() -> None:
    sizes = np.array([10, 20, 30, 40], dtype=np.int64)
    packages = PackageSet(sizes, prefix="p/")
    a = packages.add([3, 0])
    b = packages.add([1])
    assert (a, b) == (0, 1) and packages.n_chunks == 2
    assert packages.chunk_sizes.tolist() == [header_bytes(2) + 50, header_bytes(1) + 20]
    assert packages.chunk_keys[1] == "p/p00000001.pkg"
    blob = encode([(3, b"x" * 40), (0, b"y" * 10)])
    assert packages.split(0, blob) == {3: b"x" * 40, 0: b"y" * 10}
    with pytest.raises(IntegrityError, match="members differ"):
        packages.split(1, blob)
    with pytest.raises(HotsetError, match="at least one member"):
        packages.add([])
    # a reader knows the key by formula and the members from the file itself
    files = PackageFiles(4, prefix="p/")
    assert files.chunk_keys[0] == packages.chunk_keys[0]
    assert files.split(0, blob) == {3: b"x" * 40, 0: b"y" * 10}
    assert len(files.members(0)) == 0
