"""The standard workloads benchmarks run on, generated once and reused.

``synth``: the learnable synthetic 32×32 set (``hotset data synth``, seed 0);
``digits``: scikit-learn's 1,797 real 8×8 digits; ``imagenet-like``: 2,000 of the
synthetic 32×32 images padded to ImageNet-like byte sizes (``hotset data synth
--sizes imagenet``: log-normal, mean 110 kB, about 215 MB in all), so that a
store's bandwidth matters as it does on real data while the pixels, labels and
learning stay those of ``synth``. ``synth-noisy``: ``synth`` with a fifth of the labels
flipped and half the samples easy (:data:`NOISY_SHARE`, :data:`EASY_SHARE`), where importance sampling should
pay if it pays anywhere. 2,000 keeps a bench on it feasible on a small
machine (generated in about 2 s). ``synth-sorted``: ``synth`` with its ids
renumbered in label order (all of class 0, then class 1, ...), as an ImageFolder
tree imported class by class gives them, packed with the default seeded shuffle;
``synth-sorted-unshuffled``: the same ids packed in id order, so that each chunk
holds one class (what packing did before it shuffled by default, kept to show
the difference). All are written under a data directory
(``.hotset-data/`` by default, git-ignored) and reused while their manifest
loads with the expected length.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from hotset.errors import HotsetError

_N = TypeVar("_N", int, float)

WORKLOADS = (
    "synth",
    "digits",
    "imagenet-like",
    "synth-sorted",
    "synth-sorted-unshuffled",
    "synth-noisy",
)
#: ``synth-noisy``: where the importance samplers' claims should show (issue #43): a
#: fifth of the labels flipped (what RHO-loss skips) and half the samples easy (a long
#: tail an importance sampler learns to read less)
NOISY_SHARE, EASY_SHARE = 0.2, 0.5
#: the workloads whose ids follow their labels, and whether their chunks are shuffled
LABEL_SORTED = {"synth-sorted": True, "synth-sorted-unshuffled": False}
#: samples of the ``imagenet-like`` workload (its size, whatever ``synth_n`` says)
IMAGENET_LIKE_N = 2_000
DEFAULT_DATA_DIR = Path(".hotset-data")


#: how a workload is packed for the systems that read whole chunks (Brand §3.2: a
#: seeded shuffle cut into chunks of 64, the paper's best size)
PACK_CHUNK_SIZE = 64
PACK_SHUFFLE_SEED = 0


def needs_chunks(systems: Sequence[str]) -> bool:
    """Whether any of ``systems`` (specs allowed) reads whole chunks, or loads them ahead."""
    from hotset.systems.registry import capabilities_of, parse_system

    caps = [capabilities_of(parse_system(s)[0]) for s in systems]
    return any(c.reads_units or c.loads for c in caps)


def workload_dir(
    name: str,
    *,
    data_dir: Path,
    synth_n: int = 20_000,
    progress: bool = False,
    packed: bool = False,
    imagenet_n: int = IMAGENET_LIKE_N,
    chunk_size: int = PACK_CHUNK_SIZE,
) -> Path:
    """The dataset directory of workload ``name``, generating it when missing.

    ``packed``: also its chunk layout (written once, beside the files; systems that
    read single samples ignore it), of ``chunk_size`` samples a chunk; a size other
    than :data:`PACK_CHUNK_SIZE` packs a hard-linked copy of the set of its own
    (``NAME-chunkC``), since a data set has one layout. ``imagenet_n``: samples of
    ``imagenet-like`` (the demo uses fewer to stay within minutes).
    """
    path = _generated(
        name, data_dir=data_dir, synth_n=synth_n, imagenet_n=imagenet_n, progress=progress
    )
    if packed:
        shuffled = LABEL_SORTED.get(name, True)
        if chunk_size != PACK_CHUNK_SIZE:
            path = _linked(path, data_dir / f"{path.name}-chunk{chunk_size}", progress=progress)
        ensure_packed(
            path,
            chunk_size=chunk_size,
            seed=PACK_SHUFFLE_SEED if shuffled else None,
            progress=progress,
        )
    return path


#: the workloads a test set can be drawn for (an independent draw of their generator)
TEST_SET_WORKLOADS = ("synth", "synth-noisy")
#: the generator's draw a test set is (draw 0 is the workload itself)
TEST_DRAW = 1


def check_test_n(n: object, workloads: Sequence[str]) -> None:
    """``--test-n``: a non-negative integer, and when positive every workload has a
    generator to draw a test set from; else a HotsetError naming the option."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise HotsetError(f"--test-n: must be an integer >= 0, got {n!r}")
    lacking = [w for w in workloads if w not in TEST_SET_WORKLOADS]
    if n and lacking:
        raise HotsetError(
            f"--test-n: workload {lacking[0]!r} has no test set (one is drawn for "
            f"{', '.join(TEST_SET_WORKLOADS)} only)"
        )


def accuracy_note(test_n: int) -> str:
    """A train suite's note saying what every accuracy (so every target) is measured on."""
    if test_n:
        return (
            f"Accuracy is measured on a clean test set of {test_n} samples drawn apart from "
            "the data set (same classes, no flipped labels: bench.workloads.test_set_dir), "
            "never read through a cache; the held-out split is still held out."
        )
    return "Accuracy is measured on the data set's held-out split (a tenth of it)."


