"""Selections by a batched mask whose count differs per example (``x[m]``), kept vectorised,
against the plain loop, the whole-function rerun they replace, and hand-vectorised NumPy.

Each workload is an unchanged per-example function of the kind real code is full of. Methods,
interleaved in one run, medians of repeats, ratios to the loop within the run only:

- ``loop``: ``np.stack([f(x) for x in xs])``;
- ``bt.vmap``: the ragged selection, vectorised (``fallback="error"``: no rerun);
- ``rerun``: what ``bt.vmap`` did before, once per example (the rerun alone);
- ``numpy``: the same computation written by hand for the batch (``np.where``, ``where=``).

    python bench/ragged.py [--batch 1000] [--size 64] [--repeat 15] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import batchtensor as bt  # noqa: E402
from dispatch import against_the_loop  # noqa: E402
from rerun import _rerun_only  # noqa: E402


def piecewise(x):
    y = np.zeros_like(x)
    m = x > 0
    y[m] = np.exp(-x[m]) + 1
    y[~m] = x[~m] ** 2
    return y


def piecewise_numpy(xs):
    return np.where(xs > 0, np.exp(-np.abs(xs)) + 1, xs ** 2)


def damp_negatives(x):
    y = x.copy()
    y[y < 0] *= 0.1
    return y


def damp_negatives_numpy(xs):
    return np.where(xs < 0, xs * 0.1, xs)


def mean_std_of_positives(x):
    p = x[x > 0]
    return np.stack([p.mean(), p.std()])


def mean_std_of_positives_numpy(xs):
    m = xs > 0
    return np.stack([xs.mean(axis=1, where=m), xs.std(axis=1, where=m)], axis=1)


def median_of_positives(x):
    return np.median(x[x > 0])


def median_of_positives_numpy(xs):
    return np.nanmedian(np.where(xs > 0, xs, np.nan), axis=1)


WORKLOADS = {
    "y[m] = g(x[m]); y[~m] = h(x[~m])": (piecewise, piecewise_numpy),
    "y[y < 0] *= a": (damp_negatives, damp_negatives_numpy),
    "mean and std of x[x > 0]": (mean_std_of_positives, mean_std_of_positives_numpy),
    "np.median(x[x > 0])": (median_of_positives, median_of_positives_numpy),
}


def measure(batch: int, size: int, repeat: int) -> dict:
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(batch, size))
    results = {}
    for name, (f, by_hand) in WORKLOADS.items():
        vf = bt.vmap(f, fallback="error")
        want = np.stack([f(x) for x in xs])
        for got in (vf(xs), _rerun_only(f, xs), by_hand(xs)):  # correct before timed
            np.testing.assert_allclose(got, want, rtol=1e-12)
        methods = {"loop": lambda: np.stack([f(x) for x in xs]), "bt.vmap": lambda: vf(xs),
                   "rerun": lambda: _rerun_only(f, xs), "numpy": lambda: by_hand(xs)}
        results[name] = against_the_loop(methods, repeat)
    return results


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--json", metavar="FILE")
    a = p.parse_args(argv)
    r = measure(a.batch, a.size, a.repeat)
    print(f"batch {a.batch}, {a.size} elements per example, medians of {a.repeat} interleaved "
          f"repeats; time (ratio to the loop)\n")
    print("| workload | loop | bt.vmap | rerun | hand-vectorised NumPy |")
    print("|---|---|---|---|---|")
    for name, v in r.items():
        m, q = v["median_s"], v["ratio"]
        cells = " | ".join(f"{m[k] * 1e3:.2f} ms ({q[k]:.3f}×)"
                           for k in ("loop", "bt.vmap", "rerun", "numpy"))
        print(f"| {name} | {cells} |")
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
