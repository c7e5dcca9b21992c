#!/usr/bin/env python3
"""Synthetic face drawings for trying `predict` and `evaluate` on the shared emotion and mask models.

Run in a venv with Samples/requirements-images.txt (Pillow 11.3.0, numpy):

    python Samples/make_face_images.py --out Samples

Writes, deterministically (every picture is drawn from a fixed seed with Pillow's ImageDraw):
- `Faces/<label>/face_<n>.png`, label Angry, Happy, Neutral, Sad or Surprise, n = 1..3: grayscale-looking
  faces (saved as 160x120 RGB with equal channels) for the 48x48 and 64x64 grayscale emotion models.
  Happy: smile and raised cheeks; Sad: frown and drooping brows; Surprise: round open mouth, raised brows,
  wide eyes; Angry: slanted brows and a tight mouth; Neutral: straight mouth. The face size and position,
  the skin tone and the background vary a little from picture to picture.
- `Masks/<label>/face_<n>.png|.jpg`, label `With Mask` or `Without Mask` (the Teachable Machine model's
  label names), n = 1..4: colour faces (140x120 RGB) for the 224x224 RGB mask model; a surgical mask of
  varying colour covers the nose and mouth in `With Mask`. face_4 of each class is a JPEG, so both
  decoders are exercised.
The images are not square, so the tool has to scale and crop them.

These are drawings, not photographs: a model's accuracy on them says little about the model. What they
show is that the commands run on real grayscale and RGB models end to end, and that a Keras file and its
conversion agree on the same images (`modelconv evaluate <converted> <folder> --against <keras file>`).
"""

import argparse
import os
import random

import numpy as np
from PIL import Image, ImageDraw

SEED = 20240611
SUPER = 4  # drawn at 4x and reduced with a box filter, for smooth edges
EMOTIONS = ["Angry", "Happy", "Neutral", "Sad", "Surprise"]
FACES_PER_EMOTION = 3
MASKS_PER_CLASS = 4
FACE_SIZE = (160, 120)
MASK_SIZE = (140, 120)


def gray(v):
    v = int(max(0, min(255, round(v))))
    return (v, v, v)


def shade(color, factor):
    return tuple(int(max(0, min(255, round(c * factor)))) for c in color)


class Canvas:
    """An ImageDraw on a supersampled canvas whose coordinates are in output pixels."""

    def __init__(self, size, background):
        self.size = size
        self.image = Image.new("RGB", (size[0] * SUPER, size[1] * SUPER), background)
        self.draw = ImageDraw.Draw(self.image)

    @staticmethod
    def _s(points):
        return [v * SUPER for v in points]

    def ellipse(self, box, fill=None, outline=None, width=1):
        self.draw.ellipse(self._s(box), fill=fill, outline=outline, width=round(width * SUPER))

    def line(self, points, fill, width):
        self.draw.line(self._s(points), fill=fill, width=round(width * SUPER), joint="curve")
        # round caps
        r = width / 2
        for x, y in (points[0:2], points[-2:]):
            self.ellipse((x - r, y - r, x + r, y + r), fill=fill)

    def polygon(self, points, fill=None, outline=None, width=1):
        self.draw.polygon(self._s(points), fill=fill, outline=outline, width=round(width * SUPER))

    def arc(self, box, start, end, fill, width):
        self.draw.arc(self._s(box), start, end, fill=fill, width=round(width * SUPER))

    def chord(self, box, start, end, fill=None, outline=None, width=1):
        self.draw.chord(self._s(box), start, end, fill=fill, outline=outline, width=round(width * SUPER))

    def result(self):
        return self.image.resize(self.size, Image.Resampling.BOX)


def curve(x0, x1, y, bend, steps=16):
    """Points of a parabola from (x0, y) to (x1, y) whose middle is `bend` lower (negative: higher)."""
    points = []
    for i in range(steps + 1):
        t = i / steps
        points += [x0 + (x1 - x0) * t, y + bend * (1 - (2 * t - 1) ** 2)]
    return points


def face_geometry(rng, size, scale_range):
    w, h = size
    fh = h * rng.uniform(*scale_range)          # face height
    fw = fh * rng.uniform(0.74, 0.82)           # face width
    cx = w / 2 + rng.uniform(-0.05, 0.05) * w
    cy = h / 2 + rng.uniform(-0.04, 0.06) * h
    return cx, cy, fw, fh


