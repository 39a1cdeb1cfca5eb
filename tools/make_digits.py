#!/usr/bin/env python3
"""scikit-learn's digits (1,797 8x8 grey images of the digits 0-9, shipped inside the package)
as a `tandem train --data` folder:

    .venv/bin/python tools/make_digits.py OUT_DIR [--test-size 360] [--seed 0]

OUT_DIR/train/{x,y}.npy and OUT_DIR/test/{x,y}.npy: x float32 [N, 1, 8, 8] scaled to [0, 1]
(the pixels are 0..16), y int64 [N] the digit. The split is stratified by class and seeded, so
the same arguments always give the same bytes (1,437 train / 360 test by default).
Nothing is downloaded: load_digits reads the copy inside scikit-learn.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np


def digits_split(test_size: int = 360, seed: int = 0):
    """(x_train, y_train, x_test, y_test): a stratified split, the same for the same arguments."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.images.astype(np.float32) / np.float32(16.0)).reshape(-1, 1, 8, 8)
    y = digits.target.astype(np.int64)
    if not 0 < test_size < len(y):
        raise ValueError(f"--test-size must be between 1 and {len(y) - 1}, not {test_size}")
    rng = np.random.default_rng(seed)
    # Per class, the test share in proportion to the class's size (largest remainders fill the
    # rounding), then each split shuffled with the same generator.
    classes, counts = np.unique(y, return_counts=True)
    exact = counts * test_size / len(y)
    share = np.floor(exact).astype(int)
    for c in np.argsort(-(exact - share), kind="stable")[: test_size - share.sum()]:
        share[c] += 1
    test_idx, train_idx = [], []
    for c, k in zip(classes, share):
        idx = rng.permutation(np.flatnonzero(y == c))
        test_idx.append(idx[:k])
        train_idx.append(idx[k:])
    train_idx = rng.permutation(np.concatenate(train_idx))
    test_idx = rng.permutation(np.concatenate(test_idx))
    return (np.ascontiguousarray(x[train_idx]), np.ascontiguousarray(y[train_idx]),
            np.ascontiguousarray(x[test_idx]), np.ascontiguousarray(y[test_idx]))


def write_digits(out_dir: str, test_size: int = 360, seed: int = 0) -> dict:
    x_train, y_train, x_test, y_test = digits_split(test_size, seed)
    written = {}
    for split, x, y in (("train", x_train, y_train), ("test", x_test, y_test)):
        folder = os.path.join(out_dir, split)
        os.makedirs(folder, exist_ok=True)
        np.save(os.path.join(folder, "x.npy"), x)
        np.save(os.path.join(folder, "y.npy"), y)
        written[split] = (x.shape, np.bincount(y, minlength=10))
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--test-size", type=int, default=360, help="images in test/ (default 360)")
    ap.add_argument("--seed", type=int, default=0, help="the split's seed (default 0)")
    args = ap.parse_args(argv)
    try:
        written = write_digits(args.out_dir, args.test_size, args.seed)
    except ValueError as e:
        print(f"make_digits: {e}", file=sys.stderr)
        return 2
    for split, (shape, per_class) in written.items():
        print(f"{os.path.join(args.out_dir, split)}/x.npy float32 {list(shape)}, y.npy int64 "
              f"[{shape[0]}]; per class {per_class.tolist()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
