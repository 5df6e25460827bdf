"""No cache: every access is a storage read (PyTorch's DataLoader as shipped)."""

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


class NoCache(Policy):
    """Admits nothing, so every access misses; the baseline every speed-up is measured from."""

    name: ClassVar[str] = "nocache"
    capabilities: ClassVar[Capabilities] = Capabilities(caches=False)

    def __init__(self, budget: Budget, *, seed: int = 0) -> None:
        super().__init__(budget, seed=seed)
        self._sizes = size_list(budget)

    def __contains__(self, sid: object) -> bool:
        return False

    def resident(self) -> frozenset[int]:
        return frozenset()

    def access(self, sid: int) -> Decision:
        sid = check_id(sid, self._sizes)
        return Decision(sid, Outcome.MISS, sid, admitted=False)

    def replay(self, trace: IntArray) -> npt.NDArray[np.int8]:
        ids = validate_trace(trace, self._sizes)
        return np.full(len(ids), int(Outcome.MISS), dtype=np.int8)

    def state_dict(self) -> dict[str, Any]:
        return {"policy": self.name, "epoch": self.epoch}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        check_state_name(state, self.name)
        self.epoch = int(state["epoch"])
