"""check_key: one spelling per key, shared by every store."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotset.errors import HotsetError
from hotset.storage import check_key

_PART = st.text(alphabet="abcXYZ019_-.", min_size=1, max_size=6).filter(
    lambda p: p not in (".", "..")
)


@pytest.mark.parametrize("key", ["", "/abs", "a/../b", "..", "a//b", "a/", "./a", "a/.", "a\x00b"])
def test_bad_keys_are_rejected_naming_the_key(key: str) -> None:
    with pytest.raises(HotsetError, match="bad store key"):
        check_key(key)


def test_non_string_key_is_rejected() -> None:
    with pytest.raises(HotsetError, match="must be a string"):
        check_key(3)  # type: ignore[arg-type]


@given(st.lists(_PART, min_size=1, max_size=4))
def test_canonical_relative_paths_pass_unchanged(parts: list[str]) -> None:
    key = "/".join(parts)
    assert check_key(key) == key
