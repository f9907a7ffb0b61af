"""Plain NumPy randomness inside a vmapped function, against the per-example loop.

Each workload draws from NumPy (its global state, a Generator passed in, one made inside the
function) under ``randomness="different"``; ``bt.vmap`` draws the loop's numbers exactly, which
is checked before anything is timed. Methods, interleaved in one run, medians of repeats,
ratios within the run only:

- ``loop``: ``np.stack([f(x) for x in xs])`` from the same state, the reference;
- ``bt.vmap``: as users call it (the first pass keeps the states a rerun would rewind to);
- ``bt.vmap fallback='error'``: no rerun possible, so no state is kept (the cost of keeping
  NumPy's global MT19937 state, about 0.1 ms, shows as the difference);
- ``by hand``: the same numbers drawn in one NumPy call over the batch, where one exists.

    python bench/random_numpy.py [--batch 1000] [--repeat 15] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import batchtensor as bt  # noqa: E402
from dispatch import against_the_loop  # noqa: E402

SHAPE = (16,)


def noise(x):
    return x + np.random.normal(size=x.shape)


def noise_loc(x):
    return np.random.normal(loc=x, scale=0.1)


def noise_arg(x, rng):
    return x + rng.normal(size=x.shape)


def small_ints(x):
    """int8 draws: NumPy's buffered small integers are not one stream, so one call per
    example inside the vectorised pass."""
    return x + np.random.randint(0, 10, size=x.shape, dtype=np.int8)


def two_draws(x):
    """Two draws from the global state: only a rerun per example draws the loop's numbers."""
    return x + np.random.normal(size=x.shape) * np.random.uniform(size=x.shape)


def seeded_loc(x):
    """A generator seeded inside f with batched parameters: one per example (copies)."""
    return np.random.default_rng(0).normal(loc=x)


def from_seed(s):
    """vmap over seeds: one generator per example, one call per example."""
    return np.random.default_rng(s).normal(size=SHAPE)


WORKLOADS = {
    "x + np.random.normal(size)": (noise, "global",
                                   lambda xs: xs + np.random.normal(size=xs.shape)),
    "np.random.normal(loc=x)": (noise_loc, "global",
                                lambda xs: np.random.normal(loc=xs, scale=0.1)),
    "x + rng.normal(size), rng passed in": (noise_arg, "generator",
                                            lambda xs, g: xs + g.normal(size=xs.shape)),
    "np.random.randint(int8)": (small_ints, "global", None),
    "two draws (a rerun)": (two_draws, "global", None),
    "default_rng(0).normal(loc=x)": (seeded_loc, "none", None),
    "default_rng(seed).normal() over seeds": (from_seed, "seeds", None),
}


def _methods(f, kind, hand, xs):
    """Callables returning the workload's result from a freshly seeded state."""
    if kind == "global":
        def seeded(fn):
            return lambda: (np.random.seed(1), fn())[1]
        v, ve = (bt.vmap(f, randomness="different", fallback=fb) for fb in ("silent", "error"))
        methods = {"loop": seeded(lambda: np.stack([f(x) for x in xs])),
                   "bt.vmap": seeded(lambda: v(xs))}
        if f is not two_draws:
            methods["bt.vmap fallback='error'"] = seeded(lambda: ve(xs))
        if hand is not None:
            methods["by hand"] = seeded(lambda: hand(xs))
        return methods
    if kind == "generator":
        v, ve = (bt.vmap(f, in_axes=(0, None), randomness="different", fallback=fb)
                 for fb in ("silent", "error"))
        g = np.random.default_rng
        return {"loop": lambda: np.stack([f(x, r) for r in [g(1)] for x in xs]),
                "bt.vmap": lambda: v(xs, g(1)),
                "bt.vmap fallback='error'": lambda: ve(xs, g(1)),
                "by hand": lambda: hand(xs, g(1))}
    v, ve = (bt.vmap(f, randomness="different", fallback=fb) for fb in ("silent", "error"))
    data = np.arange(len(xs)) if kind == "seeds" else xs
    return {"loop": lambda: np.stack([f(x) for x in data]),
            "bt.vmap": lambda: v(data), "bt.vmap fallback='error'": lambda: ve(data)}


def checked(batch: int) -> dict:
    """Every workload's methods, each checked to give the loop's numbers exactly."""
    xs = np.random.default_rng(0).normal(size=(batch,) + SHAPE)
    out = {}
    for name, (f, kind, hand) in WORKLOADS.items():
        methods = _methods(f, kind, hand, xs)
        want = methods["loop"]()
        for k, fn in methods.items():
            np.testing.assert_array_equal(fn(), want, err_msg=f"{name}: {k}")
        out[name] = methods
    return out


def measure(batch: int, repeat: int) -> dict:
    results = {}
    for name, methods in checked(batch).items():  # the loop's numbers before any timing
        results[name] = against_the_loop(methods, repeat)
    return results


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--json", metavar="FILE")
    a = p.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        r = measure(a.batch, a.repeat)
    cols = ["loop", "bt.vmap", "bt.vmap fallback='error'", "by hand"]
    print(f"batch {a.batch}, examples of shape {SHAPE}, medians of {a.repeat} interleaved "
          f"repeats; time (ratio to the loop)\n")
    print("| workload | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for name, v in r.items():
        m, q = v["median_s"], v["ratio"]
        cells = [f"{m[c] * 1e3:.3f} ms ({q[c]:.2f}×)" if c in m else "" for c in cols]
        print(f"| {name} | " + " | ".join(cells) + " |")
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