def draw_eyes(c, cx, ey, dx, rx, ry, sclera, iris, look):
    for side in (-1, 1):
        x = cx + side * dx
        c.ellipse((x - rx, ey - ry, x + rx, ey + ry), fill=sclera, outline=iris, width=0.8)
        pr = min(rx, ry) * 0.62
        px = x + look * rx * 0.2
        c.ellipse((px - pr, ey - pr, px + pr, ey + pr), fill=iris)


def emotion_face(label, rng):
    """One grayscale-looking face showing `label`."""
    background = gray(rng.uniform(40, 200))
    skin_v = rng.uniform(150, 215)
    if abs(skin_v - background[0]) < 35:  # keep the face visible against the background
        skin_v = background[0] + 45 if background[0] < 130 else background[0] - 45
    skin = gray(skin_v)
    dark = gray(skin_v * rng.uniform(0.18, 0.3))
    hair = gray(rng.uniform(20, 90))
    c = Canvas(FACE_SIZE, background)
    cx, cy, fw, fh = face_geometry(rng, FACE_SIZE, (0.84, 0.94))
    left, top, right, bottom = cx - fw / 2, cy - fh / 2, cx + fw / 2, cy + fh / 2

    # neck, hair behind, head, ears
    c.polygon([cx - fw * 0.2, bottom - fh * 0.1, cx + fw * 0.2, bottom - fh * 0.1,
               cx + fw * 0.26, FACE_SIZE[1] + 2, cx - fw * 0.26, FACE_SIZE[1] + 2], fill=gray(skin_v * 0.85))
    c.ellipse((left - fw * 0.06, top - fh * 0.06, right + fw * 0.06, cy + fh * 0.12), fill=hair)
    for side in (-1, 1):
        ex = cx + side * fw * 0.5
        c.ellipse((ex - fw * 0.07, cy - fh * 0.06, ex + fw * 0.07, cy + fh * 0.1), fill=gray(skin_v * 0.92))
    c.ellipse((left, top, right, bottom), fill=skin)
    c.chord((left, top - fh * 0.02, right, top + fh * 0.36), 180, 360, fill=hair)  # fringe

    ey = cy - fh * 0.07 + rng.uniform(-1, 1)
    dx = fw * rng.uniform(0.2, 0.23)
    rx = fw * 0.1
    ry = fw * 0.055
    brow_y = ey - fh * 0.11
    brow_w = fw * 0.13
    brow_t = fw * 0.045
    my = cy + fh * 0.27
    mw = fw * rng.uniform(0.2, 0.25)
    look = rng.uniform(-1, 1)
    sclera = gray(min(255, skin_v + 35))

    if label == "Surprise":
        ry = fw * 0.085
        rx = fw * 0.095
        brow_y = ey - fh * 0.19
    if label == "Happy":
        ry = fw * 0.045
    if label == "Angry":
        ry = fw * 0.045
        brow_y = ey - fh * 0.085
    draw_eyes(c, cx, ey, dx, rx, ry, sclera, dark, look)
    if label == "Happy":  # lower lids pushed up by the cheeks
        for side in (-1, 1):
            x = cx + side * dx
            c.chord((x - rx * 1.3, ey + ry * 0.2, x + rx * 1.3, ey + ry * 2.6), 180, 360, fill=skin)

    # brows: (inner end, outer end) heights relative to brow_y
    inner, outer, arch = {
        "Angry": (fh * 0.06, -fh * 0.045, 0),
        "Sad": (-fh * 0.05, fh * 0.035, 0),
        "Surprise": (0, fh * 0.02, -fh * 0.05),
        "Happy": (0, fh * 0.01, -fh * 0.025),
        "Neutral": (0, 0, -fh * 0.005),
    }[label]
    for side in (-1, 1):
        xi = cx + side * (dx - brow_w)
        xo = cx + side * (dx + brow_w)
        xm = (xi + xo) / 2
        c.line([xi, brow_y + inner, xm, brow_y + (inner + outer) / 2 + arch, xo, brow_y + outer],
               fill=shade(hair, 0.7), width=brow_t)

    # nose
    ny = cy + fh * 0.11
    c.line([cx - fw * 0.01, ey + fh * 0.02, cx - fw * 0.04, ny, cx + fw * 0.03, ny + fh * 0.01],
           fill=gray(skin_v * 0.7), width=1.2)

    lip = gray(skin_v * 0.45)
    if label == "Happy":
        for side in (-1, 1):  # raised cheeks
            x = cx + side * fw * 0.27
            c.ellipse((x - fw * 0.09, my - fh * 0.13, x + fw * 0.09, my - fh * 0.03), fill=gray(min(255, skin_v + 18)))
        c.chord((cx - mw * 1.25, my - fh * 0.12, cx + mw * 1.25, my + fh * 0.1), 0, 180, fill=dark)
        c.chord((cx - mw * 1.05, my - fh * 0.12 + 2, cx + mw * 1.05, my - fh * 0.02), 0, 180, fill=gray(235))
        c.arc((cx - mw * 1.25, my - fh * 0.12, cx + mw * 1.25, my + fh * 0.1), 0, 180, fill=lip, width=1.5)
        for side in (-1, 1):  # smile lines
            x = cx + side * mw * 1.35
            c.line([x, my - fh * 0.08, x + side * fw * 0.02, my - fh * 0.02], fill=gray(skin_v * 0.8), width=1)
    elif label == "Sad":
        c.line(curve(cx - mw, cx + mw, my + fh * 0.03, -fh * 0.065), fill=lip, width=fw * 0.035)
    elif label == "Surprise":
        c.ellipse((cx - mw * 0.6, my - fh * 0.07, cx + mw * 0.6, my + fh * 0.11), fill=dark, outline=lip, width=1.5)
    elif label == "Angry":
        c.line([cx - mw * 0.85, my + fh * 0.015, cx, my, cx + mw * 0.85, my + fh * 0.015], fill=lip, width=fw * 0.045)
        for side in (-1, 1):  # furrow between the brows
            c.line([cx + side * fw * 0.025, brow_y - fh * 0.01, cx + side * fw * 0.015, brow_y + fh * 0.06],
                   fill=gray(skin_v * 0.75), width=1)
    else:  # Neutral
        c.line([cx - mw, my, cx + mw, my], fill=lip, width=fw * 0.03)
    return c.result()


