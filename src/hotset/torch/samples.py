"""A batch's last step in the worker: its samples decoded and collated into ``x``."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.errors import HotsetError
from hotset.torch.dataset import DecodeSpec, decode_sample
from hotset.torch.reads import StoreReader

__all__ = ["SampleDecoder", "identity_collate"]


def identity_collate(batch: Any) -> Any:
    """The DataLoader's collate_fn: a fetched plan is already a collated batch."""
    return batch


class SampleDecoder:
    """Bytes to samples (the data set's decoding and transform), samples to a batch."""

    def __init__(
        self,
        *,
        keys: Sequence[str],
        reader: StoreReader,
        decode: DecodeSpec,
        transform: Callable[[Any], Any] | None,
        collate_fn: Callable[[list[Any]], Any] | None,
        collate_inputs: Callable[[list[Any]], Any] | None = None,
    ) -> None:
        self.keys = keys
        self.reader = reader
        self.decode = decode
        self.transform = transform
        #: the user's DataLoader-style collate: (x, y) items to an (x, y) batch
        self.collate_fn = collate_fn
        #: the user's function of a batch's samples alone to its x (None: see collate)
        self.collate_inputs = collate_inputs

    @property
    def passes_bytes(self) -> bool:
        """Whether a batch's ``x`` is its samples' bytes as they are (a list)."""
        return (
            self.decode == "bytes"
            and self.transform is None
            and self.collate_fn is None
            and self.collate_inputs is None
        )

    def decode_one(self, data: bytes, sid: int) -> Any:
        return decode_sample(self.decode, self.transform, data, self.keys[sid])

    def decode_all(
        self,
        sids: list[int],
        blobs: dict[int, bytes],
        info: dict[str, Any],
        cached: Collection[int] = (),
    ) -> list[Any]:
        """Each sample decoded; one whose cached bytes do not decode is read again.

        ``cached`` names the ids whose bytes came from the cache (or a shared pool),
        not from storage. With ``verify=False`` a cache entry is not hashed, so an entry
        another client of the namespace overwrote reaches decoding. Any failure to
        decode such bytes -- the item codec's, an image decoder's, a ``decode=``
        function's or a transform's -- is a re-read of the sample from storage, decoded
        from there and counted as an integrity error and a rebuild read, as a poisoned
        entry is with ``verify``; the bytes are compared first, so a sample whose stored
        bytes fail alike raises that error as it is. Bytes storage itself returned that
        do not decode are a real data problem: raised, named by the decoder.
        """
        out = []
        for sid in sids:
            try:
                out.append(self.decode_one(blobs[sid], sid))
            except Exception:
                if sid not in cached:
                    raise
                fresh = self.reader.read_checked(sid)
                if fresh == blobs[sid]:
                    raise
                blobs[sid] = fresh
                info["integrity_errors"] += 1
                info["rebuild_reads"] += 1
                info["rebuild_bytes"] += len(fresh)
                out.append(self.decode_one(fresh, sid))
        return out

    def collate(self, samples: list[Any], labels: npt.NDArray[np.int64]) -> tuple[Any, Any]:
        """A batch's ``(x, y)``: the user's ``collate_fn`` over ``(sample, label)`` items, as a
        DataLoader calls it; else ``(x, labels)``, ``x`` from :meth:`inputs`."""
        if self.collate_fn is None:
            return self.inputs(samples), labels
        items = list(zip(samples, labels.tolist(), strict=True))
        out = self.collate_fn(items)
        if not isinstance(out, tuple | list) or len(out) < 2:
            raise HotsetError(
                "collate_fn must return the batch as (x, y), as a DataLoader's default_collate "
                f"does for (x, y) items; it returned {type(out).__name__}. A function of the "
                "samples alone to x is collate_inputs="
            )
        return out[0], out[1]

    def inputs(self, samples: list[Any]) -> Any:
        """A batch's ``x``: the user's ``collate_inputs``, else stacked tensors or arrays.

        Samples of one shape are stacked; tensors or arrays of several shapes,
        and bytes, stay a list. Anything else goes through torch's
        ``default_collate`` (dicts, tuples, numbers), and what that cannot batch
        (a ``PIL.Image`` without a ``ToTensor`` transform, say) is a clear error
        naming the two fixes, rather than a list the model then chokes on.
        """
        if self.collate_inputs is not None:
            return self.collate_inputs(samples)
        import torch

        if not samples:
            return samples
        if all(isinstance(s, torch.Tensor) for s in samples):
            shape = samples[0].shape
            return torch.stack(samples) if all(s.shape == shape for s in samples) else samples
        if all(isinstance(s, np.ndarray) for s in samples):
            shape = samples[0].shape
            if all(s.shape == shape for s in samples):
                return torch.from_numpy(np.stack(samples))
            return samples
        if all(isinstance(s, bytes | str) for s in samples):
            return samples
        from torch.utils.data import default_collate

        try:
            return default_collate(samples)
        except (TypeError, RuntimeError) as exc:
            kind = type(samples[0]).__name__
            raise HotsetError(
                f"cannot batch samples of type {kind}: give the loader collate_inputs= (a "
                "function from a list of samples to a batch's x) or collate_fn= (the "
                "DataLoader's: (x, y) items to an (x, y) batch), or a transform= that returns "
                f"tensors (for PIL images, torchvision.transforms.ToTensor()); {exc}"
            ) from None
