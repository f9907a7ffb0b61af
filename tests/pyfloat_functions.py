"""Functions for tests/test_pyfloat_functions.py in a module that uses the name ``float`` other
than to call it (``isinstance(v, float)``, ``dtype=float``, ``float.fromhex``), so that vmap
never puts a ``float`` into its globals: it learns the function that made the refused call
instead (``batchtensor.pyfloat._Patch``), and ``math.<name>(x)`` calls there too."""

from __future__ import annotations

import math

import numpy as np


def is_float(v):
    return isinstance(v, float)


def float_as_value(x):
    s = float(x.sum())
    t = float.fromhex("0x1.8p1")  # 3.0
    kinds = (isinstance(s, float), isinstance(s, (int, float)), issubclass(np.float64, float))
    a = np.asarray(x, dtype=float) * 0 + s * 2
    return s / 2 + t if kinds[0] else -1.0, kinds[1] and kinds[2], a, np.dtype(float) == a.dtype


def calls_a_helper(x):
    return float_as_value(x)[0] + is_float(float(x[0]))


def in_a_comprehension(x):
    return sum([float(v) * 2 for v in (x[0], x[1])]), isinstance(x, float)


def roots(x):
    s = float(x.sum() ** 2)
    return math.sqrt(s), math.sqrt(x[0] * x[0]), math.fabs(x[1]), isinstance(s, float)


def logs(x):
    v = abs(x[0]) + 0.5
    return (math.log(v), math.log10(v), math.log2(v), math.log1p(v), math.exp(x[1] / 4),
            math.expm1(x[1] / 4), math.sin(x[2]), math.atan(x[2]), math.erf(x[3]),
            math.lgamma(v), math.cbrt(x[3]))


def tests(x):
    s = float(x[0])
    return math.isnan(s), math.isinf(x[1]), math.isfinite(x[2])


def sqrt_of_each(x):
    return math.sqrt(x[0])


def log_of_each(x):
    return math.log(x[0])


def exp_of_each(x):
    return math.exp(x[0])


def math_two_arguments(x):
    return math.log(abs(x[0]) + 1.0, 2.0)


def math_as_a_value(x):
    f = math.sqrt
    return f(abs(x[0])), f is math.sqrt


def math_of_an_array(x):
    return math.sqrt(abs(x[:1]))


def math_then_power(x):
    return math.sqrt(abs(x[0])) ** 2


# ---- int() --------------------------------------------------------------------------------------
def int_arithmetic(x):
    a, b = int(x[0]), int(x[1])
    return (a + b, a - 3, 7 - a, a * b, -a, +a, abs(b), a / (abs(b) + 1), 2.0 * a, a * 0.5,
            a - 0.25, a > b, a == 0, 1 <= b, a < 0.5, float(a) + 1.5, math.sqrt(abs(a)),
            isinstance(a, int), a.real, a.imag)


def int_counts(x):
    tn, fp = int(x[0]), int(x[1])  # adjusted_rand_score's pattern
    if tn == 0 and fp == 0:
        return 1.0
    return 2.0 * (tn * fp - fp) / ((tn + fp) * (fp + 1) + 3)


def int_of_floats(x):
    a = int(x[0])
    return a, a * 2, int(float(x[1]))


def int_common_count(x):
    n = int(abs(x[0]) * 0) + 3  # (every example's n is 3: the builtin's conversion gives it)
    return len(np.zeros(n)) + int(x[1])


def int_overflowing(x):
    return float(int(x[0]) * 2 ** 62)


def int_floor_divided(x):
    return int(x[0]) // 2


def int_as_index(x):
    return sum(range(abs(int(x[0]))))


def int_with_array(x, a):
    return a + int(x[0])


def int_of_nan(x):
    return int(x[0]) + 1


# ---- functions that could tell a weak value's type: never rewritten ---------------------------
def type_is_float(x):
    s = float(x[0])
    return s * 2 if type(s) is float else -1.0


def type_in_tuple(x):
    s = float(x[0])
    return s * 2 if isinstance(s, float) and float in (int, float) else -1.0


def type_named(x):
    n = int(x[0])
    return n + 1 if type(n).__name__ == "int" else 0
