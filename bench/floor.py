"""The floor of a dispatch-bound workload: how fast can *any* Python-level interception run it?

The Lorenz RK4 step at batch 1024 (``bench/workloads.py``) is about 77 NumPy calls on
1024-element arrays, each about 0.4 µs of NumPy work. This script runs the per-example function,
unchanged, through wrappers that do less and less, next to ``bt.vmap``, interleaved in one run:

- ``vectorised``: the hand-vectorised rewrite (the reference, 1.00×);
- ``passthrough``: ``bench/dispatch.py``'s minimal ``__array_ufunc__`` wrapper, taught the two
  other things this function does: ``x[i]`` (a copy, as the loop's NumPy scalar is) and
  ``np.stack`` (the batch axis stays first);
- ``operators``: leaner still: Python operators call the ufunc themselves, without NumPy's
  protocol (``np.stack`` still comes through ``__array_function__``, as it must);
- ``operators, x[i] a view``: the same, with ``x[i]`` a view, which the loop's copy semantics
  forbid (a later write to ``x`` would show through): the floor without that copy;
- ``bt.vmap``.

The wrappers are floors, not a usable vmap: they assume every value is batch-first and of one
rank, and check nothing (no levels, no rank broadcasting, no dtype rules, no errors).

    python bench/floor.py [--repeat 15] [--json FILE]
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import batchtensor as bt  # noqa: E402
from dispatch import Passthrough, timeit  # noqa: E402
from workloads import make_rk4, rk4, rk4_vec  # noqa: E402


def _stacked(cls, func, args, kwargs):
    """``np.stack(values)`` of batch-first values: the batch axis stays first."""
    if func is not np.stack or kwargs or len(args) != 1:
        return NotImplemented
    new = object.__new__(cls)
    new.value = np.stack([a.value for a in args[0]], axis=1)
    return new


class BatchFirstPassthrough(Passthrough):
    """``bench/dispatch.py``'s passthrough plus ``x[i]`` and ``np.stack`` of a batch-first value."""

    __slots__ = ()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        args = [x.value if isinstance(x, Passthrough) else x for x in inputs]
        return BatchFirstPassthrough(getattr(ufunc, method)(*args, **kwargs))

    def __array_function__(self, func, types, args, kwargs):
        return _stacked(BatchFirstPassthrough, func, args, kwargs)

    def __getitem__(self, i):
        return BatchFirstPassthrough(self.value[:, i].copy())


def _operator(ufunc):
    def forward(self, other, _new=object.__new__):
        r = _new(type(self))
        r.value = ufunc(self.value, other.value if isinstance(other, Operators) else other)
        return r

    def reflected(self, other, _new=object.__new__):
        r = _new(type(self))
        r.value = ufunc(other, self.value)
        return r

    return forward, reflected


class Operators:
    """Python operators straight to the ufunc; ``x[i]`` a copy."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    __add__, __radd__ = _operator(np.add)
    __sub__, __rsub__ = _operator(np.subtract)
    __mul__, __rmul__ = _operator(np.multiply)

    def __array_function__(self, func, types, args, kwargs):
        return _stacked(type(self), func, args, kwargs)

    def __getitem__(self, i, _new=object.__new__):
        r = _new(type(self))
        r.value = self.value[:, i].copy()
        return r


class OperatorsWithViews(Operators):
    """``Operators`` with ``x[i]`` a view (not what the loop computes if ``x`` is written)."""

    __slots__ = ()

    def __getitem__(self, i, _new=object.__new__):
        r = _new(type(self))
        r.value = self.value[:, i]
        return r


def _through(cls):
    def run(s, p):
        return rk4(cls(s), cls(p)).value
    return run


METHODS = {
    "vectorised": rk4_vec,
    "passthrough": _through(BatchFirstPassthrough),
    "operators": _through(Operators),
    "operators, x[i] a view": _through(OperatorsWithViews),
    "bt.vmap": bt.vmap(rk4),
}


def check(s, p) -> None:
    """Every method computes what the per-example loop computes."""
    want = np.stack([rk4(*ex) for ex in zip(s, p)])
    for name, fn in METHODS.items():
        np.testing.assert_allclose(fn(s, p), want, rtol=1e-12, err_msg=name)


def measure(repeat: int) -> dict:
    s, p = make_rk4(np.random.default_rng(0), "dispatch")[0]
    methods = METHODS
    check(s, p)  # correctness before timing
    number = 200
    samples = {k: [] for k in methods}
    for _ in range(repeat):  # interleaved: the machine's drift hits every method alike
        for name, fn in methods.items():
            call = functools.partial(fn, s, p)
            call()  # untimed: what the method before left behind is not this one's cost
            samples[name].append(timeit(call, number))
    med = {k: statistics.median(v) for k, v in samples.items()}
    return {"repeat": repeat, "median_us": {k: v * 1e6 for k, v in med.items()},
            "ratio": {k: v / med["vectorised"] for k, v in med.items()}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--json", metavar="FILE")
    a = ap.parse_args(argv)
    r = measure(a.repeat)
    print(f"Lorenz RK4 step, batch 1024, float64 (medians of {a.repeat} interleaved repeats)\n")
    print("| method | time per call | ratio to vectorised |")
    print("|---|---|---|")
    for k, v in r["median_us"].items():
        print(f"| {k} | {v:.1f} µs | {r['ratio'][k]:.2f}× |")
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
