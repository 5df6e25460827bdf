"""Which samples go into iCACHE's next package (HPCA'23 §III-C), as a pure function of state.

**Dynamic** packaging (the paper's): once an epoch's H-list is known, the packer
fills packages with the L-samples the L-cache *missed* last epoch (so a sample
substituted away is trained later) and then with L-samples drawn at random
(seeded by the epoch), each at most once per epoch, cutting a package whenever
it reaches the package size. Packages are defined one at a time, just ahead of
the loading step that reads them.

**Static** packaging (the ``icache_static_pack`` ablation, TFRecord-style): every
id is packed once, in a seeded shuffle, into fixed packages of the same size;
each epoch loads them in a seeded order. A static package mixes H- and L-samples
and samples already trained, so more of each package read is wasted: the read
amplification the paper attributes to static packaging.

The package size is :data:`~hotset.engine.packages.PACKAGE_BYTES` (1 MB), or half
the L-cache when the L-cache is smaller than two packages (the paper's rule
that the L-cache holds at least one package, kept with room to load the next
while the last is served): the benchmark data sets are small.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from hotset.engine.arrays import IntArray
from hotset.engine.packages import PackageSet
from hotset.errors import HotsetError

PACKAGINGS = ("dynamic", "static")


class Packer:
    """Defines packages in a :class:`PackageSet` (see the module docstring)."""

    def __init__(self, sizes: IntArray, *, seed: int, packaging: str, package_bytes: int) -> None:
        if packaging not in PACKAGINGS:
            raise HotsetError(
                f"icache: packaging must be one of {', '.join(PACKAGINGS)} or 'none', "
                f"got {packaging!r}"
            )
        if isinstance(package_bytes, bool) or not isinstance(package_bytes, int):
            raise HotsetError(f"icache: package_bytes must be an integer, got {package_bytes!r}")
        if package_bytes < 1:
            raise HotsetError(f"icache: package_bytes must be >= 1, got {package_bytes!r}")
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.seed = int(seed)
        self.static = packaging == "static"
        self.package_bytes = package_bytes
        self.packages = PackageSet(self.sizes, reusable=self.static)
        self._queue: deque[int] = deque()  # dynamic: ids to pack; static: units to load
        self._packed: set[int] = set()  # static: units already written
        self._target = 1  # dynamic: this epoch's package size

    def target(self, l_capacity: int) -> int:
        """Package size for an L-cache of ``l_capacity`` bytes (see the module docstring)."""
        return max(1, min(self.package_bytes, l_capacity // 2))

    def begin_epoch(self, epoch: int, l_ids: IntArray, missed: Iterable[int], target: int) -> None:
        """Queue this epoch's packing: missed L-samples first, then random L-samples."""
        rng = np.random.default_rng([self.seed, int(epoch), 23])
        if self.static:
            if not self.packages.n_chunks and len(l_ids):
                self._cut(rng.permutation(len(self.sizes)).tolist(), target)
            self._queue = deque(rng.permutation(self.packages.n_chunks).tolist())
            return
        l_set = set(l_ids.tolist())
        first = [s for s in dict.fromkeys(missed) if s in l_set]
        chosen = set(first)
        rest = [s for s in rng.permutation(l_ids).tolist() if s not in chosen]
        self._queue = deque(first + rest)
        self._target = target

    def _cut(self, ids: list[int], target: int) -> None:
        """Define packages of ``ids`` in order, each closed once it reaches ``target``."""
        pkg: list[int] = []
        size = 0
        for sid in ids:
            pkg.append(sid)
            size += int(self.sizes[sid])
            if size >= target:
                self.packages.add(pkg)
                pkg, size = [], 0
        if pkg:
            self.packages.add(pkg)

    def next(self, skip: Callable[[int], bool]) -> tuple[int, bool] | None:
        """The next package to load, and whether it must be written first; None: none left.

        ``skip(id)``: whether an id is not worth packing now (resident, or trained this epoch).
        """
        if self.static:
            if not self._queue:
                return None
            unit = self._queue.popleft()
            fresh = unit not in self._packed
            self._packed.add(unit)
            return unit, fresh
        pkg: list[int] = []
        size = 0
        target = self._target
        while self._queue and size < target:
            sid = self._queue.popleft()
            if skip(sid):
                continue
            pkg.append(sid)
            size += int(self.sizes[sid])
        if not pkg:
            return None
        return self.packages.add(pkg), True

    def state(self) -> dict[str, Any]:
        return {
            "packages": self.packages.state(),
            "queue": list(self._queue),
            "packed": sorted(self._packed),
            "target": self._target,
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self.packages.load_state(state["packages"])
        self._queue = deque(int(x) for x in state["queue"])
        self._packed = {int(x) for x in state["packed"]}
        self._target = int(state["target"])
