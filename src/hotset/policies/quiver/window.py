"""Which planned positions are still unused, and where the next ``L`` of them end.

Quiver's Algorithm 1 looks for substitutes among the next ``10 x batch`` unused
indices only (a lookup in the cache servers is a remote call), so a cached sample
planned far ahead is not served early. ``quiver[lookahead=N]`` models that window:
:class:`UnusedPositions` is a Fenwick tree over the epoch's planned positions
(1 = unused), so the position of the ``L``-th unused one is found in logarithmic
time per request, at any data set size.
"""

from __future__ import annotations


class UnusedPositions:
    """A Fenwick tree of ``n`` positions, every one unused at first."""

    def __init__(self, n: int) -> None:
        self.n = n
        tree = [0] * (n + 1)
        for i in range(1, n + 1):  # the linear build of a tree of ones
            tree[i] += 1
            parent = i + (i & -i)
            if parent <= n:
                tree[parent] += tree[i]
        self._tree = tree
        self._top = 1 << max(0, n.bit_length() - 1) if n else 0

    def mark_used(self, pos: int) -> None:
        """Position ``pos`` (0-based) is used now."""
        i = pos + 1
        tree = self._tree
        while i <= self.n:
            tree[i] -= 1
            i += i & -i

    def end_of(self, count: int) -> int:
        """The position of the ``count``-th unused one (0-based); the last position when
        fewer are unused."""
        if count < 1:
            return -1
        pos, left, step, tree = 0, count, self._top, self._tree
        while step:
            nxt = pos + step
            if nxt <= self.n and tree[nxt] < left:
                pos = nxt
                left -= tree[nxt]
            step >>= 1
        return min(pos, self.n - 1)
