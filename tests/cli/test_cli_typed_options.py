"""``hotset.cli.typed_options``: a command's options generated from its dataclass."""

from __future__ import annotations

from dataclasses import dataclass, field

import click
import pytest
from click.testing import CliRunner

from hotset import options
from hotset.cli.typed_options import options_from
from hotset.errors import HotsetError
from hotset.options import cli


@dataclass(frozen=True)
class _Opts:
    worlds: tuple[int, ...] = field(
        default=(1, 2), metadata=cli("World sizes.", parse=options.ints)
    )
    epochs: int = field(default=3, metadata=cli(type=click.IntRange(min=2)))
    verify: bool = field(default=True, metadata=cli("Check."))
    quick: bool = field(default=False, metadata=cli(switch=False))
    seed: int = 0  # not on the command line

    def __post_init__(self) -> None:
        if 3 in self.worlds:
            raise HotsetError(f"--worlds: 3 is not allowed, got {self.worlds}")


seen: list[tuple[_Opts, str]] = []


@click.command("toy")
@options_from(_Opts)
@click.option("--label", default="x")
def _toy(opts: _Opts, label: str) -> None:
    """A toy command."""
    seen.append((opts, label))


@pytest.fixture(autouse=True)
def _clear() -> None:
    seen.clear()


def test_the_defaults_make_the_dataclass_default() -> None:
    result = CliRunner().invoke(_toy, [])
    assert result.exit_code == 0, result.output
    assert seen == [(_Opts(), "x")]


def test_each_field_is_set_by_its_option_and_the_command_keeps_its_own() -> None:
    argv = ["--worlds", "4,8", "--epochs", "5", "--no-verify", "--quick", "--label", "y"]
    result = CliRunner().invoke(_toy, argv)
    assert result.exit_code == 0, result.output
    assert seen == [(_Opts(worlds=(4, 8), epochs=5, verify=False, quick=True), "y")]


def test_help_lists_the_fields_first_with_defaults_as_typed() -> None:
    out = CliRunner().invoke(_toy, ["--help"]).output
    assert (
        out.index("--worlds") < out.index("--epochs") < out.index("--verify") < out.index("--label")
    )
    assert "[default: 1,2]" in out and "--verify / --no-verify" in out
    assert "--seed" not in out and "A toy command." in out


def test_click_types_and_the_dataclass_refuse_bad_values() -> None:
    bad_range = CliRunner().invoke(_toy, ["--epochs", "1"])
    assert bad_range.exit_code == 2 and "--epochs" in bad_range.output
    refused = CliRunner().invoke(_toy, ["--worlds", "1,3"])
    assert isinstance(refused.exception, HotsetError)
    assert "--worlds: 3 is not allowed" in str(refused.exception)
    garbled = CliRunner().invoke(_toy, ["--worlds", "1,a"])
    assert "--worlds: expected a comma-separated list of integers" in str(garbled.exception)
