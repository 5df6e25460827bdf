"""A state rehearsed on scratch parts before the loader takes it: a refusal changes nothing.

:meth:`~hotset.torch.checkpoint.Checkpoints.load_state_dict` used to restore a state
into the loader piece by piece and, when a piece was refused, restore the state it
had saved just before. That second restore could not give back everything: the
running iterator was stopped, the cache emptied, and some systems' next batches
differed from an untouched loader's (Quiver's among them). Here the whole restore is
rehearsed first, on a System built afresh with the loader's own arguments and a
Planner of its own: the System's state loaded (every policy's checks), the read-ahead
ids, the report's epochs, the coverage, and for a state saved inside an epoch the
epoch begun again and its batches replayed with the feedback applied where it was.
Only a state that restores there is applied to the loader, so a refusal leaves it
exactly as it was -- its running iterator, its cache, its next batches.

What the rehearsal does not do: an ImPACT epoch's re-evaluation (it needs the
model, and the saved start state already holds its losses) and joining a shared
chunk cycle (a network call): the loader does those when it applies the state.
The cost is a second replay of the saved epoch's plans, decisions only (no I/O).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.engine.counters import Coverage
from hotset.engine.planner import Planner
from hotset.errors import HotsetError
from hotset.systems.base import System
from hotset.torch.options import LoaderOptions
from hotset.torch.report import EpochStats
from hotset.torch.systemstate import feedback_rows, load_system_state

__all__ = ["Rehearsal", "system_like"]


def system_like(
    system: System, options: LoaderOptions, n: int, layout: Any
) -> Callable[[], System]:
    """A maker of Systems built as the loader built ``system`` (hotset.torch.builder):
    the same name and options, seed, batch size, data set layout, and the budget its
    policy plans in (a frozen value, shared)."""
    from hotset.systems.registry import build_system

    budget = system.policy.budget

    def fresh() -> System:
        return build_system(
            options.system,
            n=n,
            budget=budget,
            seed=options.seed,
            batch_size=options.batch_size,
            layout=layout,
            **dict(options.system_options or {}),
        )

    return fresh


@dataclass(frozen=True)
class Rehearsal:
    """How to build scratch parts like the loader's, and rehearse a state on them."""

    #: a System like the loader's, in its initial state (built with the loader's arguments)
    fresh_system: Callable[[], System]
    n: int
    batch_size: int
    lag: int
    drop_last: bool
    sizes: npt.NDArray[np.int64]
    rank: int
    world_size: int

    def check(self, state: Mapping[str, Any]) -> None:
        """Restore ``state`` on scratch parts; a :class:`HotsetError` naming what fails.

        ``state`` has passed :func:`hotset.torch.state.check_loader_state` (its fields'
        types); what is checked here is that each restores.
        """
        try:
            self._restore(state)
        except HotsetError as exc:
            raise HotsetError(f"{exc}; the loader is left as it was") from None
        except Exception as exc:  # a malformed value deep inside a part's state
            raise HotsetError(
                f"loader state: malformed ({type(exc).__name__}: {exc}); the loader is "
                "left as it was"
            ) from exc

    def _restore(self, state: Mapping[str, Any]) -> None:
        system = self.fresh_system()
        load_system_state(system, state["system_state"])
        planner = Planner(
            system,
            n=self.n,
            batch_size=self.batch_size,
            lag=self.lag,
            drop_last=self.drop_last,
            sizes=self.sizes,
        )
        planner.ahead.load(np.asarray(state.get("fetched_ahead", ()), dtype=np.int64))
        for row in state["history"]:
            EpochStats.from_state(row)
        Coverage(self.n).load_state_dict(state["coverage"])
        if state["status"] == "idle":
            return
        epoch = int(state["epoch"])
        planner.begin(epoch, rank=self.rank, world_size=self.world_size)
        feedback, applied_at = feedback_rows(
            state["feedback"], planner.order, self.batch_size, self.n
        )
        yielded = int(state["yielded"])
        if yielded > planner.n_batches:
            raise HotsetError(
                f"loader state: yielded={yielded} batches, but epoch {epoch} has "
                f"{planner.n_batches}"
            )
        planner.replay(yielded, feedback, applied_at)
        if state["current"] is not None:
            EpochStats.from_state(state["current"])
