"""The whole-function fallback against a plain Python loop over the same function.

Each workload is a per-example function that a single vectorised pass cannot execute (a
Python scalar conversion, a batched value written into a shared plain array), so ``bt.vmap``
reruns it once per example; where the examples only disagree at an ``if`` / ``while`` (a loop
whose iteration count differs, two branches), ``bt.vmap`` runs each group of examples that
agree vectorised instead; the last, the same writes into an array the function makes with
``np.zeros``, shows what the buffers (``batchtensor.buffers``) save: ``bt.vmap`` runs it
vectorised. Methods, interleaved in one
run, medians of repeats, ratios within the run only:

- ``loop``: ``np.stack([f(x) for x in xs])``, the reference;
- ``bt.vmap``: the first vectorised pass, which stops where the function needs a per-example
  run, then the rerun (``fallback="silent"``);
- ``bt.vmap rerun only``: the rerun's own cost (the first pass skipped), for the breakdown.

    python bench/rerun.py [--batch 1000] [--repeat 15] [--json FILE]
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


def scale_by_norm(x):
    """A Python float from the data: ``float()`` of a batched value."""
    return x * (1.0 / max(float(np.linalg.norm(x)), 1e-12))


def newton_sqrt(a):
    """Iterate to a tolerance: each example stops after its own number of steps."""
    x = np.abs(a) + 1.0
    for _ in range(50):
        nxt = 0.5 * (x + np.abs(a) / x)
        if np.max(np.abs(nxt - x)) < 1e-10:
            break
        x = nxt
    return x


def two_ways(x):
    """Examples that take one of two branches: two groups, each vectorised."""
    if x.sum() > 0:
        return np.tanh(x) * 2.0
    return np.exp(-x * x)


TEMPLATE = np.zeros(4)


def fill_copy(x):
    """A batched value written into a method's copy of a shared array (plain: a rerun)."""
    out = TEMPLATE.copy()
    for i in range(4):
        out[i] = x[i] ** 2
    return out


def fill_buffer(x):
    """The same into ``np.zeros(4)``: a buffer, batched at the first write (no rerun)."""
    out = np.zeros(4)
    for i in range(4):
        out[i] = x[i] ** 2
    return out


WORKLOADS = {
    "float() conversion": (scale_by_norm, (8,)),
    "Newton to a tolerance (groups by step count)": (newton_sqrt, (8,)),
    "if with two branches (two groups)": (two_ways, (8,)),
    "plain array filled (a method's copy)": (fill_copy, (4,)),
    "np.zeros buffer filled (vectorised)": (fill_buffer, (4,)),
}


def _rerun_only(f, xs):
    """The rerun alone: the per-example part of ``VmapFunction._run``."""
    vf = bt.vmap(f, fallback="silent")
    from batchtensor.levels import random_scope  # noqa: PLC0415  (a bench, not the package)

    with random_scope() as scope:
        return vf._per_example([xs], [0], None, {}, xs.shape[0], 0, scope)


def measure(batch: int, repeat: int) -> dict:
    rng = np.random.default_rng(0)
    results = {}
    for name, (f, shape) in WORKLOADS.items():
        xs = rng.normal(size=(batch,) + shape)
        vf = bt.vmap(f, fallback="silent")
        want = np.stack([f(x) for x in xs])
        np.testing.assert_allclose(vf(xs), want, rtol=1e-12)  # correct before timed
        np.testing.assert_allclose(_rerun_only(f, xs), want, rtol=1e-12)
        methods = {"loop": lambda: np.stack([f(x) for x in xs]),
                   "bt.vmap": lambda: vf(xs),
                   "bt.vmap rerun only": lambda: _rerun_only(f, xs)}
        results[name] = against_the_loop(methods, repeat)
    return results


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--json", metavar="FILE")
    a = p.parse_args(argv)
    r = measure(a.batch, a.repeat)
    print(f"batch {a.batch}, medians of {a.repeat} interleaved repeats\n")
    print("| workload | loop | bt.vmap | bt.vmap rerun only |")
    print("|---|---|---|---|")
    for name, v in r.items():
        m, q = v["median_s"], v["ratio"]
        print(f"| {name} | {m['loop'] * 1e3:.2f} ms (1.00×) | {m['bt.vmap'] * 1e3:.2f} ms "
              f"({q['bt.vmap']:.2f}×) | {m['bt.vmap rerun only'] * 1e3:.2f} ms "
              f"({q['bt.vmap rerun only']:.2f}×) |")
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
