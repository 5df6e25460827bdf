"""Warnings shown once per process, even when filters are reset between raises."""

from __future__ import annotations

import warnings

import pytest

from hotset.warnonce import call_once_warned, once, warn_once


def _raise(text: str) -> int:
    warnings.warn(text, UserWarning, stacklevel=1)
    return 7


def test_a_block_that_warns_every_time_shows_each_text_once() -> None:
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("default")
        for _ in range(3):
            assert call_once_warned(lambda: _raise("worker count A")) == 7
            with warnings.catch_warnings():  # what resets Python's own memory of warnings
                warnings.simplefilter("ignore")
        call_once_warned(lambda: _raise("worker count B"))
    texts = [str(w.message) for w in shown]
    assert texts == ["worker count A", "worker count B"]


def test_ignored_prefixes_are_dropped_and_the_users_error_filter_still_raises() -> None:
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("default")
        call_once_warned(
            lambda: _raise("Got pickle error when attempting x"), ignore=("Got pickle",)
        )
    assert shown == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="unseen text"):
            call_once_warned(lambda: _raise("unseen text"))


def test_warnings_of_a_block_that_raised_are_still_shown() -> None:
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("default")
        with pytest.raises(KeyError), once():
            _raise("before the failure")
            raise KeyError("x")
    assert [str(w.message) for w in shown] == ["before the failure"]


def test_warn_once_by_text() -> None:
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        for _ in range(4):
            warn_once("hotset: one text", RuntimeWarning)
        warn_once("hotset: other text", RuntimeWarning)
    assert [str(w.message) for w in shown] == ["hotset: one text", "hotset: other text"]
    assert all(w.category is RuntimeWarning for w in shown)


def test_torchs_worker_count_warning_once_for_dataloaders_made_and_iterated_again() -> None:
    """torch warns of more workers than cores when a DataLoader is made and again at each
    iter(); the baseline's DataLoaders (as the loader's) show it once per process."""
    import os

    import numpy as np

    from hotset.bench.loader import MemoryStore
    from hotset.bench.torch_baseline import PlainDataset, dataloader, untuned
    from hotset.warnonce import call_once_warned

    workers = (os.cpu_count() or 1) + 1
    ds = PlainDataset(MemoryStore({"a": b"x"}), ["a"], np.zeros(1, dtype=np.int64), decode=False)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("default")
        for _ in range(3):
            dl = dataloader(ds, untuned(workers=workers), batch_size=1, seed=0)
            with warnings.catch_warnings():  # hotset's own resets Python's memory of warnings
                warnings.simplefilter("ignore")
            assert len(list(call_once_warned(lambda dl=dl: iter(dl)))) == 1
    texts = [str(w.message) for w in shown if "worker processes in total" in str(w.message)]
    assert len(texts) == 1, texts
