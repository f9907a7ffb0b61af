"""SciPy's functions under bt.vmap (the rules of batchtensor/rules/scipy_*.py) against a
plain Python loop, and what the interception costs a vmap call.

Methods per workload, interleaved in one run, medians of repeats, ratios within the run only:

- ``loop``: ``np.stack([f(x) for x in xs])``, the reference;
- ``bt.vmap``: one call of the SciPy function on the whole batch (the rule).

Each sample is the best of three calls (the development machine is shared and noisy).

The fixed cost: ``bt.vmap`` of a one-op function on a tiny batch with and without SciPy's
interceptions (each open and close of an outermost level switches the class of SciPy's public
modules and replaces names in the modules that call them), and the one-time cost of loading
the rules at the first vmap after SciPy's import.

    python bench/foreign.py [--repeat 15] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import batchtensor as bt  # noqa: E402
from dispatch import timeit  # noqa: E402


def call_overhead_us(repeat: int) -> dict:
    """Microseconds per ``bt.vmap(np.negative)`` call on a (4, 3) batch, with NumPy's names
    swapped in and out only and with SciPy's interceptions too, interleaved (the swap list
    toggled in one process: before/after SciPy's import differ by more than the effect)."""
    from batchtensor import conversions  # noqa: PLC0415

    vf, xs = bt.vmap(np.negative), np.ones((4, 3))
    vf(xs)
    every = list(conversions._swaps)
    variants = {"vmap call, NumPy's names only (us)": every[:1],
                "vmap call, SciPy's interceptions too (us)": every}
    samples: dict = {k: [] for k in variants}
    try:
        for _ in range(repeat):
            for k, swaps in variants.items():
                conversions._swaps[:] = swaps
                samples[k].append(1e6 * min(timeit(lambda: vf(xs), 2000) for _ in range(3)))
    finally:
        conversions._swaps[:] = every
    return {k: statistics.median(v) for k, v in samples.items()}


def workloads(rng):
    from scipy import ndimage, signal, special, stats  # noqa: PLC0415

    sos = signal.butter(4, 0.1, output="sos")
    b, a = signal.butter(4, 0.1)
    return {
        "signal.lfilter (256 x 1000, order 4)":
            (lambda x: signal.lfilter(b, a, x), rng.normal(size=(256, 1000))),
        "signal.sosfiltfilt (256 x 1000)":
            (lambda x: signal.sosfiltfilt(sos, x), rng.normal(size=(256, 1000))),
        "ndimage.gaussian_filter (64 x 64 x 64, sigma 2)":
            (lambda x: ndimage.gaussian_filter(x, 2.0), rng.normal(size=(64, 64, 64))),
        "ndimage.median_filter (64 x 32 x 32, size 3)":
            (lambda x: ndimage.median_filter(x, 3), rng.normal(size=(64, 32, 32))),
        "special.logsumexp (1024 x 100)":
            (lambda x: special.logsumexp(x), rng.normal(size=(1024, 100))),
        "stats.zscore (1024 x 100)":
            (lambda x: stats.zscore(x), rng.normal(size=(1024, 100))),
        "stats.skew (1024 x 100)":
            (lambda x: stats.skew(x), rng.normal(size=(1024, 100))),
    }


def measure(repeat: int) -> dict:
    t0 = time.perf_counter()
    import scipy.ndimage, scipy.signal, scipy.special, scipy.stats  # noqa: E401, F401, PLC0415
    import_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    bt.vmap(np.negative)(np.ones((2, 2)))  # the first level loads and installs the rules
    load_s = time.perf_counter() - t0
    results = {"fixed": {**call_overhead_us(repeat),
                         "import scipy.signal/ndimage/special/stats (s)": import_s,
                         "loading the rules at the first vmap (s)": load_s}}
    for name, (f, xs) in workloads(np.random.default_rng(0)).items():
        vf = bt.vmap(f)
        want = np.stack([f(x) for x in xs])
        with bt.config(fallback="error"):  # a rule, not a fallback, and correct
            np.testing.assert_allclose(vf(xs), want, rtol=1e-9, atol=1e-12)
        methods = {"loop": lambda: np.stack([f(x) for x in xs]), "bt.vmap": lambda: vf(xs)}
        samples = {k: [] for k in methods}
        for _ in range(repeat):
            for k, fn in methods.items():
                samples[k].append(min(timeit(fn, 1) for _ in range(3)))
        med = {k: statistics.median(v) for k, v in samples.items()}
        results[name] = {"median_s": med, "speed-up": med["loop"] / med["bt.vmap"]}
    return results


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--json", metavar="FILE")
    a = p.parse_args(argv)
    r = measure(a.repeat)
    fixed = r.pop("fixed")
    print(f"medians of {a.repeat} interleaved repeats\n")
    print("| workload | loop | bt.vmap | speed-up |")
    print("|---|---|---|---|")
    for name, v in r.items():
        m = v["median_s"]
        print(f"| {name} | {m['loop'] * 1e3:.2f} ms | {m['bt.vmap'] * 1e3:.2f} ms | "
              f"{v['speed-up']:.1f}x |")
    print()
    for k, v in fixed.items():
        print(f"- {k}: {v:.3g}")
    if a.json:
        Path(a.json).write_text(json.dumps({**r, "fixed": fixed}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
