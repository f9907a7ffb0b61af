"""Dispatch overhead: per-op time of a chain of small adds, and the fixed cost of a vmap call.

Methods, measured interleaved in one run (medians of many repeats; ratios only within a run):

- ``numpy``: the chain on the batched array itself (no interception at all);
- ``passthrough``: the chain on a minimal ``__array_ufunc__`` wrapper (NumPy's operator mixin,
  unwrap, call, rewrap) — the floor any Python-level interception of ufuncs pays;
- ``vmap``: ``bt.vmap`` of the per-example chain.

    python bench/dispatch.py [--batch 64] [--size 8] [--ops 100] [--repeat 31] [--json FILE]
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
import batchtensor as bt  # noqa: E402


class Passthrough(np.lib.mixins.NDArrayOperatorsMixin):
    """The smallest useful ``__array_ufunc__`` wrapper."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        args = [x.value if type(x) is Passthrough else x for x in inputs]
        return Passthrough(getattr(ufunc, method)(*args, **kwargs))


def chain(x, n_ops: int):
    y = x
    for _ in range(n_ops):
        y = y + x
    return y


def identity(x):
    return x


def timeit(fn, number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def against_the_loop(methods: dict, repeat: int, number: int = 3) -> dict:
    """Median seconds per call of each method (one of them ``"loop"``), timed interleaved
    ``repeat`` times so that drift hits every method alike, and each median over the loop's."""
    samples: dict = {k: [] for k in methods}
    for _ in range(repeat):
        for k, fn in methods.items():
            samples[k].append(timeit(fn, number))
    med = {k: statistics.median(v) for k, v in samples.items()}
    return {"median_s": med, "ratio": {k: v / med["loop"] for k, v in med.items()}}


def measure(batch: int, size: int, n_ops: int, repeat: int) -> dict:
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(batch, size))
    wrapped = Passthrough(xs)
    vchain = bt.vmap(lambda x: chain(x, n_ops))
    vident = bt.vmap(identity)

    # Correctness before timing: the vmapped chain equals the loop and the plain chain.
    want = np.stack([chain(x, n_ops) for x in xs])
    np.testing.assert_allclose(vchain(xs), want, rtol=1e-12)
    np.testing.assert_allclose(chain(wrapped, n_ops).value, want, rtol=1e-12)

    methods = {
        "numpy": lambda: chain(xs, n_ops),
        "passthrough": lambda: chain(wrapped, n_ops),
        "vmap": lambda: vchain(xs),
        "vmap call (identity)": lambda: vident(xs),
        "passthrough call (identity)": lambda: identity(Passthrough(xs)).value,
    }
    samples = {k: [] for k in methods}
    number = 20
    for _ in range(repeat):  # interleaved: the machine's drift hits every method alike
        for name, fn in methods.items():
            samples[name].append(timeit(fn, number))
    med = {k: statistics.median(v) for k, v in samples.items()}
    per_op = {k: med[k] / n_ops for k in ("numpy", "passthrough", "vmap")}
    return {
        "batch": batch, "size": size, "ops": n_ops, "repeat": repeat,
        "per_op_us": {k: v * 1e6 for k, v in per_op.items()},
        "vmap_over_passthrough": per_op["vmap"] / per_op["passthrough"],
        "vmap_over_numpy": per_op["vmap"] / per_op["numpy"],
        "fixed_call_us": med["vmap call (identity)"] * 1e6,
        "passthrough_call_us": med["passthrough call (identity)"] * 1e6,
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--size", type=int, default=8)
    p.add_argument("--ops", type=int, default=100)
    p.add_argument("--repeat", type=int, default=31)
    p.add_argument("--json", metavar="FILE")
    a = p.parse_args(argv)
    r = measure(a.batch, a.size, a.ops, a.repeat)
    print(f"chain of {a.ops} adds, batch {a.batch}, example [{a.size}], float64 "
          f"(medians of {a.repeat} interleaved repeats)\n")
    print("| method | per-op time (µs) | ratio to passthrough |")
    print("|---|---|---|")
    for k, v in r["per_op_us"].items():
        print(f"| {k} | {v:.3f} | {v / r['per_op_us']['passthrough']:.2f} |")
    print(f"\nfixed cost of one vmap call (identity function): {r['fixed_call_us']:.2f} µs")
    print(f"vmap per-op / passthrough per-op: {r['vmap_over_passthrough']:.2f} (target <= 2)")
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
