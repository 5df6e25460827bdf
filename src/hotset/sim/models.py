"""Small models the live simulator trains on the CPU, and a ResNet-18 for a GPU.

They exist to turn a data order into a real loss and a real accuracy in
seconds, not to be state of the art: the simulator compares systems at equal
model, init and step count, so only the order (what the cache made cheap)
differs between them. ``resnet18`` is the CIFAR-style ResNet-18 (a 3x3 stem
without max-pool, four stages of two basic blocks, 64 to 512 channels) of the
device-ready benchmark (``benchmarks/gpu/importance.sh``): torchvision's model with
that stem where torchvision imports, else the same shape built here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from hotset.errors import HotsetError

MODEL_NAMES = ("auto", "cnn", "mlp", "resnet", "resnet18")

#: images with both sides at most this use the MLP under ``"auto"`` (sklearn digits: 8×8)
_MLP_MAX_SIDE = 8


class SmallCNN(nn.Module):
    """Three conv blocks (conv-BN-ReLU, pool) and a linear head.

    Width 16 keeps a step of 128 images of 32×32 near 60 ms on one CPU thread
    (about 24k weights), so a 20k-sample epoch takes seconds.
    """

    def __init__(
        self, in_channels: int, num_classes: int, image_size: int, *, width: int = 16
    ) -> None:
        super().__init__()
        _check_positive(in_channels=in_channels, num_classes=num_classes, image_size=image_size)
        layers: list[nn.Module] = []
        channels, side = in_channels, image_size
        for out in (width, width * 2, width * 4):
            layers += [
                nn.Conv2d(channels, out, 3, padding=1, bias=False),
                nn.BatchNorm2d(out),
                nn.ReLU(inplace=True),
            ]
            channels = out
            if side >= 4:  # pool while the map stays at least 2×2
                layers.append(nn.MaxPool2d(2))
                side //= 2
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.head(torch.flatten(self.pool(self.features(x)), 1))
        return out


class MLP(nn.Module):
    """Two hidden layers over the flattened image (enough for 8×8 digits)."""

    def __init__(self, in_features: int, num_classes: int, *, hidden: int = 128) -> None:
        super().__init__()
        _check_positive(in_features=in_features, num_classes=num_classes, hidden=hidden)
        self.net = nn.Sequential(
            nn.Flatten(),
            nn.Linear(in_features, hidden),
            nn.ReLU(inplace=True),
            nn.Linear(hidden, hidden),
            nn.ReLU(inplace=True),
            nn.Linear(hidden, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.net(x)
        return out


class _BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + self.shortcut(x))


class SmallResNet(nn.Module):
    """A CIFAR-style ResNet with one basic block per stage (ResNet-8 at 3 stages)."""

    def __init__(
        self,
        in_channels: int,
        num_classes: int,
        *,
        width: int = 16,
        blocks_per_stage: int = 1,
        stages: int = 3,
    ) -> None:
        super().__init__()
        _check_positive(
            in_channels=in_channels,
            num_classes=num_classes,
            width=width,
            blocks_per_stage=blocks_per_stage,
            stages=stages,
        )
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
        )
        blocks: list[nn.Module] = []
        channels = width
        for stage in range(stages):
            out = width * 2**stage
            for b in range(blocks_per_stage):
                stride = 2 if stage > 0 and b == 0 else 1
                blocks.append(_BasicBlock(channels, out, stride))
                channels = out
        self.blocks = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.head(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))
        return out


def small_resnet(
    in_channels: int, num_classes: int, *, width: int = 16, blocks_per_stage: int = 1
) -> SmallResNet:
    """ResNet-8 by default (``blocks_per_stage=1``); ``blocks_per_stage=3`` gives ResNet-20."""
    return SmallResNet(
        in_channels, num_classes, width=width, blocks_per_stage=blocks_per_stage, stages=3
    )


def resnet18(in_channels: int, num_classes: int) -> nn.Module:
    """A CIFAR-style ResNet-18 (module docstring): torchvision's where it imports."""
    try:
        from torchvision.models import resnet18 as tv_resnet18
    except ImportError:  # the same shape without torchvision
        return SmallResNet(in_channels, num_classes, width=64, blocks_per_stage=2, stages=4)
    net = tv_resnet18(num_classes=num_classes)
    net.conv1 = nn.Conv2d(in_channels, 64, 3, stride=1, padding=1, bias=False)
    net.maxpool = nn.Identity()
    return net


def make_model(name: str, meta: Mapping[str, Any]) -> nn.Module:
    """The model called ``name`` for a dataset described by ``meta``.

    ``meta`` needs ``channels``, ``image_size`` (an int, or ``[h, w]``) and
    ``num_classes``, as in a manifest's meta. ``"auto"`` picks the MLP for images
    of at most 8×8 and the small CNN otherwise.
    """
    if name not in MODEL_NAMES:
        raise HotsetError(f"unknown model {name!r}; choose from {', '.join(MODEL_NAMES)}")
    try:
        channels = int(meta["channels"])
        num_classes = int(meta["num_classes"])
        size = meta["image_size"]
    except KeyError as exc:
        raise HotsetError(f"dataset meta lacks {exc.args[0]!r}, needed to build a model") from None
    if isinstance(size, list | tuple):
        height, width = (int(side) for side in size)
    else:
        height = width = int(size)
    if height != width:
        raise HotsetError(f"models expect square images, got image_size {height}×{width}")
    name = resolve_model_name(name, height)
    if name == "mlp":
        return MLP(channels * height * width, num_classes)
    if name == "cnn":
        return SmallCNN(channels, num_classes, height)
    if name == "resnet18":
        return resnet18(channels, num_classes)
    return small_resnet(channels, num_classes)


def resolve_model_name(name: str, side: int) -> str:
    """``name`` with ``"auto"`` made concrete for images ``side`` pixels high."""
    if name != "auto":
        return name
    return "mlp" if side <= _MLP_MAX_SIDE else "cnn"


def _check_positive(**values: int) -> None:
    for key, value in values.items():
        if value < 1:
            raise HotsetError(f"model: {key} must be >= 1, got {value}")
