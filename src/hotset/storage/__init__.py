"""Stores: where sample bytes come from."""

from hotset.storage.base import StatsCounter, Store, StoreStats
from hotset.storage.local import LocalStore

__all__ = ["LocalStore", "StatsCounter", "Store", "StoreStats"]
