"""Stores: where sample bytes come from."""

from hotset.storage.base import StatsCounter, Store, StoreStats, check_key
from hotset.storage.fsspec_store import FsspecStore
from hotset.storage.local import LocalStore
from hotset.storage.registry import known_schemes, open_store, register_scheme
from hotset.storage.retry import RetryingStore
from hotset.storage.throttled import LinkSchedule, ThrottledStore

__all__ = [
    "FsspecStore",
    "LinkSchedule",
    "LocalStore",
    "RetryingStore",
    "StatsCounter",
    "Store",
    "StoreStats",
    "ThrottledStore",
    "check_key",
    "known_schemes",
    "open_store",
    "register_scheme",
]
