"""``hotset.loader(data, system="NAME[option=value,...]")``: the registry's grammar, end to end.

The spec's options reach the system the loader builds (read back from its sampler
and policy, and seen in what an epoch through real DataLoader workers did), join
``system_options``, and show in ``summary()``; a mistake is named before any I/O.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import hotset
from hotset import HotsetError


@pytest.fixture
def data(dataset_dir: Path) -> hotset.torch.HotsetDataset:
    return hotset.open_dataset(dataset_dir, decode="bytes")


def test_a_spec_reaches_the_system_and_the_summary(data: hotset.torch.HotsetDataset) -> None:
    with hotset.loader(
        data, system="quiver[probe=3]", cache="40%", batch_size=16, num_workers=2, seed=0
    ) as loader:
        assert loader.system.name == "quiver"
        assert loader.system.policy.probe == 3  # type: ignore[attr-defined]
        assert loader.options.system == "quiver"
        assert dict(loader.options.system_options or {}) == {"probe": 3}
        loader.set_epoch(0)
        batches = sum(1 for _ in loader)
        assert batches == 13  # 200 samples in batches of 16
        # the first three batches were planned without the cache, as probe=3 asks
        assert loader.system.policy.summary()["probe_batches"] == 3
        assert {row[1] for row in loader.decisions().rows()[: 3 * 16]} == {2}
        assert loader.summary().splitlines()[0] == "system quiver[probe=3]"


def test_spec_options_and_system_options_join(data: hotset.torch.HotsetDataset) -> None:
    with hotset.loader(
        data,
        system="shade[coverage_floor=0.05]",
        system_options={"anneal_from": 2},
        cache="20%",
        batch_size=16,
    ) as loader:
        sampler = loader.system.sampler
        assert (sampler.coverage_floor, sampler.anneal_from) == (0.05, 2)  # type: ignore[attr-defined]
        assert loader.summary().splitlines()[0] == "system shade[coverage_floor=0.05,anneal_from=2]"


def test_the_same_option_in_the_spec_and_system_options_is_refused(
    data: hotset.torch.HotsetDataset,
) -> None:
    with pytest.raises(
        HotsetError,
        match=r"option 'probe' of system 'quiver' is given twice: in the spec 'quiver\[probe=3\]' "
        "and in system_options; give it once",
    ):
        hotset.loader(data, system="quiver[probe=3]", system_options={"probe": 4})


def test_mistakes_in_a_spec_are_named_as_what_they_are(data: hotset.torch.HotsetDataset) -> None:
    with pytest.raises(HotsetError) as info:
        hotset.loader(data, system="shade[coverage_flor=0.05]")
    assert "unknown system" not in str(info.value)
    assert "system 'shade' has no option 'coverage_flor' (did you mean 'coverage_floor'?)" in str(
        info.value
    )
    with pytest.raises(
        HotsetError,
        match=r"unknown system 'quivr' \(did you mean 'quiver'\?\); choose from .*quiver",
    ):
        hotset.loader(data, system="quivr[probe=3]")
    with pytest.raises(HotsetError, match="system 'quiver': option probe got 'ten', expected int"):
        hotset.loader(data, system="quiver[probe=ten]")
