"""A module that uses the name ``float`` other than to call it (``isinstance(v, float)``), so
that vmap never puts a ``float`` of its own into it (tests/test_pyfloat.py)."""

from __future__ import annotations

import numpy as np


def is_float(v):
    return isinstance(v, float)


def halved(x):
    s = float(x.sum())
    return s / 2 if isinstance(s, float) else -1.0


def uses_dtype(x):
    s = float(x.mean())
    return np.asarray(x, dtype=float) * 0 + s * 2
