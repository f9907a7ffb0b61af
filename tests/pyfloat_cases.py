"""Functions for tests/test_pyfloat.py in a module that uses the name ``float`` for calls only,
so that vmap learns it from a refused ``float(x)`` (batchtensor.pyfloat). Nothing here may use
``float`` otherwise (an ``isinstance(v, float)`` would keep the module from being learnt: that
case lives in pyfloat_not_learnt.py)."""

from __future__ import annotations

import copy
import math

import numpy as np

import pyfloat_not_learnt


def total(x):
    return float(np.sum(x))


# ---- Python arithmetic, comparisons, bool -------------------------------------------------------
def arithmetic(x):
    s, m = float(x.sum()), float(x[0])
    return (s + m, s - 2.5, 3 * s, s * True, -s, +m, abs(m), 1.5 - m, s / 4, 2 / (abs(m) + 1.0),
            s + (1 << 53), s.real, s.imag, s.conjugate())


def chained(x):
    s = float(x.mean())
    t = s * 2.0 + 1
    return t / 3.0 - s


def compared(x):
    s = float(x.mean())
    return s > 0, s <= 0.25, s == s, s != 1.0, 0.5 < s


def branches(x):
    s = float(x.mean())
    if s > 0:
        return s * 2
    return -s


def truthy(x):
    s = float(x[0])
    return 1.0 if s else 2.0


def min_max(x):
    s, t = float(x[0]), float(x[1])
    return max(s, t), min(s, 0.0), sum([s, t, 1.0])


def nan_and_zero(x):
    s = float(x[0])
    return s - s, s * 0.0, (s > 0) if s == s else False


# ---- returned in containers ---------------------------------------------------------------------
def in_containers(x):
    s = float(x.sum())
    return {"a": s, "b": [s * 2, float(x[0]) > 0]}, (s,)


# ---- NumPy: ufuncs and operators with arrays, NEP 50's weak cast --------------------------------
def with_array(x, a):
    s = float(x.mean())
    return a + s, s * a, a < s, np.maximum(a, s), np.arctan2(s, a), a - s


def with_complex_array(x, a):
    return a + float(x[0]), float(x[1]) * a


def with_batched(x):
    s = float(x.mean())
    return x + s, s - x, x * s > 0


def weak_only(x):
    s = float(x.mean())
    r = np.sqrt(abs(s))  # a NumPy float64 scalar: strong
    return r, np.isnan(s), np.add(s, 1), np.maximum(s, 0)


def strong_after(x, a):
    s = float(x.mean())
    return np.sqrt(abs(s)) + a, (s * 2.0 + 1) + a


def with_numpy_scalars(x):
    s = float(x.mean())
    return s + np.float64(1.5), np.float32(2) * s, s < np.float32(0.1), s + np.int64(3)


def ufunc_of(name):
    uf = getattr(np, name)

    def f(x, a):
        return uf(a, float(x[0])), uf(float(x[1]), a)
    return f


# ---- uses that refuse (the function reruns per example) -----------------------------------------
def divided_by_zero(x):
    try:
        return 1.0 / float(x[0])
    except ZeroDivisionError:
        return -1.0


def weak_divided_by_zero(x):
    try:
        return float(x[1]) / float(x[0])
    except ZeroDivisionError:
        return -1.0


def zero_divided_by_weak(x):
    try:
        return 3 / float(x[0])
    except ZeroDivisionError:
        return -1.0


def logged(x):
    return math.log(abs(float(x[0])) + 1.0)


def formatted(x):
    return f"{float(x[0]):.3f}"


def clipped(x, a32):
    return np.clip(a32, 0, float(x[0]))


def method_clip(x):
    return x.clip(0, float(x.mean()))


def kind(x):
    return pyfloat_not_learnt.is_float(float(x[0]))


def probed(x):
    return hasattr(float(x[0]), "__array__")


def as_array(x):
    return np.asarray(float(x[0])) + x


def written(x):
    out = np.zeros(2)
    out[0] = float(x.sum())
    return out


def powered(x):
    return float(x[0]) ** 2


def power_of_array(x, a):
    return a ** float(x[0])


def floor_divided(x):
    return float(x[0]) // 0.5


def rounded(x):
    return round(float(x[0]), 2)


def as_int(x):
    return int(float(x[0]) * 10)


def hashed(x):
    return {float(x[0]): 1}.get(0.0, 2)


def copied(x):
    return copy.copy(float(x[0]))


def huge_int(x):
    return float(x[0]) + 2 ** 60


def bool_arithmetic(x):
    return (float(x[0]) > 0) + 1


def compared_to_text(x):
    return float(x[0]) == "a"


def indexed_by_bool(x):
    return [10.0, 20.0][float(x[0]) > 0]


def reduced(x):
    return np.add.reduce([float(x[0]), 1.0])


def as_float64(x):
    return np.float64(float(x[0]))


def nested_value_of_outer(x, ys):
    import batchtensor as bt

    return bt.vmap(lambda y: float(x.sum()) + y)(ys)


def rebuilt_by_its_type(x):
    s = float(x[0])
    return type(s)(1), type(s)(x[1])  # float(1), float(x[1]) in the loop
