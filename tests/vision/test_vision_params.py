"""draw_params: torchvision's RandomResizedCrop rule, every image at once, from one seed."""

from __future__ import annotations

import math

import pytest
import torch

from hotset.errors import HotsetError
from hotset.vision.params import TRIES, draw_params

SCALE, RATIO = (0.08, 1.0), (3 / 4, 4 / 3)


def _one_by_one(sizes: list[tuple[int, int]], seed: int) -> list[tuple[int, int, int, int]]:
    """The rule written out per image, in plain Python, from the same uniforms."""
    g = torch.Generator().manual_seed(seed)
    u = torch.rand((len(sizes), TRIES, 4), generator=g, dtype=torch.float64).tolist()
    out = []
    for (h, w), tries in zip(sizes, u, strict=True):
        for us, ur, ui, uj in tries:
            area = h * w * (SCALE[0] + (SCALE[1] - SCALE[0]) * us)
            lo, hi = math.log(RATIO[0]), math.log(RATIO[1])
            aspect = math.exp(lo + (hi - lo) * ur)
            cw, ch = round(math.sqrt(area * aspect)), round(math.sqrt(area / aspect))
            if 0 < cw <= w and 0 < ch <= h:
                out.append((math.floor(ui * (h - ch + 1)), math.floor(uj * (w - cw + 1)), ch, cw))
                break
        else:
            ratio = w / h
            cw, ch = w, h
            if ratio < min(RATIO):
                ch = round(w / min(RATIO))
            elif ratio > max(RATIO):
                cw = round(h * max(RATIO))
            out.append(((h - ch) // 2, (w - cw) // 2, ch, cw))
    return out


def test_the_batched_draw_is_the_rule_applied_image_by_image() -> None:
    sizes = [(375, 500), (500, 375), (64, 48), (10, 300), (300, 10), (1, 1), (7, 9)] * 30
    got = draw_params(sizes, torch.Generator().manual_seed(11), scale=SCALE, ratio=RATIO)
    assert [tuple(b) for b in got.boxes.tolist()] == _one_by_one(sizes, 11)
    for (top, left, ch, cw), (h, w) in zip(got.boxes.tolist(), sizes, strict=True):
        assert top >= 0 and top + ch <= h and left >= 0 and left + cw <= w and ch > 0 and cw > 0


def test_the_same_seed_gives_the_same_crops_and_another_seed_others() -> None:
    sizes = [(375, 500)] * 64
    a = draw_params(sizes, torch.Generator().manual_seed(1))
    b = draw_params(sizes, torch.Generator().manual_seed(1))
    c = draw_params(sizes, torch.Generator().manual_seed(2))
    assert torch.equal(a.boxes, b.boxes) and torch.equal(a.flips, b.flips)
    assert not torch.equal(a.boxes, c.boxes)


def test_flips_follow_their_probability_and_impossible_draws_fall_back_to_the_centre() -> None:
    sizes = [(100, 100)] * 2000
    half = draw_params(sizes, torch.Generator().manual_seed(0)).flips.float().mean()
    assert 0.45 < float(half) < 0.55
    assert not draw_params(sizes[:50], torch.Generator(), flip=0.0).flips.any()
    assert draw_params(sizes[:50], torch.Generator(), flip=1.0).flips.all()
    # a 2:1 crop of the whole area never fits a square: the centre, clamped to ratio 2
    wide = draw_params([(100, 100), (100, 400)], torch.Generator(), scale=(1, 1), ratio=(2, 2))
    assert wide.boxes.tolist() == [[25, 0, 50, 100], [0, 100, 100, 200]]


def test_bad_ranges_are_named() -> None:
    with pytest.raises(HotsetError, match="scale must be"):
        draw_params([(4, 4)], torch.Generator(), scale=(0.5, 0.2))
    with pytest.raises(HotsetError, match="ratio must be"):
        draw_params([(4, 4)], torch.Generator(), ratio=(0, 1))
    with pytest.raises(HotsetError, match="at least 1x1"):
        draw_params([(0, 4)], torch.Generator())
