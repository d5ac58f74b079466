#!/usr/bin/env python3
"""The fine-tuning example's new task: Fashion-MNIST's footwear (sandal, sneaker, ankle boot),
three classes cut from its test images, written as NumPy arrays that the engine reads
("format": "npy"):

    shoes/x.npy   uint8 [N, 1, 28, 28], the images' pixels 0..255
    shoes/y.npy   int64 [N], 0 sandal, 1 sneaker, 2 ankle boot

The pretraining sweep (pretrain.json) trains on the training images only, so these images are
new to the model it registers. Standard library only (no NumPy needed to write the files).

    make_data.py OUT_DIR [FASHION_MNIST_DIR]   (default $TUNER_FASHION_MNIST_DIR, else
                                                /usr/share/datasets/fashion-mnist)
"""
import gzip
import os
import struct
import sys

CLASSES = {5: 0, 7: 1, 9: 2}  # Fashion-MNIST's sandal, sneaker, ankle boot


def npy(path, descr, shape, data):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join(f"{d}, " for d in shape))
    header += " " * (63 - (10 + len(header)) % 64) + "\n"  # the data starts 64-byte aligned
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(data)


def main():
    out = sys.argv[1]
    src = sys.argv[2] if len(sys.argv) > 2 else os.environ.get(
        "TUNER_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
    with gzip.open(os.path.join(src, "t10k-images-idx3-ubyte.gz")) as f:
        magic, n, rows, cols = struct.unpack(">IIII", f.read(16))
        assert magic == 0x803 and (rows, cols) == (28, 28), (magic, rows, cols)
        images = f.read(n * rows * cols)
    with gzip.open(os.path.join(src, "t10k-labels-idx1-ubyte.gz")) as f:
        magic, n_labels = struct.unpack(">II", f.read(8))
        assert magic == 0x801 and n_labels == n, (magic, n_labels)
        labels = f.read(n)
    keep = [i for i in range(n) if labels[i] in CLASSES]
    os.makedirs(os.path.join(out, "shoes"), exist_ok=True)
    x = b"".join(images[i * 784:(i + 1) * 784] for i in keep)
    y = b"".join(struct.pack("<q", CLASSES[labels[i]]) for i in keep)
    npy(os.path.join(out, "shoes", "x.npy"), "|u1", (len(keep), 1, 28, 28), x)
    npy(os.path.join(out, "shoes", "y.npy"), "<i8", (len(keep),), y)
    print(f"wrote {len(keep)} images of 3 classes to {os.path.join(out, 'shoes')}")


if __name__ == "__main__":
    main()
