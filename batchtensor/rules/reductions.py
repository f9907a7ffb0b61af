"""Reductions and scans, registered with the REDUCTION boxed kind (tables, one per kind).

The NaN-ignoring variants behave per slice exactly as NumPy's: an all-NaN slice gives NaN (with
NumPy's RuntimeWarning), and ``nanargmax``/``nanargmin`` of an all-NaN slice raise ValueError
(from the one physical call, if any example has such a slice).
"""

from __future__ import annotations

import numpy as np

from ..boxed.reduction import INDEX, REDUCE, SCAN, reduction

# axis None / int / tuple; keepdims
REDUCTIONS = (np.sum, np.prod, np.mean, np.std, np.var, np.max, np.min, np.amax, np.amin,
              np.any, np.all, np.ptp,
              np.nansum, np.nanprod, np.nanmean, np.nanstd, np.nanvar, np.nanmax, np.nanmin,
              np.median, np.nanmedian, np.count_nonzero)
# int axis; None flattens the example
INDEX_REDUCTIONS = (np.argmax, np.argmin, np.nanargmax, np.nanargmin)
# keep the rank; None flattens the example
SCANS = (np.cumsum, np.cumprod, np.nancumsum, np.nancumprod)
# keep the rank; axis=None only for a 1-d example (NumPy raises otherwise); array named ``x``
ARRAY_API_SCANS = (np.cumulative_sum, np.cumulative_prod)

for _op in dict.fromkeys(REDUCTIONS):
    reduction(_op, REDUCE)
for _op in INDEX_REDUCTIONS:
    reduction(_op, INDEX)
for _op in SCANS:
    reduction(_op, SCAN)
for _op in ARRAY_API_SCANS:
    reduction(_op, SCAN, array="x", none_flattens=False)
