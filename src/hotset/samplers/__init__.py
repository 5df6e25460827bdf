"""Samplers: what order an epoch reads in."""

from hotset.samplers.base import EpochContext, Sampler

__all__ = ["EpochContext", "Sampler"]
