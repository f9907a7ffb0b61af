"""scipy.special's reductions along axes: ``logsumexp``, ``softmax``, ``log_softmax``. The
batch axis rides along first, left out of the axes reduced (``axis=None``: every axis of the
example). SciPy's ufuncs (``expit``, ``gammaln``, ...) are NumPy ufuncs: the boxed pointwise
kind serves them without a rule. Loaded by ``batchtensor.foreign`` once ``scipy.special`` is
imported.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ._helpers import batch_outermost, logical_rank, pad_to_rank, require
from ._scipy import call, front, front_axes, scipy_rule


@scipy_rule(special.logsumexp)
def logsumexp_rule(a, a_bdim, axis=None, b=None, b_bdim=None, keepdims=False,
                   return_sign=False):
    nd = logical_rank(a, a_bdim)
    if b is not None:
        require(logical_rank(b, b_bdim) <= nd, "b has more axes than a")
    size = a.shape[a_bdim] if a_bdim is not None else b.shape[b_bdim]
    # each example one block, summed in the loop's order (NumPy's pairwise sum)
    a = batch_outermost(front(a, a_bdim, size), 0)
    if b_bdim is not None:
        b = pad_to_rank(front(b, b_bdim, size), nd)
    axes = front_axes(axis, nd)
    if nd == 0:  # 0-d examples: one element each (axes () would reduce the batch as well)
        a, axes = a[:, None], (1,)  # (keepdims: SciPy gives a 0-d example shape (1,))
        if b_bdim is not None:
            b = b[:, None]
    if size == 0 and 0 not in a.shape[1:]:
        # no example: SciPy's path for an empty array fails on a tuple of axes, where the
        # examples (not empty) would not; one zero example gives the result's shape and dtype
        a = np.zeros_like(a, shape=(1,) + a.shape[1:])
        if b_bdim is not None:
            b = np.zeros_like(b, shape=(1,) + b.shape[1:])
        res = call(special, "logsumexp")(a, axes, b, keepdims, return_sign)
        return ((res[0][:0], 0), (res[1][:0], 0)) if return_sign else (res[:0], 0)
    res = call(special, "logsumexp")(a, axes, b, keepdims, return_sign)
    return ((res[0], 0), (res[1], 0)) if return_sign else (res, 0)


def _softmax(name: str):
    fn = call(special, name)

    @scipy_rule(getattr(special, name))
    def rule(x, x_bdim, axis=None):
        nd = logical_rank(x, x_bdim)
        return fn(batch_outermost(x, x_bdim), front_axes(axis, nd)), 0

    rule.__name__ = f"{name}_rule"


_softmax("softmax")
_softmax("log_softmax")
