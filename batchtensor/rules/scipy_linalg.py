"""scipy.linalg.norm, which scipy.spatial.distance calls for its distances; scipy.linalg.eigh,
which scipy.stats' multivariate distributions call for the covariance.

For a 1-d float example with the default 2-norm SciPy calls BLAS ``nrm2``, an f2py wrapper
that cannot take a batched value (and, meeting one whose conversion fails, releases a NumPy
dtype once too often); NumPy's ``sqrt(sum(x**2))`` would overflow where ``nrm2`` does not
(|x| > 1e154), so the rule scales each example by its largest magnitude as ``nrm2`` does, in
the example's precision, and returns float64 (``nrm2`` returns a Python float). With
an int ``axis`` (or a 1-d example with another ``ord``, or ``keepdims``) SciPy calls
``np.linalg.norm`` itself, along that axis of each example. The
other cases (matrix norms through LAPACK, ``axis=None`` over several axes) run per example.

``eigh`` takes a stack of matrices itself and calls LAPACK on each one alone, as the loop
does, so the batch goes in front of the example's own stack: the same calls, the same values.
A second matrix ``b``, ``subset_by_value`` (a count of eigenvalues that differs per example),
``overwrite_a``/``overwrite_b`` and a batch of no example run per example. (Of one matrix
SciPy returns a tuple, of a stack a list: each example's, as the loop's.)
Loaded by ``batchtensor.foreign`` once ``scipy.linalg`` is imported.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from ._helpers import logical_rank, move_bdim_to_front, require
from ._scipy import call, front_axis, scipy_rule

_BLAS_TYPES = "fdFD"


@scipy_rule(linalg.norm)
def norm_rule(a, a_bdim, ord=None, axis=None, keepdims=False, check_finite=True):  # noqa: A002
    nd = logical_rank(a, a_bdim)
    x = move_bdim_to_front(a, a_bdim)
    if check_finite and not np.isfinite(x).all():
        raise ValueError("array must not contain infs or NaNs")  # np.asarray_chkfinite's
    nrm2 = (nd == 1 and x.shape[1] and x.dtype.char in _BLAS_TYPES and axis is None
            and not keepdims and ord in (None, 2))
    if nrm2:
        require(np.isfinite(x).all(), "scipy.linalg.norm: a non-finite value without "
                                      "check_finite (BLAS nrm2's own handling)")
        mag = np.abs(x)
        scale = mag.max(axis=1)
        safe = np.where(scale > 0, scale, 1).astype(mag.dtype)
        norm = scale * np.sqrt(np.sum((mag / safe[:, None]) ** 2, axis=1))
        return norm.astype(np.float64), 0  # nrm2 returns a Python float, of any precision
    if axis is None and nd == 1:
        axis = 0  # a vector: SciPy hands it to np.linalg.norm, a norm along its one axis
    require(isinstance(axis, (int, np.integer)) and not isinstance(axis, bool) and nd >= 1,
            "scipy.linalg.norm: axis=None over a matrix (LAPACK) or several axes")
    norm = np.linalg.norm(x, ord=ord, axis=front_axis(axis, nd), keepdims=keepdims)
    return np.ascontiguousarray(norm), 0  # each example's result a fresh C-ordered array


@scipy_rule(linalg.eigh)
def eigh_rule(a, a_bdim, b=None, *, lower=True, eigvals_only=False, overwrite_a=False,
              overwrite_b=False, type=1, check_finite=True,  # noqa: A002  (SciPy's names)
              subset_by_index=None, subset_by_value=None, driver=None):
    nd = logical_rank(a, a_bdim)
    require(nd >= 2 and a.shape[a_bdim] > 0 and b is None and
            subset_by_value is None and not overwrite_a and not overwrite_b,
            "scipy.linalg.eigh: a second matrix, subset_by_value, overwrite_a/b, fewer than "
            "2 dimensions or no example")
    res = call(linalg, "eigh")(move_bdim_to_front(a, a_bdim), lower=lower,
                               eigvals_only=eigvals_only, type=type, check_finite=check_finite,
                               subset_by_index=subset_by_index, driver=driver)
    if eigvals_only:
        return res, 0
    pairs = [(r, 0) for r in res]
    return pairs if nd > 2 else tuple(pairs)  # (SciPy returns a list for a stack of matrices)
