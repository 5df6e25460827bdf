"""The simulator's small models: shapes, training signal, the auto choice, errors."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hotset.errors import HotsetError
from hotset.sim.models import (
    MLP,
    SmallCNN,
    SmallResNet,
    make_model,
    resolve_model_name,
    small_resnet,
)


def _meta(channels: int, size: int | list[int], classes: int) -> dict[str, object]:
    return {"channels": channels, "image_size": size, "num_classes": classes, "format": "png"}


@pytest.mark.parametrize(
    ("name", "channels", "size", "classes", "kind"),
    [
        ("cnn", 3, 32, 10, SmallCNN),
        ("cnn", 1, 16, 4, SmallCNN),
        ("cnn", 3, 4, 2, SmallCNN),
        ("mlp", 1, 8, 10, MLP),
        ("resnet", 3, 32, 10, SmallResNet),
        ("resnet", 1, 8, 3, SmallResNet),
        ("auto", 1, 8, 10, MLP),
        ("auto", 3, 32, 10, SmallCNN),
        ("auto", 3, 16, 5, SmallCNN),
    ],
)
def test_make_model_gives_logits_per_class(
    name: str, channels: int, size: int, classes: int, kind: type[nn.Module]
) -> None:
    torch.manual_seed(0)
    model = make_model(name, _meta(channels, size, classes))
    assert isinstance(model, kind)
    out = model(torch.rand(5, channels, size, size))
    assert out.shape == (5, classes)
    assert torch.isfinite(out).all()


def test_image_size_may_be_a_pair() -> None:
    model = make_model("cnn", _meta(3, [16, 16], 7))
    assert model(torch.rand(2, 3, 16, 16)).shape == (2, 7)


@pytest.mark.parametrize("name", ["cnn", "mlp", "resnet"])
def test_a_few_steps_lower_the_loss_on_a_fixed_batch(name: str) -> None:
    """Every parameter gets a gradient and SGD can fit one batch: the model trains."""
    torch.manual_seed(1)
    size = 8
    model = make_model(name, _meta(1, size, 3))
    x = torch.rand(24, 1, size, size)
    y = torch.arange(24) % 3
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(80):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        assert all(p.grad is not None for p in model.parameters())
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_same_seed_same_init_other_seed_differs() -> None:
    def init(seed: int) -> list[torch.Tensor]:
        torch.manual_seed(seed)
        return [p.detach().clone() for p in make_model("cnn", _meta(3, 32, 10)).parameters()]

    a, b, c = init(3), init(3), init(4)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(torch.equal(x, z) for x, z in zip(a, c, strict=True))


def test_resolve_model_name() -> None:
    assert resolve_model_name("auto", 8) == "mlp"
    assert resolve_model_name("auto", 9) == "cnn"
    assert resolve_model_name("resnet", 4) == "resnet"


def test_resnet_depth_grows_with_blocks() -> None:
    shallow = small_resnet(3, 10)
    deep = small_resnet(3, 10, blocks_per_stage=3)
    convs = [sum(isinstance(m, nn.Conv2d) for m in net.modules()) for net in (shallow, deep)]
    assert convs[1] > convs[0]


def test_models_are_small_enough_for_a_cpu() -> None:
    """The point of these models is seconds per epoch: keep them well under a million weights."""
    for name in ("cnn", "resnet"):
        model = make_model(name, _meta(3, 32, 10))
        assert sum(p.numel() for p in model.parameters()) < 1_000_000


@pytest.mark.parametrize(
    ("name", "meta", "match"),
    [
        ("vgg", _meta(3, 32, 10), "unknown model 'vgg'"),
        ("cnn", {"channels": 3, "image_size": 32}, "num_classes"),
        ("cnn", _meta(3, [16, 32], 10), "16×32"),
        ("cnn", _meta(0, 32, 10), "in_channels must be >= 1"),
        ("mlp", _meta(1, 8, 0), "num_classes must be >= 1"),
    ],
)
def test_bad_input_names_the_culprit(name: str, meta: dict[str, object], match: str) -> None:
    with pytest.raises(HotsetError, match=match):
        make_model(name, meta)
