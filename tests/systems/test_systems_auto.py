"""``system="auto"``: one rule, the same decision in the loader, the simulator and advise."""

from __future__ import annotations

from pathlib import Path

import pytest

import hotset
from cli_support import run_cli
from hotset.data import SynthConfig, make_synth
from hotset.errors import HotsetError
from hotset.systems.auto import choose, is_auto
from hotset.systems.registry import capabilities_of
from packed_support import packed_synth


def test_the_rule_never_picks_a_system_that_trains_a_subset() -> None:
    for packed in (True, False):
        choice = choose(packed=packed)
        caps = capabilities_of(choice.system)
        # a system that learns from losses draws by importance and may skip samples
        assert caps.caches and not caps.learns, choice
    assert choose(packed=True).system == "quiver"
    assert choose(packed=False).system == "minio"
    assert "hotset data pack" in choose(packed=False).reason


def test_auto_takes_no_options() -> None:
    assert is_auto("auto") and is_auto(" auto ") and not is_auto("lru")
    with pytest.raises(HotsetError, match="auto takes no options"):
        is_auto("auto[probe=3]")


@pytest.mark.parametrize("workers", [0, 2])
def test_the_loader_defaults_to_auto_and_says_what_it_picked(tmp_path: Path, workers: int) -> None:
    plain = tmp_path / "plain"
    make_synth(plain, SynthConfig(n=96, image_size=8, classes=4, seed=1), workers=1)
    packed = packed_synth(tmp_path / "packed", n=96, seed=1)
    for path, expected in ((plain, "minio"), (packed, "quiver")):
        data = hotset.open_dataset(str(path), decode="image")
        with hotset.loader(data, batch_size=16, num_workers=workers, seed=0) as ld:
            assert ld.options.system == expected and ld.system.name == expected
            ld.set_epoch(0)
            ids = sorted(i for _x, _y, batch_ids, _w in ld for i in batch_ids.tolist())
            assert ids == list(range(96))  # every sample once
            first = ld.summary().splitlines()[0]
            assert first.startswith(f"system {expected} (auto: ")


def test_auto_with_system_options_is_refused(tmp_path: Path) -> None:
    packed = packed_synth(tmp_path / "packed", n=64, seed=1)
    data = hotset.open_dataset(str(packed), decode="image")
    with pytest.raises(HotsetError, match="auto picks the system"):
        hotset.loader(data, system_options={"probe": 3}, batch_size=16)


def test_the_simulator_and_advise_make_the_loaders_choice(tmp_path: Path) -> None:
    packed = packed_synth(tmp_path / "packed", n=200, seed=1)
    code, out = run_cli(
        "simulate", "--system", "auto", "--dataset", str(packed), "--cache-frac", "0.3",
        "--epochs", "1", "--model", "mlp",
    )  # fmt: skip
    assert code == 0, out
    assert "system quiver (auto: the data set is packed" in out
    code, out = run_cli(
        "advise", "--dataset", str(packed), "--systems", "lru", "--sizes", "0.3", "--epochs", "2",
    )  # fmt: skip
    assert code == 0, out
    assert "auto (the loader's default) picks quiver (auto: " in out
