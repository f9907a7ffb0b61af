"""The Python operators of BatchedTensor (``x + y``, ``2 * x``, ``x += y``, ``-x``, ``x @ w``).

Each operator *is* the aligned fast path of its ufunc (``plumbing``): when the operands line
up it calls the ufunc on the physical values directly, ~0.3 µs, instead of the ~1.5 µs that
NumPy's ``__array_ufunc__`` protocol costs before our code even runs. Anything else goes to the
dispatcher, as ``np.add(x, y)`` would. Importing this module installs them on the class.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .dispatch import ufunc_call
from .errors import BatchingError
from .plumbing import (SCALAR_TYPES, binary_fast_paths, inplace_fast_path, matmul_fast,
                       unary_fast_path)
from .registry import RECORDERS, Path, record, slots
from .scalars import scalar_sqrt_power
from .tensor import BatchedTensor, new_batched, scalar_per_example

__all__ = ["BINARY", "COMPARISON", "UNARY"]

BINARY: dict[str, np.ufunc] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
    "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "lshift": np.left_shift, "rshift": np.right_shift,
}
COMPARISON: dict[str, np.ufunc] = {
    "lt": np.less, "le": np.less_equal, "eq": np.equal, "ne": np.not_equal,
    "gt": np.greater, "ge": np.greater_equal}
UNARY: dict[str, np.ufunc] = {"neg": np.negative, "pos": np.positive, "abs": np.absolute,
                              "invert": np.invert}


def _general(ufunc, a: Any, b: Any) -> Any:
    """``a op b`` through the dispatcher; NotImplemented for an operand that opts out of NumPy's
    operators (``__array_ufunc__ = None``), so that Python tries its reflected operator."""
    if getattr(type(a), "__array_ufunc__", False) is None \
            or getattr(type(b), "__array_ufunc__", False) is None:
        return NotImplemented
    if isinstance(a, np.ma.MaskedArray) or isinstance(b, np.ma.MaskedArray):
        # per example ``x + m`` is MaskedArray's operator, numpy.ma's function
        return slots.masked_operator(ufunc, a, b)
    return ufunc_call(ufunc, "__call__", (a, b), {})


def _general_inplace(ufunc, x: BatchedTensor, other: Any) -> BatchedTensor:
    if ufunc_call(ufunc, "__call__", (x, other), {"out": (x,)}) is NotImplemented:
        # ``other``'s type handles NumPy's protocol first (an unpromoted buffer of
        # batchtensor.buffers, a type of its own): NumPy asks it, as for ufunc(x, other, out=x)
        ufunc(x, other, out=(x,))
    return x


def _dispatched(ufunc):
    """Operators that always take the dispatcher (``@`` after its own fast path, divmod, whose
    two results the aligned path does not make)."""
    def forward(self, other):
        return _general(ufunc, self, other)

    def reflected(self, other):
        return _general(ufunc, other, self)

    def inplace(self, other):
        if scalar_per_example(self):
            return NotImplemented
        return _general_inplace(ufunc, self, other)

    return forward, reflected, inplace


def _array_power(forward, inplace):
    """``x ** 2`` on an array is not ``np.power(x, 2)``: ndarray's operator computes ``x ** 2``,
    ``x ** -1`` and ``x ** 0.5`` (Python int / float exponents) as np.square / reciprocal /
    sqrt, which differ in the last bits for complex values and give int8 for ``bool ** 2``.
    Where an example is an array, the physical value's own operator does what it would; a
    NumPy scalar example takes np.power, as the scalar's operator does."""
    def operator_applies(self, other) -> bool:  # a Python exponent, an array per example
        t = type(other)
        if (t is int or t is float) and not scalar_per_example(self):
            level = self._level
            if not level.alive:
                level.check_alive()
            if RECORDERS:
                record(np.power, Path.BOXED)
            return True
        return False

    def power(self, other):
        if operator_applies(self, other):
            return new_batched(self._value ** other, self._bdim, self._level)
        if type(other) in SCALAR_TYPES and other == 0.5 and self._value.dtype.kind == "f" \
                and scalar_per_example(self):
            return scalar_sqrt_power(self, forward(self, other))
        return forward(self, other)

    def inplace_power(self, other):
        if operator_applies(self, other):
            v = self._value
            v **= other
            if v is not self._value:
                raise BatchingError("x **= y: the physical value did not update in place")
            return self
        return inplace(self, other)

    return power, inplace_power


def _matmul_operators(forward, reflected):
    def matmul(self, other):
        res = matmul_fast(self, other)
        return forward(self, other) if res is None else res

    def rmatmul(self, other):
        res = matmul_fast(other, self)
        return reflected(self, other) if res is None else res

    return matmul, rmatmul


def _install() -> None:
    for name, uf in BINARY.items():
        forward, reflected, _ = binary_fast_paths(uf, _general)
        setattr(BatchedTensor, f"__{name}__", forward)
        setattr(BatchedTensor, f"__r{name}__", reflected)
        setattr(BatchedTensor, f"__i{name}__", inplace_fast_path(uf, _general_inplace))
    for name, uf in COMPARISON.items():
        setattr(BatchedTensor, f"__{name}__", binary_fast_paths(uf, _general)[0])
    for name, uf in UNARY.items():
        setattr(BatchedTensor, f"__{name}__", unary_fast_path(uf, f"__{name}__"))
    power, inplace_power = _array_power(
        binary_fast_paths(np.power, _general)[0], inplace_fast_path(np.power, _general_inplace))
    setattr(BatchedTensor, "__pow__", power)
    setattr(BatchedTensor, "__ipow__", inplace_power)
    fwd, ref, inp = _dispatched(np.matmul)
    matmul, rmatmul = _matmul_operators(fwd, ref)
    setattr(BatchedTensor, "__matmul__", matmul)
    setattr(BatchedTensor, "__rmatmul__", rmatmul)
    setattr(BatchedTensor, "__imatmul__", inp)
    fwd, ref, _ = _dispatched(np.divmod)
    setattr(BatchedTensor, "__divmod__", fwd)
    setattr(BatchedTensor, "__rdivmod__", ref)


_install()
