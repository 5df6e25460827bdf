"""``bench sim``'s options (:class:`SimBenchOptions`), apart from the replay itself.

The bench command group loads every suite's options to build its command line; the
replay (:mod:`hotset.bench.sim`) imports every policy, which would more than double
the time ``hotset bench`` takes to start, so the options live here, checked against
the policy registry only when an instance is made.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hotset import options as typed
from hotset.errors import HotsetError
from hotset.options import cli


def _policy_list(text: str, option: str) -> tuple[str, ...] | None:
    """``--policy``: a comma list of policy names; empty text keeps every classic policy."""
    return typed.texts(text, option) if text else None


@dataclass(frozen=True)
class SimBenchOptions:
    """What ``bench sim`` replays; the command line is generated from the fields
    (:mod:`hotset.cli.typed_options`), so a run built in Python is checked alike."""

    accesses: int = field(default=1_000_000, metadata=cli(type=int))
    n: int = field(default=100_000, metadata=cli("Distinct ids.", type=int))
    cache_frac: float = field(default=0.2, metadata=cli(type=float))
    seed: int = field(default=0, metadata=cli(type=int))
    #: None: every classic policy (:data:`hotset.bench.sim.DEFAULT_POLICIES`)
    policies: tuple[str, ...] | None = field(
        default=None,
        metadata=cli(
            "Comma list; default every classic policy.", parse=_policy_list, flag="--policy"
        ),
    )

    def __post_init__(self) -> None:
        if self.accesses < 1 or self.n < 1:
            raise HotsetError(
                f"--accesses and --n must be positive, got {self.accesses} and {self.n}"
            )
        if not 0.0 < self.cache_frac <= 1.0:
            raise HotsetError(f"cache_frac must be in (0, 1], got {self.cache_frac}")
        from hotset.policies.registry import policy_class

        for name in self.policies or ():
            policy_class(name)
