"""``bt.random`` under vmap against NumPy drawing the same amount, and against the loop.

Each workload draws per example inside ``bt.vmap(..., randomness="different")`` from a
``bt.random`` Generator (Philox words from NumPy's compiled ``Philox``, transformed in NumPy
calls over the batch; the rejection samplers run NumPy's own sampler once per example).
Methods, interleaved in one run, medians of repeats, ratios within the run only:

- ``numpy``: ``rng.<method>(size=(batch,) + shape)`` on a NumPy Generator, one call (the
  target: the issue asks for ``bt.vmap`` within 3x of it for normals of ``[1024, 100]``);
- ``bt.vmap``: the vmapped function drawing one example's ``shape``;
- ``loop``: a Python loop drawing each example's ``shape`` from one NumPy Generator.

    python bench/random_bt.py [--batch 1024] [--repeat 21] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import batchtensor as bt  # noqa: E402

SHAPE = (100,)
WORKLOADS = {  # name -> (draw of one example's shape on a generator g, size)
    "normal": lambda g, size: g.normal(size=size),
    "random": lambda g, size: g.random(size=size),
    "exponential": lambda g, size: g.exponential(2.0, size=size),
    "integers": lambda g, size: g.integers(0, 10, size=size),
    "laplace": lambda g, size: g.laplace(0.0, 1.0, size=size),
    "gamma (per example)": lambda g, size: g.gamma(2.0, size=size),
}


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def run(batch: int, repeat: int) -> dict:
    xs = np.zeros((batch, 1))
    rows = {}
    for name, draw in WORKLOADS.items():
        g = np.random.default_rng(0)
        rng = bt.random.default_rng(0)
        f = bt.vmap(lambda x: draw(rng, SHAPE), randomness="different")
        methods = {
            "numpy": lambda: draw(g, (batch,) + SHAPE),
            "bt.vmap": lambda: f(xs),
            "loop": lambda: [draw(g, SHAPE) for _ in range(batch)],
        }
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", bt.PerformanceWarning)
            out = f(xs)
            assert out.shape == (batch,) + SHAPE
            times: dict = {k: [] for k in methods}
            for _ in range(repeat):
                for k, m in methods.items():  # interleaved: the machine's drift hits all
                    times[k].append(_time(m))
        med = {k: statistics.median(v) for k, v in times.items()}
        rows[name] = {k: {"ms": med[k] * 1e3, "x_numpy": med[k] / med["numpy"]} for k in med}
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=21)
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = run(a.batch, a.repeat)
    print(f"batch {a.batch}, examples of shape {SHAPE}, medians of {a.repeat} interleaved "
          f"repeats (ratios to numpy within this run)\n")
    print("| workload | numpy | bt.vmap | loop |\n|---|---|---|---|")
    for name, r in rows.items():
        cells = " | ".join(f"{r[k]['ms']:.2f} ms ({r[k]['x_numpy']:.2f}x)"
                           for k in ("numpy", "bt.vmap", "loop"))
        print(f"| {name} | {cells} |")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
