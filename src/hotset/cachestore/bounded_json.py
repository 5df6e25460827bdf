"""JSON from another party, parsed within bounds: size, nesting, and no constants.

``json.loads`` recurses once per nesting level, so a 4 kB record of nested arrays
(``[[[[...]]]]``) raises ``RecursionError``, which is no ``ValueError``: a reader
that catches only what a malformed document raises crashes on it. Here the size is
checked first, then the nesting is counted in one pass without recursion (brackets
outside strings), and only a document within both bounds reaches the parser, with
NaN and Infinity refused. Anything else is None: the caller skips it and counts it.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["load_json", "nesting"]

#: a JSON string literal, escapes included: its brackets are not nesting
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_OPEN = frozenset(b"[{")
#: every byte but the brackets: deleted before counting, so the loop sees brackets only
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))


def nesting(raw: bytes) -> int:
    """How deep ``raw``'s arrays and objects nest (0: a scalar), counted without recursion."""
    depth = deepest = 0
    for byte in _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS):
        if byte in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _no_constant(name: str) -> Any:
    raise ValueError(f"not a number: {name}")


def load_json(raw: object, *, max_bytes: int, max_depth: int) -> object | None:
    """``raw`` (bytes or str) as JSON, or None when it is larger than ``max_bytes``,
    nests deeper than ``max_depth``, is not UTF-8, holds NaN or Infinity, or does not
    parse. Never raises on what the server holds."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    if not isinstance(raw, bytes) or len(raw) > max_bytes:
        return None
    if nesting(raw) > max_depth:
        return None
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return None
