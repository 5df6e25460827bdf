"""The few parts of torchvision the ImageNet-style examples use, for a machine without it.

``imagenet_style_plain.py`` and ``imagenet_style.py`` import torchvision's
``datasets`` and ``transforms`` when it is installed and these otherwise: the same
names and behaviour for what the examples call (``ImageFolder`` with its RGB
loader, ``Compose``, ``RandomHorizontalFlip``, ``ToTensor``, ``Normalize``).
"""

import os

import numpy as np
import torch
from PIL import Image

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png")


class ImageFolder(torch.utils.data.Dataset):
    """``root/CLASS/*.jpg``: classes numbered by sorted folder name, images as RGB."""

    def __init__(self, root, transform=None, target_transform=None):
        self.root = root
        self.classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        self.samples = [
            (os.path.join(dirpath, name), self.class_to_idx[cls])
            for cls in self.classes
            for dirpath, _, names in sorted(os.walk(os.path.join(root, cls)))
            for name in sorted(names)
            if name.lower().endswith(IMAGE_EXTENSIONS)
        ]
        self.targets = [label for _, label in self.samples]
        self.transform = transform
        self.target_transform = target_transform

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, target = self.samples[index]
        with open(path, "rb") as f, Image.open(f) as image:
            sample = image.convert("RGB")
        if self.transform is not None:
            sample = self.transform(sample)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return sample, target


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, x):
        for transform in self.transforms:
            x = transform(x)
        return x


class RandomHorizontalFlip:
    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, image):
        if torch.rand(1).item() < self.p:
            return image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        return image


class ToTensor:
    """A PIL image to a float ``C, H, W`` tensor in [0, 1]."""

    def __call__(self, image):
        array = np.asarray(image, dtype=np.float32) / 255.0
        if array.ndim == 2:
            array = array[:, :, None]
        return torch.from_numpy(array.transpose(2, 0, 1).copy())


class Normalize:
    def __init__(self, mean, std):
        self.mean = torch.tensor(mean)[:, None, None]
        self.std = torch.tensor(std)[:, None, None]

    def __call__(self, tensor):
        return tensor.clone().sub_(self.mean).div_(self.std)
