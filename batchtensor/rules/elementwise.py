"""Elementwise functions that are not ufuncs, registered with the POINTWISE boxed kind.

(Every ufunc's ``__call__`` is pointwise automatically; this table is for the functions.)
"""

from __future__ import annotations

import numpy as np

from ..boxed.pointwise import pointwise

#: op -> the parameters that are arrays broadcasting against each other
POINTWISE_FUNCTIONS = {
    np.clip: ("a", "a_min", "a_max", "min", "max"),
    np.isclose: ("a", "b", "rtol", "atol"),
    np.nan_to_num: ("x",),
    np.round: ("a",),
    np.around: ("a",),
}

for _op, _arrays in POINTWISE_FUNCTIONS.items():
    pointwise(_op, _arrays)
