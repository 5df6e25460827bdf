"""decode: every format back to float32 CHW in [0, 1], and clear errors."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from PIL import Image

from hotset.data.decode import decode, decode_many, format_of
from hotset.data.writer import encode_image
from hotset.errors import HotsetError


@settings(max_examples=30, deadline=None)
@given(
    pixels=hnp.arrays(
        np.uint8,
        st.tuples(st.integers(1, 12), st.integers(1, 12), st.sampled_from([1, 3])),
    ),
    fmt=st.sampled_from(["png", "npy"]),
)
def test_lossless_formats_round_trip_exactly(pixels: np.ndarray, fmt: str) -> None:
    key = f"x/sample.{fmt}"
    out = decode(encode_image(pixels, fmt), key)
    h, w, c = pixels.shape
    assert out.shape == (c, h, w)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, pixels.transpose(2, 0, 1).astype(np.float32) / 255.0)


@pytest.mark.parametrize("channels", [1, 3])
def test_jpeg_is_close_and_shaped(channels: int) -> None:
    rng = np.random.default_rng(0)
    smooth = np.repeat(np.repeat(rng.integers(0, 256, (4, 4, channels)), 4, 0), 4, 1).astype(
        np.uint8
    )
    out = decode(encode_image(smooth, "jpeg"), "a.JPG")
    assert out.shape == (channels, 16, 16)
    # lossy (chroma subsampling): close, far closer than an unrelated image (~0.33)
    assert np.abs(out - smooth.transpose(2, 0, 1) / 255.0).mean() < 0.1
    assert out.min() >= 0.0 and out.max() <= 1.0


def test_rgba_and_palette_pngs_become_rgb() -> None:
    rgba = Image.fromarray(np.full((3, 5, 4), 200, dtype=np.uint8), "RGBA")
    buf = io.BytesIO()
    rgba.save(buf, format="PNG")
    assert decode(buf.getvalue(), "a.png").shape == (3, 3, 5)
    red = np.zeros((3, 5, 3), dtype=np.uint8)
    red[..., 0] = 255
    pal = Image.fromarray(red).convert("P")
    buf = io.BytesIO()
    pal.save(buf, format="PNG")
    out = decode(buf.getvalue(), "b.png")
    assert out.shape == (3, 3, 5)
    assert out[0].min() == 1.0 and out[1].max() == 0.0


@pytest.mark.parametrize(
    ("array", "shape"),
    [
        (np.zeros((5, 6), dtype=np.uint8), (1, 5, 6)),
        (np.zeros((5, 6, 3), dtype=np.uint8), (3, 5, 6)),  # HWC
        (np.zeros((3, 5, 6), dtype=np.uint8), (3, 5, 6)),  # CHW
        (np.full((2, 2), 0.5, dtype=np.float64), (1, 2, 2)),
        (np.full((2, 2), 65535, dtype=np.uint16), (1, 2, 2)),
    ],
)
def test_npy_layouts(array: np.ndarray, shape: tuple[int, ...]) -> None:
    buf = io.BytesIO()
    np.save(buf, array)
    out = decode(buf.getvalue(), "s.npy")
    assert out.shape == shape
    assert out.dtype == np.float32
    assert out.max() <= 1.0


@pytest.mark.parametrize(
    ("array", "needle"),
    [
        (np.full((2, 2), 2.0), r"\[0, 1\]"),
        (np.zeros((5, 6, 7), dtype=np.uint8), "channel axis"),
        (np.zeros((2, 2), dtype=np.int64), "dtype int64"),
        (np.zeros((1, 2, 2, 2), dtype=np.uint8), "2-D or 3-D"),
    ],
)
def test_npy_rejects(array: np.ndarray, needle: str) -> None:
    buf = io.BytesIO()
    np.save(buf, array)
    with pytest.raises(HotsetError, match=needle):
        decode(buf.getvalue(), "bad.npy")


def test_pickled_npy_is_refused() -> None:
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(HotsetError, match=r"cannot decode 'obj\.npy'"):
        decode(buf.getvalue(), "obj.npy")


def test_unknown_extension_and_corrupt_bytes_name_the_key() -> None:
    with pytest.raises(HotsetError, match=r"unknown extension '\.gif'"):
        decode(b"GIF89a", "dir/cat.gif")
    with pytest.raises(HotsetError, match="no file extension to go by"):
        decode(b"", "noext")
    with pytest.raises(HotsetError, match=r"cannot decode 'dir/broken\.png' as png"):
        decode(b"not a png", "dir/broken.png")
    assert format_of("A/B.JPEG") == "jpeg"


def test_decode_many_stacks_and_checks_shapes() -> None:
    a = encode_image(np.zeros((4, 4, 3), dtype=np.uint8), "png")
    b = encode_image(np.full((4, 4, 3), 255, dtype=np.uint8), "npy")
    out = decode_many([a, b], ["a.png", "b.npy"])
    assert out.shape == (2, 3, 4, 4)
    assert out[0].max() == 0.0 and out[1].min() == 1.0
    c = encode_image(np.zeros((5, 4, 3), dtype=np.uint8), "png")
    with pytest.raises(HotsetError, match=r"'c\.png' has shape"):
        decode_many([a, c], ["a.png", "c.png"])
    with pytest.raises(HotsetError, match="2 blobs but 1 keys"):
        decode_many([a, b], ["a.png"])


def test_a_key_without_extension_is_decoded_by_its_signature() -> None:
    image = np.zeros((4, 4, 3), dtype=np.uint8)
    image[1, 2] = (255, 0, 0)
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG")
    assert np.array_equal(decode(buf.getvalue(), "17"), decode(buf.getvalue(), "17.png"))
    arr = np.arange(6, dtype=np.float32).reshape(1, 2, 3) / 10
    npy = io.BytesIO()
    np.save(npy, arr)
    assert np.array_equal(decode(npy.getvalue(), "18"), decode(npy.getvalue(), "18.npy"))
