"""``system="auto"``, the loader's default: a documented choice from what is known at build.

A user who changes nothing should get the system the committed benchmarks show
to win for their case, and never one that wins by training a subset. What the
loader knows when it is built is whether the data set is packed into chunks
(a ``chunks.json`` layout beside it), how many ranks there are and whether a
cache is shared; it cannot know whether the loop will feed losses back, so the
choice does not depend on it. :func:`choose` is a pure function of those facts:
the loader, ``hotset simulate --system auto`` and ``hotset advise`` call it with
the same facts and so make the same decision, and it is printed with its reason
in ``loader.summary()``.

The rule and the figures behind it (``benchmarks/results/matrix.json``, measured
on the real clock, every system trained on 90% or more of the ids per epoch):

* **packed** -> ``quiver``: it loads whole chunks and serves any cached sample of
  the epoch in place of a missing one, so one request brings many samples and
  the cache serves almost every request (exact hits plus substitutions);
* **not packed** -> ``minio``: a sample read costs one request whatever the
  system, and MinIO's static cache keeps the hits of its whole budget every
  epoch (LRU's fall to about 2% on a random order); Quiver on single files made
  more requests than no cache at all (6,364 against 6,000 in 3 epochs of 2,000
  ImageNet-like samples on the cloud-nas preset, measured while writing this).
"""

from __future__ import annotations

from dataclasses import dataclass

from hotset.errors import HotsetError

AUTO = "auto"


@dataclass(frozen=True)
class Choice:
    """The system ``auto`` picked and why, in words a user reads in ``summary()``."""

    system: str
    reason: str

    def describe(self) -> str:
        return f"{self.system} (auto: {self.reason})"


def is_auto(spec: str) -> bool:
    """Whether ``spec`` asks for the automatic choice (``auto``; options are refused)."""
    name = spec.strip()
    if name.startswith(AUTO + "[") or name == AUTO + "[]":
        raise HotsetError(
            f"system {spec!r}: auto takes no options; name the system to give it options "
            "(`hotset systems --options NAME`)"
        )
    return name == AUTO


def choose(*, packed: bool) -> Choice:
    """The system for a data set that is (or is not) packed into chunks."""
    if packed:
        return Choice(
            "quiver",
            "the data set is packed into chunks: one request brings a chunk, and any "
            "cached sample of the epoch serves in place of a missing one",
        )
    return Choice(
        "minio",
        "the data set is not packed (`hotset data pack DIR` packs it, and then auto picks "
        "quiver): every sample is read once per epoch and the cache keeps its hits",
    )
