"""Reductions and scans, registered with the REDUCTION boxed kind (tables, one per kind)."""

from __future__ import annotations

import numpy as np

from ..boxed.reduction import INDEX, REDUCE, SCAN, reduction

# axis None / int / tuple; keepdims
REDUCTIONS = (np.sum, np.prod, np.mean, np.std, np.var, np.max, np.min, np.amax, np.amin,
              np.any, np.all, np.ptp)
# int axis; None flattens the example
INDEX_REDUCTIONS = (np.argmax, np.argmin)
# keep the rank; None flattens the example
SCANS = (np.cumsum, np.cumprod)

for _op in dict.fromkeys(REDUCTIONS):
    reduction(_op, REDUCE)
for _op in INDEX_REDUCTIONS:
    reduction(_op, INDEX)
for _op in SCANS:
    reduction(_op, SCAN)
