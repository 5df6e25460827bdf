"""Datasets shaped as torchvision gives them, over real image files (no pytest here).

torchvision is not a dependency, so these stand in for ``ImageFolder`` with
what hotset relies on: ``.samples`` of ``(path, class index)``, ``.targets``,
``.classes``, ``target_transform``, and ``__getitem__`` returning ``(RGB PIL
image, label)`` as torchvision's default loader does. Module-level so
DataLoader workers can unpickle them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

#: mode of each class's files: grayscale, palette (gray entries), RGB, RGB with alpha
MODES = ("L", "P", "RGB", "RGBA")


def write_tree(root: Path, *, per_class: int = 6, size: int = 12) -> Path:
    """``root/CLASS/*.png|jpg``: one class per mode in :data:`MODES`, JPEG for L and RGB too."""
    from PIL import Image

    rng = np.random.default_rng(0)
    for label, mode in enumerate(MODES):
        folder = root / f"class_{label}_{mode.lower()}"
        folder.mkdir(parents=True)
        for i in range(per_class):
            pixels = rng.integers(0, 256, (size, size, 4), dtype=np.uint8)
            image = Image.fromarray(pixels, "RGBA")
            image = image if mode == "RGBA" else image.convert("RGB").convert(mode)
            ext = "jpg" if mode in ("L", "RGB") and i % 2 else "png"
            image.save(folder / f"{i:03d}.{ext}")
    return root


class ImageFolderLike:
    """``ImageFolder``'s attributes and items, over ``root``."""

    def __init__(self, root: Path, target_transform: Any = None) -> None:
        self.classes = sorted(p.name for p in root.iterdir() if p.is_dir())
        self.samples = [
            (str(path), label)
            for label, name in enumerate(self.classes)
            for path in sorted((root / name).iterdir())
        ]
        self.targets = [label for _, label in self.samples]
        self.target_transform = target_transform

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple[Any, int]:
        from PIL import Image

        path, label = self.samples[index]
        with Image.open(path) as image:
            rgb = image.convert("RGB")  # torchvision's pil_loader
        if self.target_transform is not None:
            label = self.target_transform(label)
        return rgb, label

    def read(self, index: int) -> bytes:
        return Path(self.samples[index][0]).read_bytes()


class SamplesOnly(ImageFolderLike):
    """A DatasetFolder-like class of a user's own: ``.samples`` but no ``.targets``."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        del self.targets


class Unlabeled:
    """Raw files with no label anywhere: ``read`` only."""

    def __init__(self, root: Path) -> None:
        self.paths = sorted(p for p in root.rglob("*") if p.is_file())
        self.reads = 0

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> bytes:
        return self.read(index)

    def read(self, index: int) -> bytes:
        self.reads += 1
        return self.paths[index].read_bytes()


def to_tensor(image: Any) -> Any:
    """``ToTensor`` then ``Normalize`` (three means, in place as torchvision's is)."""
    import torch

    arr = np.asarray(image, dtype=np.float32) / 255.0
    tensor = torch.from_numpy(arr if arr.ndim == 3 else arr[..., None]).permute(2, 0, 1)
    mean = torch.tensor([0.485, 0.456, 0.406])[:, None, None]
    std = torch.tensor([0.229, 0.224, 0.225])[:, None, None]
    return tensor.clone().sub_(mean).div_(std)  # a 1-channel image fails here
