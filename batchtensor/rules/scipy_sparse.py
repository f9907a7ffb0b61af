"""scipy.sparse: a COO array or matrix built from batched coordinates or data (scikit-learn's
``confusion_matrix`` builds one and calls ``toarray()``) becomes its dense array in one call.

``toarray()`` fills ``np.zeros(shape)`` through the compiled ``coo_todense``, which writes
into an array SciPy made and so cannot take a batch. While a vmap runs, COO's ``toarray``
(``METHODS``; ``batchtensor.foreign`` intercepts it) hands a call whose coordinates or data
are batched to ``coo_todense`` below, an op of its own: each example's entries added in
their order into zeros (``np.add.at``: duplicates summed as the compiled loop sums them,
bool ``or``-ed), one fresh C- or F-ordered array per example as ``order=`` asks. With an
``out=`` array or another ``order`` the original runs, which converts the batched value
(the whole-function rerun).

What stays per example: CSR / CSC built from batched data (``tocsr()``, ``csr_array((data,
(i, j)))``) sums duplicates into as many stored entries as each example has distinct cells,
so their ``data`` / ``indices`` differ in length per example; SciPy's compiled conversions
meet the batched value and the function reruns once per example.
Loaded by ``batchtensor.foreign`` once ``scipy.sparse`` is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.sparse import _coo, _sputils

from ..dispatch import function_call
from ..plumbing import innermost, scan_level
from ..registry import batch_rule
from ._helpers import batch_size_of, ensure_bdim, logical_shape

__all__ = ["coo_todense", "METHODS"]

_toarray = vars(_coo._coo_base)["toarray"]


def coo_todense(coords: Any, data: Any, shape: tuple, dtype: Any, fortran: bool) -> Any:
    """The dense array of COO entries ``data`` at ``coords`` (a tuple of index arrays):
    zeros of ``shape`` and ``dtype`` (F-ordered if ``fortran``) with each entry added in
    order, as SciPy's ``coo_todense`` fills ``toarray()``'s array."""
    if scan_level((coords, data)) is not None:
        return function_call(coo_todense, (coords, data, shape, dtype, fortran), {})
    out = np.zeros(shape, dtype=dtype, order="F" if fortran else "C", like=data)
    np.add.at(out, tuple(coords), data)
    return out


@batch_rule(coo_todense)
def coo_todense_rule(coords, coords_bdims, data, data_bdim, shape, dtype, fortran):
    values, bdims = [*coords, data], [*coords_bdims, data_bdim]
    size = batch_size_of(values, bdims)
    like = innermost(next(v for v, b in zip(values, bdims) if b is not None))
    nnz = logical_shape(data, data_bdim)[0]
    example = np.repeat(np.arange(size, like=like), nnz)  # each entry's example
    flat = [np.reshape(ensure_bdim(c, b, size, like=like), (-1,))
            for c, b in zip(coords, coords_bdims)]
    values = np.reshape(ensure_bdim(data, data_bdim, size, like=like), (-1,))
    if not fortran:
        return coo_todense((example, *flat), values, (size, *shape), dtype, False), 0
    # F-ordered examples: C order over the reversed axes, each example one block, transposed
    out = coo_todense((example, *flat[::-1]), values, (size, *shape[::-1]), dtype, False)
    return np.transpose(out, (0, *range(len(shape), 0, -1))), 0


def toarray(self: Any, order: Any = None, out: Any = None) -> Any:
    """COO's ``toarray``: batched coordinates or data go to ``coo_todense``."""
    if (out is None and order in (None, "C", "F") and self.dtype.type in
            _sputils.supported_dtypes and scan_level((self.coords, self.data)) is not None):
        return coo_todense(tuple(self.coords), self.data, tuple(self.shape), self.dtype,
                           order == "F")
    return _toarray(self, order, out)


toarray.__doc__ = _toarray.__doc__

#: class attributes ``batchtensor.foreign`` replaces while a vmap runs: (class, name, value)
METHODS = [(_coo._coo_base, "toarray", toarray)]
