"""Simulation drivers: the same policies and samplers, a virtual clock instead of waiting.

``run_live`` trains a small real model under a named system, the run declared by one
``LiveOptions`` (``hotset simulate --system``). The models live in
:mod:`hotset.sim.models`, imported on first use because they pull in torch.
"""

from __future__ import annotations

from typing import Any

from hotset.sim.live import LiveOptions, run_live, stratified_split

__all__ = [
    "LiveOptions",
    "make_model",
    "run_live",
    "stratified_split",
]


def __getattr__(name: str) -> Any:
    if name == "make_model":
        from hotset.sim.models import make_model

        return make_model
    raise AttributeError(f"module 'hotset.sim' has no attribute {name!r}")
