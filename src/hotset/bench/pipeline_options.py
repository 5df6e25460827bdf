"""``bench pipeline``'s options (:class:`PipelineOptions`), apart from the measurement.

The command line is generated from these fields and loads without torch; the suite
itself (:mod:`hotset.bench.pipeline`) holds the loops, rows and setup, so the options
live beside it rather than in it. Six settings default by the device the run resolves
to (a GPU gets the issue's sizes, a CPU a run of a few minutes): a field left None takes
its value from :data:`DEFAULTS` once the device is known (:meth:`PipelineOptions.sizes`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hotset import options as typed
from hotset.errors import HotsetError
from hotset.options import cli

if TYPE_CHECKING:
    from hotset.data.photos import PhotoConfig

__all__ = ["DEFAULTS", "DEFAULT_STORE", "DEFAULT_SYSTEMS", "PATHS", "PipelineOptions", "Sizes"]

DEFAULT_SYSTEMS = ("pytorch", "quiver", "scout")
#: where hotset's rows augment: the workers (uint8 hand-over) or the training process's device
PATHS = ("worker", "device")
#: the store model when --store is not given: the issue's
DEFAULT_STORE = "cloud-nas"
#: per device kind: n, batch size, workers, epochs, model, classes
DEFAULTS: dict[str, dict[str, Any]] = {
    "cuda": {"n": 10_000, "batch_size": 256, "workers": 14, "epochs": 3, "model": "auto",
             "classes": 1000},
    "cpu": {"n": 256, "batch_size": 32, "workers": 2, "epochs": 2, "model": "small",
            "classes": 10},
}  # fmt: skip


def _paths(text: str, option: str) -> tuple[str, ...]:
    """``--paths``: the comma list, empty items dropped (checked in the options)."""
    return tuple(p.strip() for p in text.split(",") if p.strip())


def _image_size(text: str) -> tuple[int, int]:
    """``WIDTHxHEIGHT`` (``500x375``) as (width, height)."""
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise HotsetError(
            f"--image-size must be WIDTHxHEIGHT such as 500x375, got {text!r}"
        ) from None
    return width, height


@dataclass(frozen=True)
class Sizes:
    """The device-dependent settings of one run, each as given or the device's default."""

    n: int
    batch_size: int
    workers: int
    epochs: int
    model: str
    classes: int


@dataclass(frozen=True)
class PipelineOptions:
    """What ``bench pipeline`` measures; the command line is generated from the fields
    (:mod:`hotset.cli.typed_options`), so a run built in Python is checked alike.

    ``n``, ``classes``, ``batch_size``, ``workers``, ``epochs`` and ``model`` None: the
    device's default (:data:`DEFAULTS`). ``image_size`` is ``WIDTHxHEIGHT`` as typed;
    ``data_dir`` None generates the JPEGs in a temporary directory.
    """

    n: int | None = field(
        default=None,
        metadata=cli(
            "JPEGs generated [default: 10000 on a GPU, 256 on a CPU].",
            type=click.IntRange(min=1),
        ),
    )
    image_size: str = field(
        default="500x375",
        metadata=cli(
            "WIDTHxHEIGHT of the generated JPEGs (a --portrait share turned on its side)."
        ),
    )
    portrait: float = field(default=0.2, metadata=cli(type=click.FloatRange(0, 1)))
    quality: int = field(
        default=94,
        metadata=cli(
            "JPEG quality: 94 makes 500x375 photos of about 105 kB.", type=click.IntRange(1, 95)
        ),
    )
    classes: int | None = field(
        default=None,
        metadata=cli("Labels [default: 1000 on a GPU, 10 on a CPU].", type=click.IntRange(min=1)),
    )
    crop_size: int = field(default=224, metadata=cli(type=click.IntRange(min=1), flag="--crop"))
    batch_size: int | None = field(
        default=None,
        metadata=cli("[default: 256 on a GPU, 32 on a CPU]", type=click.IntRange(min=1)),
    )
    workers: int | None = field(
        default=None,
        metadata=cli(
            "DataLoader workers of every row [default: 14 on a GPU, 2 on a CPU].",
            type=click.IntRange(min=0),
        ),
    )
    epochs: int | None = field(
        default=None,
        metadata=cli("[default: 3 on a GPU, 2 on a CPU]", type=click.IntRange(min=1)),
    )
    cache_frac: float = field(default=0.2, metadata=cli(type=click.FloatRange(0, 1, min_open=True)))
    systems: tuple[str, ...] = field(
        default=DEFAULT_SYSTEMS,
        metadata=cli(
            "Comma list of hotset systems; NAME[option=value,...] sets options.",
            parse=typed.systems,
        ),
    )
    paths: tuple[str, ...] = field(
        default=PATHS,
        metadata=cli(
            "Where hotset's rows augment: worker (uint8 hand-over), device, or both.",
            parse=_paths,
        ),
    )
    model: str | None = field(
        default=None,
        metadata=cli(
            "auto: torchvision's ResNet-50 where it imports, else the small convnet "
            "[default: auto on a GPU, small on a CPU].",
            type=click.Choice(["auto", "resnet50", "small"]),
        ),
    )
    device: str = field(
        default="auto", metadata=cli("auto (cuda where available), cpu, cuda or cuda:N.")
    )
    io_threads: int = field(default=8, metadata=cli(type=click.IntRange(min=1)))
    seed: int = field(default=0, metadata=cli(type=click.IntRange(min=0)))
    data_dir: Path | None = field(
        default=None,
        metadata=cli(
            "Generate the JPEGs here, or reuse the set made here with "
            "the same options [default: a temporary directory].",
            type=click.Path(file_okay=False, path_type=Path),
            flag="--data",
        ),
    )

    def __post_init__(self) -> None:
        """A bad size, system, path or count fails before any JPEG is made, naming itself."""
        from hotset.systems.registry import parse_system

        _image_size(self.image_size)
        for name in self.systems:
            parse_system(name)
        for path in self.paths:
            if path not in PATHS:
                raise HotsetError(f"paths must be among {', '.join(PATHS)}, got {path!r}")
        epochs, batch = self.epochs, self.batch_size
        if (epochs is not None and epochs < 1) or (batch is not None and batch < 1):
            raise HotsetError(f"epochs and batch_size must be >= 1, got {epochs} and {batch}")
        if not 0 < self.cache_frac <= 1:
            raise HotsetError(f"cache_frac must be in (0, 1], got {self.cache_frac!r}")

    @property
    def width_height(self) -> tuple[int, int]:
        """``image_size`` as (width, height)."""
        return _image_size(self.image_size)

    def sizes(self, kind: str) -> Sizes:
        """The settings left None filled with device ``kind``'s defaults (``cuda`` or
        ``cpu``; any other kind takes the CPU's)."""
        defaults = DEFAULTS.get(kind, DEFAULTS["cpu"])
        given: dict[str, Any] = {
            "n": self.n, "batch_size": self.batch_size, "workers": self.workers,
            "epochs": self.epochs, "model": self.model, "classes": self.classes,
        }  # fmt: skip
        return Sizes(**{k: v if v is not None else defaults[k] for k, v in given.items()})

    def photos(self, sizes: Sizes) -> PhotoConfig:
        """The photo set these options generate, at ``sizes``."""
        from hotset.data.photos import PhotoConfig

        width, height = self.width_height
        return PhotoConfig(
            n=sizes.n, width=width, height=height, portrait=self.portrait,
            classes=sizes.classes, quality=self.quality, seed=self.seed,
        )  # fmt: skip
