"""The live simulator's device path (issue #43's GPU experiment), checked on the CPU:
measured compute in place of the modeled one, the device named, ResNet-18's shape."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from hotset.data.synth import SynthConfig, make_synth
from hotset.errors import HotsetError
from hotset.sim.live import LiveOptions, run_live
from hotset.sim.models import make_model


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("device") / "syn"
    make_synth(out, SynthConfig(n=200, image_size=8, classes=3, channels=1, seed=0), workers=1)
    return out


def test_measured_compute_replaces_the_modeled_compute(dataset: Path) -> None:
    kw = {"system": "pytorch", "dataset": str(dataset), "cache_frac": 0.2, "epochs": 1}
    modeled = run_live(LiveOptions(seed=0, compute_ms_per_batch=1000.0, batch_size=16, **kw))
    measured = run_live(
        LiveOptions(seed=0, compute_ms_per_batch=1000.0, batch_size=16, measure_compute=True, **kw)
    )
    steps = -(-modeled["n_train"] // 16)
    row_m, row_x = modeled["epochs"][0], measured["epochs"][0]
    assert row_m["modeled_epoch_seconds"] == pytest.approx(row_m["modeled_io_seconds"] + steps)
    # an MLP step on 16 8x8 images takes milliseconds, not the modeled second
    assert row_x["modeled_io_seconds"] < row_x["modeled_epoch_seconds"]
    assert row_x["modeled_epoch_seconds"] < row_x["modeled_io_seconds"] + steps / 10
    assert measured["config"]["measure_compute"] and measured["config"]["device"] == "cpu"
    assert row_x["val_accuracy"] == row_m["val_accuracy"]  # the same training, other clock


def test_a_device_this_machine_lacks_is_named(dataset: Path) -> None:
    kw = {"system": "pytorch", "dataset": str(dataset), "cache_frac": 0.2, "epochs": 1}
    with pytest.raises(HotsetError, match=r"device 'nope' is not a torch device name"):
        run_live(LiveOptions(seed=0, device="nope", **kw))
    if not torch.cuda.is_available():
        with pytest.raises(HotsetError, match=r"device 'cuda': this machine has no CUDA device"):
            run_live(LiveOptions(seed=0, device="cuda", **kw))


def test_resnet18_is_the_cifar_shape() -> None:
    net = make_model("resnet18", {"channels": 3, "image_size": 32, "num_classes": 10})
    weights = sum(p.numel() for p in net.parameters())
    assert 11_000_000 < weights < 11_300_000  # ResNet-18's 11.2M (CIFAR stem, 10 classes)
    out = net(torch.zeros(2, 3, 32, 32))
    assert out.shape == (2, 10)
