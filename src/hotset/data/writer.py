"""Writing a dataset directory: file layout, image encoding, all-or-nothing commit.

Generators build into a temporary sibling of ``--out`` and rename it into place
only when every file and the manifest are written, so an interrupted run never
leaves a half-made dataset that looks complete.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from pathlib import Path
from types import TracebackType

import numpy as np

from hotset.errors import HotsetError

FILES_PER_FOLDER = 1000
FORMAT_EXT = {"png": ".png", "jpeg": ".jpg", "npy": ".npy"}


def sample_key(i: int, n: int, fmt: str, *, prefix: str = "train") -> str:
    """``prefix/FF/IIIIII.ext``: at most :data:`FILES_PER_FOLDER` files per folder."""
    folders = max(1, (n - 1) // FILES_PER_FOLDER + 1)
    folder_w = max(2, len(str(folders - 1)))
    file_w = max(6, len(str(n - 1)))
    return f"{prefix}/{i // FILES_PER_FOLDER:0{folder_w}d}/{i:0{file_w}d}{FORMAT_EXT[fmt]}"


def check_format(fmt: str) -> str:
    if fmt not in FORMAT_EXT:
        raise HotsetError(f"format {fmt!r} is not one of {', '.join(FORMAT_EXT)}")
    return fmt


def encode_image(pixels: np.ndarray, fmt: str, *, jpeg_quality: int = 90) -> bytes:
    """Encode uint8 ``(H, W)`` or ``(H, W, C)`` pixels; ``npy`` is stored as CHW uint8."""
    if pixels.dtype != np.uint8:
        raise HotsetError(f"encode_image wants uint8 pixels, got {pixels.dtype}")
    if pixels.ndim == 3 and pixels.shape[2] == 1:
        pixels = pixels[:, :, 0]
    if fmt == "npy":
        chw = pixels[None] if pixels.ndim == 2 else pixels.transpose(2, 0, 1)
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(chw), allow_pickle=False)
        return buf.getvalue()
    from PIL import Image

    img = Image.fromarray(np.ascontiguousarray(pixels))
    buf = io.BytesIO()
    if fmt == "png":
        # level 1: several times faster than the default for a few % more bytes
        img.save(buf, format="PNG", compress_level=1)
    elif fmt == "jpeg":
        img.save(buf, format="JPEG", quality=jpeg_quality)
    else:
        check_format(fmt)
    return buf.getvalue()


class DatasetDir:
    """A temporary sibling of ``out`` that becomes ``out`` on :meth:`commit`.

    Refuses a non-empty existing ``out`` unless ``force``; with ``force`` the old
    directory is replaced only after the new one is complete.
    """

    def __init__(self, out: str | os.PathLike[str], *, force: bool = False) -> None:
        self.out = Path(out)
        if self.out.exists():
            if not self.out.is_dir():
                raise HotsetError(f"--out {str(self.out)!r} exists and is not a directory")
            if any(self.out.iterdir()) and not force:
                raise HotsetError(
                    f"--out {str(self.out)!r} exists and is not empty (use --force to replace it)"
                )
        parent = self.out.absolute().parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
            self.path = Path(
                tempfile.mkdtemp(dir=parent, prefix=f".{self.out.name}.", suffix=".tmp")
            )
        except OSError as exc:  # /proc, a read-only mount, no permission: one clear line
            raise HotsetError(
                f"cannot write the data set to {str(self.out)!r}: {exc.strerror or exc}; "
                "give --out a writable directory"
            ) from None
        self._made_dirs: set[Path] = set()
        self._done = False

    def write(self, key: str, data: bytes) -> None:
        """Write one file (no per-file atomicity needed: the whole dir is renamed at the end)."""
        path = self.path / key
        parent = path.parent
        if parent not in self._made_dirs:
            parent.mkdir(parents=True, exist_ok=True)
            self._made_dirs.add(parent)
        # raw os calls: file creation dominates for small images; skip buffered-io overhead
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)

    def commit(self) -> Path:
        """Move the finished directory into place; returns ``out``."""
        trash: Path | None = None
        if self.out.exists():
            if any(self.out.iterdir()):
                trash = Path(
                    tempfile.mkdtemp(
                        dir=self.path.parent, prefix=f".{self.out.name}.", suffix=".old"
                    )
                )
                os.replace(self.out, trash)
            else:
                self.out.rmdir()
        os.replace(self.path, self.out)
        self._done = True
        if trash is not None:
            shutil.rmtree(trash, ignore_errors=True)
        return self.out

    def abort(self) -> None:
        if not self._done:
            shutil.rmtree(self.path, ignore_errors=True)
            self._done = True

    def __enter__(self) -> DatasetDir:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.abort()
