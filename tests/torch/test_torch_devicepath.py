"""augment=: batches decoded and augmented on the device, or cropped to uint8 in the workers.

Real JPEG files, real DataLoader worker processes. The two paths must give the same
pixels for the same seed (Pillow decodes on both here), every sample once per epoch,
the encoded bytes exactly the files', and a loader resumed mid-epoch the same images
as one that was never stopped.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch_support import loss_of

import hotset
from hotset.data.manifest import Manifest, content_hash
from hotset.errors import HotsetError
from hotset.vision import EncodedBatch, RandomResizedCrop, augment_seed

SPEC = RandomResizedCrop(24, decoder="pil")
CONFIG: dict[str, Any] = {"cache": 0.3, "batch_size": 8, "seed": 5}


def _loader(photo_dir: Path, workers: int, system: str = "lru", **options: Any) -> Any:
    data = hotset.open_dataset(photo_dir, decode="bytes")
    return hotset.loader(data, system=system, num_workers=workers, **CONFIG, **options)


def _epochs(loader: Any, epochs: int) -> list[list[tuple[torch.Tensor, list[int]]]]:
    out = []
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        out.append([(x, ids.tolist()) for x, _y, ids, _w in loader])
    return out


@pytest.mark.parametrize("workers", [0, 2])
def test_the_device_path_and_the_worker_path_give_the_same_images(
    photo_dir: Path, workers: int
) -> None:
    with _loader(photo_dir, workers, augment=SPEC) as on_device:
        device = _epochs(on_device, 2)
        files = [(photo_dir / k).read_bytes() for k in on_device.data.manifest.keys]
    with _loader(photo_dir, workers, augment=SPEC, augment_on="worker") as in_workers:
        worker = _epochs(in_workers, 2)
    for epoch, (a_batches, b_batches) in enumerate(zip(device, worker, strict=True)):
        assert len(a_batches) == 5
        for index, ((xa, ids_a), (xb, ids_b)) in enumerate(zip(a_batches, b_batches, strict=True)):
            assert ids_a == ids_b
            assert xa.shape == (len(ids_a), 3, 24, 24) and xa.dtype == torch.float32
            assert torch.equal(xa, xb), (epoch, index)
            # and both are the spec applied to the files, seeded by (seed, epoch, index)
            seed = augment_seed(CONFIG["seed"], epoch, index)
            by_hand = SPEC(EncodedBatch.from_blobs([files[i] for i in ids_a], seed=seed))
            assert torch.equal(xa, by_hand)
    # another epoch draws other crops of the same samples
    first, second = ({i: x[k] for x, ids in e for k, i in enumerate(ids)} for e in device)
    assert sum(not torch.equal(first[i], second[i]) for i in first) > len(first) // 2


@pytest.mark.parametrize("workers", [0, 2])
def test_encoded_batches_hold_the_files_bytes_each_sample_once_an_epoch(
    photo_dir: Path, workers: int
) -> None:
    with _loader(photo_dir, workers, augment="encoded") as loader:
        files = [(photo_dir / k).read_bytes() for k in loader.data.manifest.keys]
        for epoch in range(3):  # the cache serves hits from the second epoch on
            loader.set_epoch(epoch)
            seen: list[int] = []
            for index, (x, _y, ids, _w) in enumerate(loader):
                assert isinstance(x, EncodedBatch)
                assert x.seed == augment_seed(CONFIG["seed"], epoch, index)
                assert [x.sample(k) for k in range(len(x))] == [files[i] for i in ids.tolist()]
                seen += ids.tolist()
            assert sorted(seen) == list(range(len(files))), epoch
        assert sum(r["exact_hits"] for r in loader.report()) > 0


def _through_bytes(state: dict[str, Any]) -> dict[str, Any]:
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=False)


def _train(loader: Any, epoch: int, stop: int | None = None) -> list[tuple[torch.Tensor, list]]:
    loader.set_epoch(epoch)
    out = []
    for x, _y, ids, _w in loader:
        loader.update(ids, torch.from_numpy(loss_of(ids.numpy(), epoch)))
        out.append((x, ids.tolist()))
        if stop is not None and len(out) == stop:
            break
    return out


@pytest.mark.parametrize("workers", [0, 2])
def test_a_loader_resumed_mid_epoch_augments_the_rest_as_an_unbroken_one(
    photo_dir: Path, workers: int
) -> None:
    with _loader(photo_dir, workers, system="shade", augment=SPEC) as whole:
        _train(whole, 0)
        want = _train(whole, 1)
    with _loader(photo_dir, workers, system="shade", augment=SPEC) as first:
        _train(first, 0)
        head = _train(first, 1, stop=2)
        state = _through_bytes(first.state_dict())
    with _loader(photo_dir, workers, system="shade", augment=SPEC) as second:
        second.load_state_dict(state)
        tail = _train(second, 1)
    got = head + tail
    assert [ids for _x, ids in got] == [ids for _x, ids in want]
    for (xa, _), (xb, _) in zip(got, want, strict=True):
        assert torch.equal(xa, xb)


def test_the_options_are_checked_by_name(photo_dir: Path) -> None:
    data = hotset.open_dataset(photo_dir, decode="bytes")
    cases = [
        ({"augment": "crop"}, "augment must be a hotset.vision.RandomResizedCrop"),
        ({"augment": SPEC, "augment_on": "gpu"}, "augment_on must be one of"),
        ({"augment": SPEC, "device": "tpu9"}, "device must be a device name"),
        ({"device": "cuda"}, "give augment="),
        ({"augment": "encoded", "device": "cuda"}, "give the device to the spec"),
        ({"augment": SPEC, "collate_fn": list}, "drop collate_fn"),
    ]
    for options, match in cases:
        with pytest.raises(HotsetError, match=match):
            hotset.loader(data, system="lru", **options)
    with_transform = hotset.open_dataset(photo_dir, decode="pil", transform=lambda im: im)
    with pytest.raises(HotsetError, match="replaces the data set's transform"):
        hotset.loader(with_transform, system="lru", augment=SPEC)


@pytest.mark.parametrize(("workers", "on"), [(0, "device"), (2, "worker")])
def test_a_sample_that_is_no_image_is_named_by_its_key(
    tmp_path: Path, photo_dir: Path, workers: int, on: str
) -> None:
    keys = ["a.jpg", "b.jpg", "c.txt", "d.jpg"]
    blobs = [(photo_dir / k).read_bytes() for k in Manifest.load(photo_dir).keys[:3]]
    blobs.insert(2, b"not an image at all")
    for key, blob in zip(keys, blobs, strict=True):
        (tmp_path / key).write_bytes(blob)
    Manifest(
        np.arange(4), keys, [len(b) for b in blobs], [0, 1, 0, 1], [content_hash(b) for b in blobs]
    ).save(tmp_path)
    data = hotset.open_dataset(tmp_path, decode="bytes")
    with (
        hotset.loader(
            data, system="pytorch", batch_size=4, num_workers=workers, augment=SPEC, augment_on=on
        ) as loader,
        pytest.raises(HotsetError, match=r"cannot decode sample \d of the batch \('c.txt'\)"),
    ):
        list(loader)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("on", ["device", "worker"])
def test_on_a_gpu_x_arrives_on_it_with_the_cpus_pixels(photo_dir: Path, on: str) -> None:
    with _loader(photo_dir, 2, augment=SPEC) as on_cpu:
        want = _epochs(on_cpu, 1)[0]
    spec = RandomResizedCrop(24, decoder="pil")  # Pillow on the CPU, the crop on the GPU
    with _loader(photo_dir, 2, augment=spec, augment_on=on, device="cuda", pin_memory=True) as gpu:
        got = _epochs(gpu, 1)[0]
    for (xa, ids_a), (xb, ids_b) in zip(got, want, strict=True):
        assert xa.is_cuda and ids_a == ids_b
        assert torch.allclose(xa.cpu(), xb, atol=1e-6)