def test_set_dir(name: str, *, data_dir: Path, n: int, progress: bool = False) -> Path:
    """A clean test set of ``n`` samples for workload ``name``, generating it when missing.

    Why: the train suites' held-out split is a tenth of a 5,000-sample set, so its
    accuracy moves about a point from one epoch to the next and time to a target near
    the plateau is mostly that noise. A test set is an independent draw of the same
    generator (same class prototypes, :data:`TEST_DRAW`) with no flipped labels, as a
    real benchmark's test set is clean; ``synth-noisy``'s keeps its long tail of easy
    samples. It is never read through a cache, so it changes no read of a run.
    """
    from hotset.data import SynthConfig, make_synth

    check_test_n(n, [name])
    if n < 1:
        raise HotsetError(f"--test-n: must be a positive integer, got {n!r}")
    path = data_dir / f"{name}-test-{n}"
    if _holds(path, n):
        return path
    easy = EASY_SHARE if name == "synth-noisy" else 0.0
    cfg = SynthConfig(n=n, seed=0, noise=0.0, easy=easy, draw=TEST_DRAW)
    make_synth(path, cfg, force=True, progress=progress)
    return path


def _holds(path: Path, n: int) -> bool:
    """Whether ``path`` is a data set of ``n`` samples already written (reused then); a
    missing or unreadable one is made again."""
    from hotset.data import Manifest

    if not path.is_dir():
        return False
    try:
        return len(Manifest.load(path)) == n
    except HotsetError:
        return False


def _linked(source: Path, path: Path, *, progress: bool) -> Path:
    """Every sample of ``source`` at ``path`` (hard links, same ids); reused while it
    holds as many samples."""
    import numpy as np

    from hotset.data import Manifest
    from hotset.data.split import subset_dataset

    n = len(Manifest.load(source))
    if _holds(path, n):
        return path
    subset_dataset(source, path, np.arange(n), force=True, progress=progress)
    return path


def ensure_packed(
    path: str | Path,
    *,
    chunk_size: int = PACK_CHUNK_SIZE,
    seed: int | None = PACK_SHUFFLE_SEED,
    progress: bool = False,
) -> None:
    """Give ``path`` a chunk layout (a seeded shuffle cut into chunks; id order with
    ``seed=None``) unless it has one."""
    from hotset.data.chunks import ChunkLayout, pack_dataset

    if not ChunkLayout.exists(path):
        pack_dataset(path, chunk_size=chunk_size, shuffle_seed=seed, progress=progress)


def _generated(name: str, *, data_dir: Path, synth_n: int, imagenet_n: int, progress: bool) -> Path:
    from hotset.data import SynthConfig, make_digits, make_synth

    if name in LABEL_SORTED:
        return _label_sorted(
            data_dir / f"{name}-{synth_n}",
            _generated(
                "synth", data_dir=data_dir, synth_n=synth_n, imagenet_n=0, progress=progress
            ),
            progress=progress,
        )
    if name == "synth":
        path, expected = data_dir / f"synth-{synth_n}", synth_n
    elif name == "synth-noisy":
        path, expected = data_dir / f"synth-noisy-{synth_n}", synth_n
    elif name == "imagenet-like":
        path, expected = data_dir / f"imagenet-like-{imagenet_n}", imagenet_n
    elif name == "digits":
        path, expected = data_dir / "digits", 1797
    else:
        raise HotsetError(f"unknown workload {name!r}; choose from {', '.join(WORKLOADS)}")
    if _holds(path, expected):
        return path
    if name == "synth":
        make_synth(path, SynthConfig(n=synth_n, seed=0), force=True, progress=progress)
    elif name == "synth-noisy":
        cfg = SynthConfig(n=synth_n, seed=0, noise=NOISY_SHARE, easy=EASY_SHARE)
        make_synth(path, cfg, force=True, progress=progress)
    elif name == "imagenet-like":
        cfg = SynthConfig(n=imagenet_n, seed=0, sizes="imagenet")
        make_synth(path, cfg, force=True, progress=progress)
    else:
        make_digits(path, force=True, progress=progress)
    return path


def _label_sorted(path: Path, source: Path, *, progress: bool) -> Path:
    """``source``'s samples renumbered in label order (stable: ids keep their order
    within a class), as hard links (``hotset data subset --ids``); reused while it
    holds as many samples as ``source``."""
    import numpy as np

    from hotset.data import Manifest
    from hotset.data.split import subset_dataset

    manifest = Manifest.load(source)
    if _holds(path, len(manifest)):
        return path
    ids = np.argsort(np.asarray(manifest.labels), kind="stable")
    subset_dataset(source, path, ids, force=True, progress=progress)
    return path


def parse_list(text: str, *, option: str) -> list[str]:
    """A comma list from the command line; empty items are an error."""
    items = [item.strip() for item in text.split(",")]
    if not items or any(not item for item in items):
        raise HotsetError(f"{option}: expected a comma-separated list, got {text!r}")
    return items


def _parse_each(text: str, option: str, cast: Callable[[str], _N], noun: str) -> list[_N]:
    items = parse_list(text, option=option)
    try:
        return [cast(item) for item in items]
    except ValueError:
        raise HotsetError(f"{option}: expected {noun}, got {text!r}") from None


def parse_floats(text: str, *, option: str) -> list[float]:
    """A comma list of numbers from the command line; the error names the option."""
    return _parse_each(text, option, float, "numbers")


def parse_ints(text: str, *, option: str) -> list[int]:
    """A comma list of integers from the command line; the error names the option."""
    return _parse_each(text, option, int, "integers")
