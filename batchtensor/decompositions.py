"""Decompositions: an op rewritten with other NumPy calls that have rules.

Each function receives the original (wrapped) arguments and dispatches again. Slower than a
rule (several ops), used where the rewrite is exact and short.
"""

from __future__ import annotations

import numpy as np

from .registry import decomposition


@decomposition(np.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    return np.sum(np.diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)
