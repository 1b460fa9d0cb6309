"""Writes uniform random n x n Matrix Market files for SpMV/SpMM sweeps on the GPU machine
(which has numpy; this machine has not): k distinct columns a row, one in each band of n/k
columns, values uniform in [-1, 1), seed 7. Used by benches/NOTES.md session 68:
    python3 benches/uniform_mtx.py /tmp/mtx
    .bin/wgsparse-bench --ops spmv --mtx /tmp/mtx/*.mtx --peer cusparse
"""
import os
import sys

import numpy as np

SHAPES = [(n, k) for n in (1024, 4096, 16384, 65536) for k in (4, 12, 24, 48)] + [(262144, 4), (262144, 12)]


def main(out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    for n, k in SHAPES:
        step = n // k
        base = rng.integers(0, n, size=(n, 1))
        cols = (base + np.arange(k)[None, :] * step + rng.integers(0, step, size=(n, k))) % n
        rows = np.repeat(np.arange(n), k)
        vals = rng.uniform(-1, 1, size=n * k)
        with open(f"{out}/u{n}_{k}.mtx", "w") as f:
            f.write("%%MatrixMarket matrix coordinate real general\n")
            f.write(f"{n} {n} {n * k}\n")
            np.savetxt(f, np.column_stack([rows + 1, cols.reshape(-1) + 1, vals]), fmt="%d %d %.6f")


if __name__ == "__main__":
    main(sys.argv[1])
