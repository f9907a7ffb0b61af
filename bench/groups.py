"""Examples that branch differently: vmap's groups against the loop, np.vectorize and NumPy.

Two per-example functions whose Python ``while`` / ``if`` the examples answer differently, at
batch 10,000 (``--batch``):

- an iterative solver (Newton's square root to a relative tolerance) whose examples converge
  after one of about ten step counts: ``bt.vmap`` runs the function again on each group of
  examples that agree (``VmapFunction._split``); a group's pass goes on with the examples that
  keep iterating and leaves each group that stops for a pass of its own, about eleven
  vectorised passes in all;
- a function where every example takes a path of its own (fourteen ``if``s on the bits of
  its input): no group is worth a pass, so vmap gives up splitting once the passes took a
  twentieth of the loop's time and reruns the function once per example;
- the solver under a vmap of a vmap (a 100 x ``batch // 100`` grid): the inner vmap splits
  its examples for every outer example at once (cells), the outer one runs once; the loop is
  two nested loops.

Methods, interleaved in one run, medians of repeats, ratios to the loop within the run only:
``loop`` (``np.stack([f(x) for x in xs])``, the reference), ``bt.vmap`` (``fallback="silent"``),
``np.vectorize`` (the same function, its own per-example loop), and ``numpy by hand`` (what
one would write vectorised: a masked ``while`` / ``np.where``), for scale.

    python bench/groups.py [--batch 10000] [--repeat 7] [--json FILE]
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

BITS = 14


def newton_sqrt(a):
    """Newton's iteration for sqrt(a) from 1.0, to a relative tolerance."""
    x = 1.0 + 0.0 * a
    while np.abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
    return x


def newton_sqrt_by_hand(a):
    """The same, vectorised by hand: iterate while any example has not converged."""
    x = np.ones_like(a)
    active = np.abs(x * x - a) > 1e-12 * a
    while active.any():
        x = np.where(active, 0.5 * (x + a / x), x)
        active = np.abs(x * x - a) > 1e-12 * a
    return x


def bit_path(n):
    """Fourteen branches on the bits of ``n``: every example a path of its own."""
    x = 1.0 + 0.0 * n
    for k in range(BITS):
        if (n // 2 ** k) % 2 == 1:
            x = x * 1.5
        else:
            x = x - 0.25
    return x


def bit_path_by_hand(n):
    x = np.ones(n.shape)
    for k in range(BITS):
        x = np.where((n // 2 ** k) % 2 == 1, x * 1.5, x - 0.25)
    return x


def steps(a) -> int:
    x, k = 1.0, 0
    while abs(x * x - a) > 1e-12 * a:
        x, k = 0.5 * (x + a / x), k + 1
    return k


def workloads(batch: int, rng) -> dict:
    a = 10.0 ** rng.uniform(-4, 4, batch)  # 10 step counts (2 to 11) at batch 10,000
    n = rng.permutation(batch).astype(np.float64) % 2 ** BITS
    outer = min(100, batch)
    grid = 10.0 ** rng.uniform(-4, 4, (outer, max(1, batch // outer)))
    return {
        f"solver, {len({steps(v) for v in a})} step counts": (newton_sqrt, newton_sqrt_by_hand, a),
        "every example its own path": (bit_path, bit_path_by_hand, n),
        f"solver, nested vmaps ({grid.shape[0]} x {grid.shape[1]})":
            (newton_sqrt, newton_sqrt_by_hand, grid),
    }


def measure(batch: int, repeat: int) -> dict:
    rng = np.random.default_rng(0)
    results = {}
    for name, (f, by_hand, xs) in workloads(batch, rng).items():
        if xs.ndim == 2:  # a grid: a vmap of a vmap, two nested loops
            vf = bt.vmap(bt.vmap(f), fallback="silent")

            def loop(f=f, xs=xs):
                return np.stack([np.stack([f(x) for x in row]) for row in xs])
        else:
            vf = bt.vmap(f, fallback="silent")

            def loop(f=f, xs=xs):
                return np.stack([f(x) for x in xs])
        vec = np.vectorize(f)
        want = loop()
        for got in (vf(xs), vec(xs), by_hand(xs)):
            np.testing.assert_allclose(got, want, rtol=1e-12)  # correct before timed
        methods = {"loop": loop,
                   "bt.vmap": lambda vf=vf, xs=xs: vf(xs),
                   "np.vectorize": lambda vec=vec, xs=xs: vec(xs),
                   "numpy by hand": lambda by_hand=by_hand, xs=xs: by_hand(xs)}
        results[name] = against_the_loop(methods, repeat, number=1)
    return results


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--json", metavar="FILE")
    a = p.parse_args(argv)
    r = measure(a.batch, a.repeat)
    print(f"batch {a.batch}, medians of {a.repeat} interleaved repeats (ratio to the loop)\n")
    cols = ["loop", "bt.vmap", "np.vectorize", "numpy by hand"]
    print("| workload | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))
    for name, v in r.items():
        m, q = v["median_s"], v["ratio"]
        print(f"| {name} | " + " | ".join(f"{m[c] * 1e3:.1f} ms ({q[c]:.2f}×)" for c in cols)
              + " |")
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
