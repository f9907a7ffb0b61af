"""Sorting: sort, argsort (along a logical axis; axis=None sorts the flattened example)."""

from __future__ import annotations

import math

import numpy as np

from ..registry import batch_rule
from ._helpers import move_bdim_to_front, physical_axis, wrap_axis


def _sort_like(op):
    def rule(a, a_bdim, axis=-1, kind=None, order=None, *, stable=None):
        if axis is None:
            x = move_bdim_to_front(a, a_bdim)
            x = np.reshape(x, (x.shape[0], math.prod(x.shape[1:])))
            return op(x, axis=1, kind=kind, order=order, stable=stable), 0
        pax = physical_axis(wrap_axis(axis, a.ndim - 1), a_bdim)
        return op(a, axis=pax, kind=kind, order=order, stable=stable), a_bdim

    rule.__name__ = f"{op.__name__}_rule"
    return batch_rule(op)(rule)


sort_rule = _sort_like(np.sort)
argsort_rule = _sort_like(np.argsort)
