"""Reductions and scans, registered with the REDUCTION boxed kind (tables, one per kind), and
the bit-packing rules (packbits, unpackbits) whose axis changes length.

The NaN-ignoring variants behave per slice exactly as NumPy's: an all-NaN slice gives NaN (with
NumPy's RuntimeWarning), and ``nanargmax``/``nanargmin`` of an all-NaN slice raise ValueError
(from the one physical call, if any example has such a slice).
"""

from __future__ import annotations

import math

import numpy as np

from ..boxed.reduction import INDEX, REDUCE, SCAN, reduction
from ..registry import batch_rule
from ._helpers import logical_rank, move_bdim_to_front, physical_axis, wrap_axis

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


# ---- bit packing along an axis (rules: the axis changes length) --------------------------------
def _bits_rule(op):
    def rule(a, a_bdim, axis=None, **kw):
        nd = logical_rank(a, a_bdim)
        if axis is None or nd == 0:
            if axis is not None:
                wrap_axis(axis, 1)  # a 0-d example acts as 1-d
            x = move_bdim_to_front(a, a_bdim)
            return op(np.reshape(x, (x.shape[0], math.prod(x.shape[1:]))), axis=1, **kw), 0
        return op(a, axis=physical_axis(wrap_axis(axis, nd), a_bdim), **kw), a_bdim

    rule.__name__ = f"{op.__name__}_rule"
    return rule


@batch_rule(np.packbits)
def packbits_rule(a, a_bdim, /, axis=None, bitorder="big"):
    return _bits_rule(np.packbits)(a, a_bdim, axis, bitorder=bitorder)


@batch_rule(np.unpackbits)
def unpackbits_rule(a, a_bdim, /, axis=None, count=None, bitorder="big"):
    return _bits_rule(np.unpackbits)(a, a_bdim, axis, count=count, bitorder=bitorder)
