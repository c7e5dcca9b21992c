#!/usr/bin/env python3
"""Small PNG/JPEG fixtures and what Pillow makes of them, for the image-input tests.

Run in a venv with Samples/requirements-images.txt (Pillow 11.3.0, h5py, numpy):

    python Samples/make_image_fixtures.py --out Samples/Fixtures/images

Writes seeded images and `expected.h5`:
- `decoded/<file>`: uint8 [H, W, 3], the upright RGB pixels (Pillow's decoding, `ImageOps.exif_transpose`;
  for RGBA files, whose alpha is only 0 or 255, transparent pixels are black);
- `fitted/<file>/<center|fit|fill>`: uint8 [H, W, 3] for the size in attribute `size` (W, H): Pillow's
  antialiased BILINEAR `resize` of the upright image (center: the centred box of the target aspect ratio;
  fit: the whole image scaled to fit, rounded half up, centred on black; fill: the whole image);
- `gray/<file>`: uint8 [H, W], Pillow's `convert("L")` (ITU-R BT.601 luma) of the upright image.
Bad files: `truncated.png`, `truncated.jpg`, `giant.png` (a 100000 x 100000 header), `animation.gif`,
`empty.png`, `text.jpg`.
"""

import argparse
import io
import math
import os
import struct
import zlib

import h5py
import numpy as np
from PIL import Image, ImageOps

SIZES = {"center": (16, 16), "fit": (16, 16), "fill": (12, 20)}


def pattern(width, height, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    r = (x * 255 // max(1, width - 1))
    g = (y * 255 // max(1, height - 1))
    b = ((x // 4 + y // 4) % 2) * 200 + rng.integers(0, 55, size=(height, width))
    return np.stack([r, g, b], axis=-1).astype(np.uint8)


def fitted(image, option):
    width, height = SIZES[option]
    w, h = image.size
    if option == "fill":
        return image.resize((width, height), Image.BILINEAR)
    if option == "center":
        scale = max(width / w, height / h)
        cw, ch = width / scale, height / scale
        box = ((w - cw) / 2, (h - ch) / 2, (w - cw) / 2 + cw, (h - ch) / 2 + ch)
        return image.resize((width, height), Image.BILINEAR, box=box)
    scale = min(width / w, height / h)
    fw = min(width, max(1, math.floor(w * scale + 0.5)))
    fh = min(height, max(1, math.floor(h * scale + 0.5)))
    canvas = Image.new("RGB", (width, height))
    canvas.paste(image.resize((fw, fh), Image.BILINEAR), ((width - fw) // 2, (height - fh) // 2))
    return canvas


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    out = parser.parse_args().out
    os.makedirs(out, exist_ok=True)
    files = {}

    base = Image.fromarray(pattern(37, 23, 1))
    base.save(os.path.join(out, "landscape.png"))
    files["landscape.png"] = base
    tall = Image.fromarray(pattern(19, 41, 2))
    tall.save(os.path.join(out, "portrait.jpg"), quality=92)
    files["portrait.jpg"] = None
    gray = Image.fromarray(pattern(21, 17, 3)[..., 0]).convert("L")
    gray.save(os.path.join(out, "gray.png"))
    files["gray.png"] = None
    base.quantize(16).save(os.path.join(out, "palette.png"))
    files["palette.png"] = None
    rgba = np.concatenate([pattern(15, 13, 4), np.full((13, 15, 1), 255, np.uint8)], axis=-1)
    rgba[:, :5, 3] = 0
    Image.fromarray(rgba, "RGBA").save(os.path.join(out, "alpha.png"))
    files["alpha.png"] = None
    small = Image.fromarray(pattern(9, 6, 5))
    for orientation in range(1, 9):
        exif = Image.Exif()
        exif[0x0112] = orientation
        name = f"orientation{orientation}.jpg"
        small.save(os.path.join(out, name), quality=95, exif=exif)
        files[name] = None
    exif = Image.Exif()
    exif[0x0112] = 6
    small.save(os.path.join(out, "orientation6.png"), exif=exif)
    files["orientation6.png"] = None

    with h5py.File(os.path.join(out, "expected.h5"), "w") as h5:
        h5.attrs["pillow_version"] = Image.__version__ if hasattr(Image, "__version__") else __import__("PIL").__version__
        for name in sorted(files):
            image = Image.open(os.path.join(out, name))
            image = ImageOps.exif_transpose(image)
            if image.mode == "RGBA":
                array = np.asarray(image)
                rgb = array[..., :3] * (array[..., 3:] == 255)
                image = Image.fromarray(rgb.astype(np.uint8))
            image = image.convert("RGB")
            h5[f"decoded/{name}"] = np.asarray(image)
            h5[f"gray/{name}"] = np.asarray(image.convert("L"))
            for option in SIZES:
                data = h5.create_dataset(f"fitted/{name}/{option}", data=np.asarray(fitted(image, option)))
                data.attrs["size"] = SIZES[option]

    png = io.BytesIO()
    base.save(png, format="PNG")
    with open(os.path.join(out, "truncated.png"), "wb") as f:
        f.write(png.getvalue()[: len(png.getvalue()) // 2])
    jpg = open(os.path.join(out, "portrait.jpg"), "rb").read()
    with open(os.path.join(out, "truncated.jpg"), "wb") as f:
        f.write(jpg[:200])
    header = struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\0" * 64)
    with open(os.path.join(out, "giant.png"), "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", header) + png_chunk(b"IDAT", idat) + png_chunk(b"IEND", b""))
    base.save(os.path.join(out, "animation.gif"))
    open(os.path.join(out, "empty.png"), "wb").close()
    with open(os.path.join(out, "text.jpg"), "w") as f:
        f.write("not an image\n")


if __name__ == "__main__":
    main()
