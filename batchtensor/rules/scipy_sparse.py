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

COO's ``tocsr()`` / ``tocsc()`` of a 2-d COO with batched coordinates or data (scikit-learn's
``contingency_matrix(sparse=True)``) give a CSR / CSC object of SciPy's class (a subclass of
it: ``BatchedCSR``) whose attributes are each example's own: ``indptr`` batched, ``data`` and
``indices`` batched or, where each example stores another count of entries, a ragged
selection (``rules/ragged.py``), in SciPy's canonical order. It also keeps the batched dense
matrix and which cells store an entry, from which its methods ``sum`` (``np.matrix`` for an
``spmatrix`` over an axis: ``BatchedMatrix``; added in SciPy's sum type), ``@`` / ``dot`` of a
vector, ``astype``, ``copy``, ``toarray``, ``tocsr`` / ``tocsc`` compute one batched call each,
and ``transpose`` shares the matrix's attributes, as SciPy's does; SciPy's ``_with_data``
(``power``, ``.real``, ``* scalar``) too, its result holding the ``data`` it is given (for
``.real`` the matrix's own). Every other method is
SciPy's own on those attributes: it works where batchtensor batches the NumPy calls it makes
and makes vmap rerun the function where it reaches compiled code. Once an attribute is
assigned or written into (its bytes are checked at each of those methods), the dense matrix
is dropped and the methods are SciPy's. ``scipy.sparse.find`` of such a matrix gives each
example's rows, columns and values of its nonzero entries (selections of its dense matrix,
ragged where the counts differ: scikit-learn's mutual information). The rest (CSR built from
``(data, (i, j))``) runs per example. Loaded by ``batchtensor.foreign`` once ``scipy.sparse``
is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse
from scipy.sparse import _compressed, _coo, _sputils, csc_array, csc_matrix, csr_array, csr_matrix, spmatrix

from ..dispatch import function_call
from ..errors import note_refusal
from ..plumbing import innermost, scan_level
from ..registry import batch_rule, slots
from ..tensor import BatchedTensor
from ._helpers import batch_size_of, ensure_bdim, logical_shape
from .ragged import is_ragged

__all__ = ["coo_todense", "METHODS", "CONVERTERS", "BatchedCSR", "BatchedMatrix",
           "batched_compressed"]

_toarray = vars(_coo._coo_base)["toarray"]
_cs_toarray = vars(_compressed._cs_matrix)["toarray"]
_find = vars(scipy.sparse)["find"]
_tocsr = vars(_coo._coo_base)["tocsr"]
_tocsc = vars(_coo._coo_base)["tocsc"]


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


def cs_toarray(self: Any, order: Any = None, out: Any = None) -> Any:
    """CSR's and CSC's ``toarray`` where ``indptr``, ``indices`` or ``data`` are batched
    (scikit-learn's ``label_binarize`` builds a CSR from them): ``coo_todense`` of each
    entry's row and column. SciPy's compiled ``csr_todense`` adds the entries of each major
    index (row of a CSR) in their order into zeros, and ignores those outside
    ``indptr[0]:indptr[-1]``; here each entry's major index is where ``indptr`` places it
    and an entry outside adds zero (``+0.0``, ``False``: no value changes). Only where SciPy
    fills its array without converting the format first (a CSR in C order, a CSC in F order,
    the defaults): a conversion would sum duplicates in another order."""
    natural = "C" if self.format == "csr" else "F"
    batched = scan_level((self.indptr, self.indices, self.data)) is not None
    if not batched or out is not None or order not in (None, natural) or self.ndim != 2 or \
            self.dtype.type not in _sputils.supported_dtypes or \
            any(is_ragged(v) for v in (self.indptr, self.indices, self.data)):
        return _cs_toarray(self, order, out)
    nnz = self.data.shape[0]
    k = np.arange(nnz, dtype=self.indptr.dtype)
    n_major = self.shape[0 if natural == "C" else 1]
    major = np.searchsorted(self.indptr, k, side="right") - 1
    inside = (major >= 0) & (major < n_major)
    major = np.clip(major, 0, max(n_major - 1, 0))
    minor = np.where(inside, self.indices, 0)
    data = np.where(inside, self.data, np.zeros((), dtype=self.dtype))
    coords = (major, minor) if natural == "C" else (minor, major)
    return coo_todense(coords, data, tuple(self.shape), self.dtype, natural == "F")


cs_toarray.__doc__ = _cs_toarray.__doc__

def _refuse(value: Any, what: str) -> Any:
    """The error of a refused conversion of ``value``'s level (vmap reruns the function once
    per example), for what has no batched meaning here."""
    level = scan_level(value)
    err: Any = TypeError(f"{what}: batchtensor cannot batch this use of a scipy.sparse "
                         f"result that differs per example; the function runs once per example")
    err.batchtensor_conversion = True  # errors.rerun_reason: a rerun per example
    err.batchtensor_level = level
    err.batchtensor_what = what
    note_refusal(level, what)
    slots.note_if_caught(level, what)
    raise err


def _physical(x: Any) -> Any:
    """The memory holding every example of ``x`` (batched or a ragged selection)."""
    return x.values if is_ragged(x) else innermost(x)


_INT32_MAX = int(np.iinfo(np.int32).max)  # SciPy's int64 indices past it: not here
_ATTRIBUTES = ("data", "indices", "indptr", "_shape")


class BatchedCSR:
    """A CSR / CSC matrix or array of batched entries (mixed into SciPy's four classes below).
    ``_bt``: the batched dense matrix, the batched mask of the cells that store an entry, and
    the bytes ``data`` / ``indices`` / ``indptr`` held when it was made; None once one of them
    was assigned or written into (SciPy's own methods then)."""

    _bt: Any = None
    # (SciPy's, for the type checker)
    data: Any
    dtype: Any
    indptr: Any
    shape: Any
    format: Any
    _csr_container: Any
    _csc_container: Any

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _ATTRIBUTES:
            object.__setattr__(self, "_bt", None)
        object.__setattr__(self, name, value)

    def _live(self) -> Any:
        """``(dense, stored)`` while the attributes hold what they were made with."""
        if self._bt is not None:
            for name, held in zip(("data", "indices", "indptr"), self._bt[2]):
                if _physical(getattr(self, name)).tobytes() != held:
                    object.__setattr__(self, "_bt", None)  # written into: SciPy's methods
                    return None
            return self._bt[:2]
        return None

    def sum(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        live = self._live()
        if live is None or out is not None or (axis is not None and axis not in
                                               (0, 1, -1, -2)):
            return super().sum(axis, dtype, out)  # type: ignore[misc]
        if axis is None:  # SciPy: np.sum of the stored entries
            return np.sum(self.data, dtype=dtype)
        # (SciPy adds in its sum type and converts to ``dtype`` after: bool of 1 + -1 is False)
        res = np.sum(live[0], axis=axis, dtype=_sputils.get_sum_dtype(self.dtype))
        if dtype is not None:
            res = res.astype(dtype)
        if isinstance(self, spmatrix):  # a 2-d np.matrix per example
            return BatchedMatrix(np.expand_dims(res, axis % 2))
        return res

    def _matmul_vector(self, other: Any) -> Any:
        live = self._live()
        if live is None:
            return super()._matmul_vector(other)  # type: ignore[misc]
        dense, stored = live
        t = np.dtype(_sputils.upcast_char(self.dtype.char, other.dtype.char))
        # only stored entries multiply (0 * inf is no NaN of SciPy's), in SciPy's type
        prod = np.multiply(dense.astype(t), other.astype(t), where=stored,
                           out=np.zeros_like(dense, dtype=t))
        return np.sum(prod, axis=1, dtype=t)

    def transpose(self, axes: Any = None, copy: bool = False) -> Any:
        """SciPy's transpose reads the same ``data`` / ``indices`` / ``indptr`` as the other
        format (shared, unless ``copy``): so does this one, its dense matrix transposed."""
        live = self._live()
        if live is None or axes is not None or copy:
            return super().transpose(axes, copy)  # type: ignore[misc]
        other = self._csc_container if self.format == "csr" else self._csr_container
        obj: Any = object.__new__(_SUBCLASSES[next(b for b in _SUBCLASSES
                                                   if issubclass(other, b))])
        for name in ("data", "indices", "indptr"):
            object.__setattr__(obj, name, getattr(self, name))
        for name, value in (("maxprint", 50), ("_shape", self.shape[::-1]),
                            ("_has_sorted_indices", True), ("_has_canonical_format", True)):
            object.__setattr__(obj, name, value)
        object.__setattr__(obj, "_bt", (np.transpose(live[0]), np.transpose(live[1]),
                                        self._bt[2]))
        return obj

    def astype(self, dtype: Any, casting: str = "unsafe", copy: bool = True) -> Any:
        live = self._live()
        if live is None:
            return super().astype(dtype, casting, copy)  # type: ignore[misc]
        dtype = _sputils.getdtype(dtype)
        if dtype == self.dtype:
            return self.copy() if copy else self
        return batched_compressed(type(self), live[0].astype(dtype, casting=casting),
                                   live[1], self.indptr.dtype)

    def copy(self) -> Any:
        live = self._live()
        if live is None:
            return super().copy()  # type: ignore[misc]
        return batched_compressed(type(self), live[0].copy(), live[1], self.indptr.dtype)

    def _with_data(self, data: Any, copy: bool = True) -> Any:
        """``self``'s structure with ``data``, which the result holds as SciPy's does (it is
        ``self.data.real`` itself for ``.real``: shared), its indices copied unless ``copy``
        is False (then shared too); the dense matrix made again through the mask."""
        live = self._live()
        if live is None or not (is_ragged(data) or scan_level(data) is not None):
            return super()._with_data(data, copy)  # type: ignore[misc]
        dense, stored = live
        new = np.zeros_like(dense, dtype=data.dtype)
        if self.format == "csr":
            new[stored] = data
        else:
            np.transpose(new)[np.transpose(stored)] = data  # data in column order
        obj = batched_compressed(type(self), new, stored, self.indptr.dtype)
        shared = ("data",) if copy else ("data", "indices", "indptr")
        for name in shared:
            object.__setattr__(obj, name, data if name == "data" else getattr(self, name))
        object.__setattr__(obj, "_bt", (new, stored, tuple(
            _physical(getattr(obj, name)).tobytes() for name in ("data", "indices", "indptr"))))
        return obj

    def toarray(self, order: Any = None, out: Any = None) -> Any:
        live = self._live()
        if live is None or out is not None or order not in (None, "C", "F"):
            return super().toarray(order, out)  # type: ignore[misc]
        return live[0].copy(order="F" if order == "F" else "C")

    def tocsr(self, copy: bool = False) -> Any:
        live = self._live()
        if live is None or self.format == "csr":
            return super().tocsr(copy)  # type: ignore[misc]
        return batched_compressed(self._csr_container, live[0], live[1], self.indptr.dtype)

    def tocsc(self, copy: bool = False) -> Any:
        live = self._live()
        if live is None or self.format == "csc":
            return super().tocsc(copy)  # type: ignore[misc]
        return batched_compressed(self._csc_container, live[0], live[1], self.indptr.dtype)


def _subclass(base: type) -> type:
    return type(base.__name__, (BatchedCSR, base), {"__module__": __name__,
                                                     "__doc__": base.__doc__})


_SUBCLASSES = {base: _subclass(base) for base in (csr_matrix, csr_array, csc_matrix, csc_array)}


def batched_compressed(cls: type, dense: Any, stored: Any, idx: Any) -> Any:
    """A ``cls`` (CSR / CSC, matrix or array) holding, per example, the entries of ``dense``
    where ``stored``, in SciPy's canonical order (by row for CSR, by column for CSC), its
    index arrays of dtype ``idx``."""
    cls = next(b for b in _SUBCLASSES if issubclass(cls, b))
    m, n = dense.shape
    csc = getattr(cls, "_format") == "csc"
    major = (np.transpose(dense), np.transpose(stored)) if csc else (dense, stored)
    # each cell's minor index, made from the batched mask (a plain array indexed by a batched
    # mask dispatches not; no plain array meets another backend's)
    grid = np.cumsum(np.ones_like(major[1], dtype=idx), axis=1, dtype=idx) - 1
    counts = np.cumsum(np.sum(major[1], axis=1, dtype=idx), dtype=idx)
    obj: Any = object.__new__(_SUBCLASSES[cls])
    attributes = {"data": major[0][major[1]], "indices": grid[major[1]],
                  "indptr": np.concatenate([np.zeros_like(counts[:1]), counts])}
    for name, value in (*attributes.items(), ("maxprint", 50), ("_shape", (m, n)),
                        ("_has_sorted_indices", True), ("_has_canonical_format", True)):
        object.__setattr__(obj, name, value)
    held = tuple(_physical(v).tobytes() for v in attributes.values())
    object.__setattr__(obj, "_bt", (dense, stored, held))
    return obj


def _to_compressed(self: Any, copy: bool, original: Any, container: Any) -> Any:
    """COO's ``tocsr`` / ``tocsc``: batched coordinates or data give a ``BatchedCSR``."""
    level = scan_level((self.coords, self.data))
    if level is None or level.per_example or self.ndim != 2 or \
            self.dtype.type not in _sputils.supported_dtypes or \
            max(*self.shape, self.nnz) > _INT32_MAX:
        return original(self, copy)
    # SciPy's index dtype: an spmatrix's indices are downcast to int32 (they fit, above); an
    # sparray's keep the coordinates' int64, unless it has no entries (an empty CSR)
    idx = np.dtype(np.int32) if isinstance(self, spmatrix) or self.nnz == 0 else \
        self._get_index_dtype(self.coords, maxval=max(self.nnz, *self.shape))
    dense = toarray(self)
    stored = coo_todense(tuple(self.coords), np.ones_like(self.data, dtype=bool),
                         tuple(self.shape), np.bool_, False)
    return batched_compressed(container, dense, stored, idx)


def tocsr(self: Any, copy: bool = False) -> Any:
    """COO's ``tocsr``: batched coordinates or data give a ``BatchedCSR``."""
    return _to_compressed(self, copy, _tocsr, self._csr_container)


def tocsc(self: Any, copy: bool = False) -> Any:
    """COO's ``tocsc``: batched coordinates or data give a ``BatchedCSR`` of CSC's class."""
    return _to_compressed(self, copy, _tocsc, self._csc_container)


tocsr.__doc__, tocsc.__doc__ = _tocsr.__doc__, _tocsc.__doc__


def find(A: Any) -> Any:
    """``scipy.sparse.find`` of a ``BatchedCSR``: each example's stored entries that are not
    zero, by row then column (the order of SciPy's canonical COO), as selections of the
    dense matrix by that mask (ragged where the examples hold other counts), in the dtypes
    SciPy's own ``find`` gives a matrix of this class, index dtype and shape."""
    live = A._live() if isinstance(A, BatchedCSR) else None
    if live is None:
        return _find(A)
    dense, stored = live
    m, n = A.shape
    idx = A.indices.dtype
    k = 1 if m and n else 0  # (one entry, as SciPy's index dtypes may read the contents)
    indptr = np.zeros((m if A.format == "csr" else n) + 1, dtype=idx)
    indptr[1:] = k
    base = next(b for b in _SUBCLASSES if isinstance(A, b))
    probe = base((np.ones(k, dtype=A.dtype), np.zeros(k, dtype=idx), indptr), shape=(m, n))
    dtypes = [v.dtype for v in _find(probe)]
    keep = np.logical_and(stored, dense != 0)
    ones = np.ones_like(keep, dtype=np.intp)
    rows = np.cumsum(ones, axis=0, dtype=np.intp) - 1
    cols = np.cumsum(ones, axis=1, dtype=np.intp) - 1
    return tuple(v[keep].astype(t) for v, t in zip((rows, cols, dense), dtypes))


class BatchedMatrix:
    """What an ``spmatrix``'s sum over an axis gives each example: a 2-d ``np.matrix``, which
    no batch holds (a matrix is always 2-d; its ``*`` multiplies matrices, a row of it is a
    matrix). Only what reads the same for the matrix as for the 2-d array ``value`` is
    served: ``np.ravel`` (an array), ``np.asarray`` / ``np.array`` / ``np.ascontiguousarray``
    (the array), ``astype`` (another such matrix), ``shape``, ``ndim``, ``dtype``, ``size``.
    Every other use makes vmap rerun the function once per example."""

    __slots__ = ("value",)
    __array_priority__ = 10.1  # np.matrix's: a NumPy operator hands over to __array_ufunc__

    def __init__(self, value: Any):
        self.value = value

    shape = property(lambda self: self.value.shape)
    ndim = property(lambda self: self.value.ndim)
    dtype = property(lambda self: self.value.dtype)
    size = property(lambda self: self.value.size)

    def astype(self, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True,
               copy: bool = True) -> Any:
        res = self.value.astype(dtype, order=order, casting=casting, copy=copy)
        return BatchedMatrix(res) if subok else res

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if func is np.ravel and len(args) == 1 and set(kwargs) <= {"order"}:
            return np.ravel(self.value, **kwargs)  # NumPy's ravel of a matrix: an array
        if func in (np.shape, np.ndim, np.size) and len(args) == 1 and not kwargs:
            return func(self.value)
        return _refuse(self.value, f"numpy.{getattr(func, '__name__', func)} of the "
                                   f"np.matrix a sparse matrix's sum gives")

    def __array_ufunc__(self, ufunc: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        return _refuse(self.value, f"numpy.{ufunc.__name__} of the np.matrix a sparse "
                                   f"matrix's sum gives")

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return _refuse(self.value, "converting the np.matrix a sparse matrix's sum gives")

    def __getattr__(self, name: str) -> Any:
        return _refuse(self.value, f"np.matrix.{name} of the matrix a sparse matrix's sum "
                                   f"gives")

    def _use(self, *args: Any) -> Any:
        return _refuse(self.value, "the np.matrix a sparse matrix's sum gives")

    def __repr__(self) -> str:
        return f"<np.matrix per example, batched: {self.value!r}>"


for _name in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow", "and", "or",
              "xor", "lshift", "rshift", "divmod"):
    for _form in ("__{}__", "__r{}__", "__i{}__"):
        setattr(BatchedMatrix, _form.format(_name), BatchedMatrix._use)
for _name in ("lt", "le", "gt", "ge", "eq", "ne", "neg", "pos", "abs", "invert", "getitem",
              "setitem", "iter", "len", "bool", "int", "float", "complex", "index", "contains",
              "round"):
    setattr(BatchedMatrix, f"__{_name}__", BatchedMatrix._use)


def _convert_matrix(name: str, original: Any, value: BatchedMatrix, args: tuple,
                    kwargs: dict) -> Any:
    """NumPy's converting functions on a ``BatchedMatrix`` (``conversions.CONVERTERS``): an
    ndarray of the matrix's data where NumPy gives one (no ``subok``), else the rerun."""
    if name in ("asarray", "ascontiguousarray", "asfortranarray") or \
            (name == "array" and not kwargs.get("subok", False) and len(args) < 5):
        return function_call(original, (value.value, *args), kwargs, value.value)
    return _refuse(value.value, f"numpy.{name} of the np.matrix a sparse matrix's sum gives")


#: attributes ``batchtensor.foreign`` replaces while a vmap runs: (class or module, name,
#: value); ``find`` in ``scipy.sparse``, where code calls it (``sp.find``)
METHODS = [(_coo._coo_base, "toarray", toarray), (_compressed._cs_matrix, "toarray", cs_toarray),
           (_coo._coo_base, "tocsr", tocsr),
           (_coo._coo_base, "tocsc", tocsc), (scipy.sparse, "find", find)]
#: batched types of this module that NumPy's converting functions hand over (conversions.py)
CONVERTERS = {BatchedMatrix: _convert_matrix}
