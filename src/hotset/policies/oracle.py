"""Oracle: every access hits -- the time a job would take with no I/O at all.

It is a bound, not a cache: it holds every id it has served without charging
the budget (``used_bytes``/``used_items`` stay 0), so the simulator can report
how far any real policy is from "storage costs nothing". Every access counts as
an exact HIT, cold ones included.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.capabilities import Capabilities
from hotset.engine.outcome import Decision, Outcome
from hotset.engine.policy import Policy
from hotset.policies._common import check_id, check_state_name, size_list, validate_trace


class Oracle(Policy):
    """Serves every access from memory; ``resident()`` is what it has served so far."""

    name: ClassVar[str] = "oracle"
    capabilities: ClassVar[Capabilities] = Capabilities(realizable=False)

    def __init__(self, budget: Budget, *, seed: int = 0) -> None:
        super().__init__(budget, seed=seed)
        self._sizes = size_list(budget)
        self._seen: set[int] = set()

    def __contains__(self, sid: object) -> bool:
        return sid in self._seen

    def resident(self) -> frozenset[int]:
        return frozenset(self._seen)

    def access(self, sid: int) -> Decision:
        sid = check_id(sid, self._sizes)
        self._seen.add(sid)
        return Decision(sid, Outcome.HIT, sid)

    def replay(self, trace: IntArray) -> npt.NDArray[np.int8]:
        ids = validate_trace(trace, self._sizes)
        self._seen.update(np.unique(ids).tolist())
        return np.full(len(ids), int(Outcome.HIT), dtype=np.int8)

    def state_dict(self) -> dict[str, Any]:
        return {"policy": self.name, "epoch": self.epoch, "seen": sorted(self._seen)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        check_state_name(state, self.name)
        self._seen = {check_id(sid, self._sizes) for sid in state["seen"]}
        self.epoch = int(state["epoch"])
