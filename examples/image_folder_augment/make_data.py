#!/usr/bin/env python3
"""The image-folder example's data: small RGB PNG images of three classes, a stripe across a
noisy background, laid out as torchvision's ImageFolder (one sub-folder per class):

    stripes/horizontal/*.png, stripes/vertical/*.png, stripes/diagonal/*.png   (training)
    check/<class>/*.png                                                        (new images)
    check.npy         float32 [N, 3, 16, 16], the check images as the engine decodes them
                      (values in [0, 1], channels first): `tuner predict` takes it
    check_labels.npy  int64 [N], their classes (0 diagonal, 1 horizontal, 2 vertical: the
                      sorted folder names)

The stripe's place and color vary, so a shifted or mirrored image is still of its class, which
is what random_crop and flip teach the model. Standard library only.

    make_data.py OUT_DIR [TRAIN_PER_CLASS]   (default 30)
"""
import os
import random
import struct
import sys
import zlib

SIZE = 16
CLASSES = ["diagonal", "horizontal", "vertical"]  # sorted: class i is CLASSES[i]


def png(path, pixels):
    """Writes rows of (r, g, b) as an 8-bit RGB PNG."""
    raw = b"".join(b"\x00" + bytes(v for p in row for v in p) for row in pixels)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", len(pixels[0]), len(pixels), 8, 2, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
                + chunk(b"IEND", b""))


def image(cls, rng):
    pixels = [[tuple(rng.randrange(0, 90) for _ in range(3)) for _ in range(SIZE)]
              for _ in range(SIZE)]
    color = tuple(rng.randrange(160, 256) for _ in range(3))
    at = rng.randrange(2, SIZE - 3)
    for i in range(SIZE):
        for w in range(2):
            y, x = {"horizontal": (at + w, i), "vertical": (i, at + w),
                    "diagonal": (i, (i + at + w) % SIZE)}[cls]
            pixels[y][x] = color
    return pixels


def npy(path, descr, shape, data):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join(f"{d}, " for d in shape))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data)


def main():
    out = sys.argv[1]
    per_class = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    rng = random.Random(1)
    values, labels = [], []
    for folder, count in (("stripes", per_class), ("check", 8)):
        for label, cls in enumerate(CLASSES):
            os.makedirs(os.path.join(out, folder, cls), exist_ok=True)
            for i in range(count):
                pixels = image(cls, rng)
                png(os.path.join(out, folder, cls, f"{i:03d}.png"), pixels)
                if folder == "check":
                    values += [pixels[y][x][c] / 255.0
                               for c in range(3) for y in range(SIZE) for x in range(SIZE)]
                    labels.append(label)
    npy(os.path.join(out, "check.npy"), "<f4", (len(labels), 3, SIZE, SIZE),
        struct.pack(f"<{len(values)}f", *values))
    npy(os.path.join(out, "check_labels.npy"), "<i8", (len(labels),),
        struct.pack(f"<{len(labels)}q", *labels))


if __name__ == "__main__":
    main()