MASK_COLORS = [(120, 180, 225), (235, 238, 240), (45, 48, 55), (110, 190, 170), (150, 200, 240)]
SKINS = [(241, 194, 160), (224, 172, 125), (198, 134, 90), (141, 85, 56), (255, 219, 188), (170, 110, 75)]
HAIRS = [(35, 25, 20), (90, 60, 35), (160, 120, 60), (20, 20, 25), (120, 110, 105)]
BACKGROUNDS = [(70, 110, 160), (200, 205, 190), (160, 90, 80), (90, 140, 90), (230, 220, 200), (60, 60, 80)]
SHIRTS = [(180, 40, 50), (40, 80, 150), (60, 60, 60), (220, 180, 60), (90, 150, 90)]


def mask_face(with_mask, rng):
    """One colour face, with or without a surgical mask."""
    background = rng.choice(BACKGROUNDS)
    skin = rng.choice(SKINS)
    hair = rng.choice(HAIRS)
    c = Canvas(MASK_SIZE, background)
    cx, cy, fw, fh = face_geometry(rng, MASK_SIZE, (0.72, 0.84))
    left, top, right, bottom = cx - fw / 2, cy - fh / 2, cx + fw / 2, cy + fh / 2
    w, h = MASK_SIZE

    c.chord((cx - fw * 1.1, bottom - fh * 0.05, cx + fw * 1.1, bottom + fh * 0.9), 180, 360, fill=rng.choice(SHIRTS))
    c.polygon([cx - fw * 0.2, cy, cx + fw * 0.2, cy, cx + fw * 0.22, bottom + fh * 0.08, cx - fw * 0.22,
               bottom + fh * 0.08], fill=shade(skin, 0.85))
    c.ellipse((left - fw * 0.07, top - fh * 0.07, right + fw * 0.07, cy + fh * 0.2), fill=hair)
    for side in (-1, 1):
        ex = cx + side * fw * 0.5
        c.ellipse((ex - fw * 0.07, cy - fh * 0.06, ex + fw * 0.07, cy + fh * 0.1), fill=shade(skin, 0.92))
    c.ellipse((left, top, right, bottom), fill=skin)
    c.chord((left, top - fh * 0.02, right, top + fh * 0.45), 180, 360, fill=hair)

    ey = cy - fh * 0.07
    dx = fw * 0.21
    draw_eyes(c, cx, ey, dx, fw * 0.09, fw * 0.05, (250, 250, 250), (50, 35, 25), rng.uniform(-1, 1))
    for side in (-1, 1):
        x = cx + side * dx
        c.line([x - fw * 0.11, ey - fh * 0.1, x, ey - fh * 0.12, x + fw * 0.11, ey - fh * 0.1],
               fill=shade(hair, 0.9), width=fw * 0.035)
    ny = cy + fh * 0.11
    my = cy + fh * 0.27
    mw = fw * 0.2
    c.line([cx - fw * 0.01, ey + fh * 0.02, cx - fw * 0.04, ny, cx + fw * 0.03, ny + fh * 0.01],
           fill=shade(skin, 0.7), width=1.2)
    mouth = rng.choice(["smile", "straight", "open"])
    lip = shade(skin, 0.55)
    if mouth == "smile":
        c.line(curve(cx - mw, cx + mw, my - fh * 0.02, fh * 0.05), fill=lip, width=fw * 0.03)
    elif mouth == "straight":
        c.line([cx - mw, my, cx + mw, my], fill=lip, width=fw * 0.03)
    else:
        c.chord((cx - mw, my - fh * 0.05, cx + mw, my + fh * 0.07), 0, 180, fill=(90, 30, 35))

    if with_mask:
        color = rng.choice(MASK_COLORS)
        edge = shade(color, 0.8)
        mt, mb = cy + fh * 0.0, bottom - fh * 0.04
        ml, mr = left + fw * 0.06, right - fw * 0.06
        for side in (-1, 1):  # ear loops
            x = cx + side * fw * 0.5
            c.line([cx + side * fw * 0.44, mt + fh * 0.04, x, cy - fh * 0.02], fill=(245, 245, 245), width=1.2)
            c.line([cx + side * fw * 0.44, mb - fh * 0.08, x, cy + fh * 0.08], fill=(245, 245, 245), width=1.2)
        c.polygon([ml, mt + fh * 0.05, cx, mt - fh * 0.02, mr, mt + fh * 0.05,
                   mr - fw * 0.02, mb - fh * 0.08, cx, mb, ml + fw * 0.02, mb - fh * 0.08],
                  fill=color, outline=edge, width=1)
        for k in (1, 2, 3):  # pleats
            y = mt + (mb - mt) * k / 4.3
            c.line([ml + fw * 0.04, y, mr - fw * 0.04, y], fill=edge, width=0.8)
    return c.result()


