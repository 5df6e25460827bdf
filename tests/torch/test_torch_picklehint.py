"""An argument that cannot be pickled to a spawned or fork-server worker is named, with the fix.

Workers started by ``spawn`` or ``forkserver`` get the data set's ``read=``,
``decode=``, ``transform=``, the user's Dataset, ``collate_fn=`` and
``worker_init_fn=`` by pickle. A lambda among them used to fail with the raw
pickling error; the loader now names the argument and says what to give
instead. Real worker processes, started the way each test says.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from user_support import Folder, WithLambda, read_key

import hotset
from hotset.errors import HotsetError
from hotset.torch.forksafe import fork_can_deadlock

HERE = Path(__file__).parent
FIX = r"a function defined at the top level of a module .*functools\.partial.*'fork'"


def _keys_labels(dataset_dir: Path) -> tuple[list[str], list[int]]:
    manifest = hotset.open_dataset(dataset_dir, decode="bytes").manifest
    return list(manifest.keys), [int(v) for v in manifest.labels]


def _from_read(dataset_dir: Path, read: Any, decode: Any = "bytes") -> Any:
    keys, labels = _keys_labels(dataset_dir)
    return hotset.from_dataset(keys, read=read, decode=decode, labels=labels)


def _first_batch(data: Any, method: str, **options: Any) -> None:
    with hotset.loader(
        data,
        system="lru",
        cache=0.5,
        batch_size=16,
        num_workers=2,
        multiprocessing_context=method,
        **options,
    ) as loader:
        next(iter(loader))


def _lambda_read(dataset_dir: Path) -> Any:
    keys, _ = _keys_labels(dataset_dir)
    return _from_read(dataset_dir, lambda i: (dataset_dir / keys[i]).read_bytes())


def _lambda_decode(dataset_dir: Path) -> Any:
    keys, _ = _keys_labels(dataset_dir)
    read = functools.partial(read_key, dataset_dir, keys)
    return _from_read(dataset_dir, read, decode=lambda data, key: data)


def _lambda_transform(dataset_dir: Path) -> Any:
    return hotset.open_dataset(dataset_dir, decode="bytes", transform=lambda b: b)


def _dataset_attribute(dataset_dir: Path) -> Any:
    keys, labels = _keys_labels(dataset_dir)
    return WithLambda(dataset_dir, keys, labels)  # wrapped by hotset.loader itself


def _nested_init() -> Any:
    def init(worker_id: int) -> None:
        pass

    return init


CASES = [
    ("spawn", _lambda_read, {}, r"and read= \(from_dataset\) cannot be pickled"),
    ("forkserver", _lambda_decode, {}, r"and decode= cannot be pickled"),
    ("forkserver", _lambda_transform, {}, r"and transform= cannot be pickled"),
    ("spawn", _lambda_transform, {"collate_fn": lambda xs: xs}, r"and transform= cannot"),
    (
        "spawn",
        _dataset_attribute,
        {},
        r"and the Dataset \(WithLambda\), its attribute 'target_transform', cannot be pickled",
    ),
]


@pytest.mark.parametrize(("method", "make", "options", "names"), CASES)
def test_an_unpicklable_argument_is_named_with_the_fix(
    dataset_dir: Path, method: str, make: Any, options: dict[str, Any], names: str
) -> None:
    data = make(dataset_dir)
    with pytest.raises(HotsetError, match=names) as caught:
        _first_batch(data, method, **options)
    message = str(caught.value)
    assert f"workers start with multiprocessing_context={method!r}" in message
    assert "lambda" in message  # the pickling error itself, kept in the message
    assert re.search(FIX, message), message


@pytest.mark.parametrize(
    ("option", "value", "why"),
    [
        ("collate_fn", lambda xs: xs, "PicklingError"),
        ("worker_init_fn", _nested_init(), "Can't pickle local object"),
    ],
)
def test_a_loader_option_that_does_not_pickle_is_named(
    dataset_dir: Path, option: str, value: Any, why: str
) -> None:
    data = hotset.open_dataset(dataset_dir, decode="bytes")
    with pytest.raises(HotsetError, match=rf"and {option}= cannot be pickled \(.*{why}"):
        _first_batch(data, "forkserver", **{option: value})


def test_a_partial_of_a_module_level_function_trains_under_spawn(dataset_dir: Path) -> None:
    """The fix the message gives works: every sample once per epoch, byte-exact."""
    keys, _ = _keys_labels(dataset_dir)
    data = _from_read(dataset_dir, functools.partial(read_key, dataset_dir, keys))
    truth = [read_key(dataset_dir, keys, i) for i in range(len(keys))]
    with hotset.loader(
        data, system="lru", cache=0.5, batch_size=32, num_workers=2, multiprocessing_context="spawn"
    ) as loader:
        seen = []
        for x, _, ids, _ in loader:
            assert x == [truth[i] for i in ids.tolist()]
            seen += ids.tolist()
    assert sorted(seen) == list(range(len(keys)))


def test_forked_workers_take_a_lambda_as_before(dataset_dir: Path) -> None:
    """Nothing changes where nothing is pickled: fork hands workers the objects themselves."""
    data = _lambda_read(dataset_dir)
    keys, _ = _keys_labels(dataset_dir)
    with hotset.loader(
        data, system="lru", cache=0.5, batch_size=32, num_workers=2, multiprocessing_context="fork"
    ) as loader:
        assert sorted(i for _, _, ids, _ in loader for i in ids.tolist()) == list(range(len(keys)))


def _job(dataset_dir: Path, tmp_path: Path, how: str) -> dict[str, Any]:
    out = tmp_path / f"{how}.json"
    proc = subprocess.run(
        [sys.executable, str(HERE / "picklehint_job.py"), str(dataset_dir), str(out), how],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(out.read_text()))


def test_pythons_default_start_method_is_named_as_such(dataset_dir: Path, tmp_path: Path) -> None:
    """spawn made the default (as forkserver is Python 3.14's): neither user nor loader chose."""
    record = _job(dataset_dir, tmp_path, "spawn-default")
    assert record["context"] is None and record["served"] == []
    assert record["error"].startswith(
        "HotsetError: DataLoader workers start with 'spawn', this Python's default start method"
    )
    assert "read= (from_dataset) cannot be pickled" in record["error"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork is Linux's default")
def test_in_a_process_group_the_loaders_own_choice_is_named(
    dataset_dir: Path, tmp_path: Path
) -> None:
    """As under torchrun: the loader picked the fork server itself, and says so."""
    record = _job(dataset_dir, tmp_path, "group")
    if fork_can_deadlock():
        assert record["context"] == "forkserver" and record["served"] == []
        error = record["error"]
        assert error.startswith("HotsetError: DataLoader workers start with 'forkserver', which")
        assert "the loader chose" in error and "read= (from_dataset) cannot be pickled" in error
    else:  # forked as before: the lambda reaches the workers as it is
        assert record["context"] is None and record["error"] is None
        assert record["served"] == list(range(len(_keys_labels(dataset_dir)[0])))


def test_a_users_folder_pickles_so_nothing_is_blamed(dataset_dir: Path) -> None:
    """The search names only what fails: a picklable Dataset and options name nothing."""
    from hotset.torch.options import LoaderOptions
    from hotset.torch.picklehint import unpicklable_argument

    keys, labels = _keys_labels(dataset_dir)
    data = hotset.from_dataset(Folder(dataset_dir, keys, labels))
    assert unpicklable_argument(data, LoaderOptions()) is None
    found = unpicklable_argument(data, LoaderOptions(collate_fn=lambda xs: xs))
    assert found is not None and found[0] == "collate_fn="