def save(image, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if path.endswith(".jpg"):
        image.save(path, "JPEG", quality=88, optimize=True)
    else:
        image.save(path, "PNG", optimize=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    out = parser.parse_args().out
    for ci, label in enumerate(EMOTIONS):
        for n in range(1, FACES_PER_EMOTION + 1):
            rng = random.Random(SEED * 1000 + ci * 100 + n)
            save(emotion_face(label, rng), os.path.join(out, "Faces", label, f"face_{n}.png"))
    for ci, label in enumerate(["With Mask", "Without Mask"]):
        for n in range(1, MASKS_PER_CLASS + 1):
            rng = random.Random(SEED * 1000 + 900 + ci * 100 + n)
            ext = "jpg" if n == MASKS_PER_CLASS else "png"
            save(mask_face(label == "With Mask", rng), os.path.join(out, "Masks", label, f"face_{n}.{ext}"))
    # the emotion faces are gray: check the channels really are equal
    for label in EMOTIONS:
        for n in range(1, FACES_PER_EMOTION + 1):
            a = np.asarray(Image.open(os.path.join(out, "Faces", label, f"face_{n}.png")))
            assert (a[..., 0] == a[..., 1]).all() and (a[..., 1] == a[..., 2]).all(), (label, n)


if __name__ == "__main__":
    main()
