"""Every Python operator on a BatchedTensor: binary (also reflected, with Python scalars, NumPy
scalars and plain arrays on either side), in-place on a batched target, unary, ``divmod``,
``round`` and ``@``; NEP 50 weak-scalar promotion.

Plain arrays on the left and operands at different batch axes come from the sweep itself: it
maps every array argument with in_axes None / 0 / last / middle.
"""

from __future__ import annotations

import operator

import numpy as np

from .core import OpInfo, SampleInput
from .samples import make_array, with_nans

F64, F32, I64, U8, I8, C128, B = (np.float64, np.float32, np.int64, np.uint8, np.int8,
                                  np.complex128, np.bool_)


def _right(rng, shape, dtype, nonneg: bool):
    """A right operand: non-negative for shifts and integer powers."""
    if nonneg and np.dtype(dtype).kind in "iu":
        return make_array(rng, shape, dtype, low=0, high=5)
    return make_array(rng, shape, dtype)


def _scalars(dtype, nonneg: bool) -> list:
    """Python scalars of every kind the dtype takes, and a NumPy scalar (not weak)."""
    kind = np.dtype(dtype).kind
    if kind == "b":
        return [True, np.bool_(False)]
    if kind in "iu":
        return [3, True, np.int32(2)] + ([] if nonneg else [-2])
    out = [2, 1.5, np.float32(0.5), np.float64(-2.0)]
    return out + ([1 - 2j] if kind == "c" else [])


def binary_samples(*, nonneg: bool = False, scalars: bool = True):
    def gen(rng, dtype):
        for sa, sb in [((3, 4), (3, 4)), ((3, 4), (4,)), ((4,), (3, 4)), ((), (2, 3)),
                       ((2, 0, 3), (3,)), ((4, 1), (1, 5))]:
            yield SampleInput((make_array(rng, sa, dtype), _right(rng, sb, dtype, nonneg)), {},
                              f"{sa} op {sb}")
        yield SampleInput((make_array(rng, (3,), dtype), _right(rng, (4,), dtype, nonneg)), {},
                          "shapes do not broadcast")
        if scalars:
            for s in _scalars(dtype, nonneg):
                yield SampleInput((make_array(rng, (2, 3), dtype), s), {},
                                  f"array op {type(s).__name__}")
                if not nonneg or np.dtype(dtype).kind not in "iu":
                    yield SampleInput((s, make_array(rng, (2, 3), dtype)), {},
                                      f"{type(s).__name__} op array (reflected)")
    return gen


def _pow_extra(rng, dtype):
    # x ** 2, x ** -1, x ** 0.5 with a Python int / float: ndarray's operator takes np.square /
    # reciprocal / sqrt (other bits for complex, int8 for bool ** 2); a 0-d example is a scalar
    for e in (2, -1, 0.5, 2.0):
        x = with_nans(rng, make_array(rng, (5,), dtype), frac=0.2)
        if np.dtype(dtype).kind in "fc":
            x[0] = -0.0
        if np.dtype(dtype).kind in "biu" and e == -1:
            continue
        yield SampleInput((x, e), {}, f"array ** {e!r}")
        yield SampleInput((make_array(rng, (), dtype), e), {}, f"0-d ** {e!r}")
    if np.dtype(dtype).kind in "iu":
        e = make_array(rng, (3,), dtype, low=0, high=4)
        e[1] = -1
        yield SampleInput((make_array(rng, (3,), dtype), e), {},
                          "integers to negative integer powers raise")
        yield SampleInput((make_array(rng, (3,), dtype), -1), {}, "array ** -1 raises")


def _with(*gens):
    def gen(rng, dtype):
        for g in gens:
            yield from g(rng, dtype)
    return gen


def _eq_none(rng, dtype):
    yield SampleInput((make_array(rng, (3,), dtype), None), {}, "compare with None")


_ARITH = (F64, F32, I64, C128)
_BINARY = [
    # (name, operator, ufunc, dtypes, right operand non-negative for integers)
    ("add", operator.add, np.add, _ARITH + (B,), False),
    ("sub", operator.sub, np.subtract, _ARITH, False),
    ("mul", operator.mul, np.multiply, _ARITH + (B,), False),
    ("truediv", operator.truediv, np.divide, _ARITH, False),
    ("floordiv", operator.floordiv, np.floor_divide, (F64, I64, U8), False),
    ("mod", operator.mod, np.remainder, (F64, I64, U8), False),
    ("pow", operator.pow, np.power, (F64, F32, I64, C128, B), True),
    ("and", operator.and_, np.bitwise_and, (I64, B, U8), False),
    ("or", operator.or_, np.bitwise_or, (I64, B), False),
    ("xor", operator.xor, np.bitwise_xor, (I64, B), False),
    ("lshift", operator.lshift, np.left_shift, (I64, U8), True),
    ("rshift", operator.rshift, np.right_shift, (I64, U8), True),
    ("eq", operator.eq, np.equal, (F64, I64, C128, B), False),
    ("ne", operator.ne, np.not_equal, (F64, I64, B), False),
    ("lt", operator.lt, np.less, (F64, I64), False),
    ("le", operator.le, np.less_equal, (F64, I64), False),
    ("gt", operator.gt, np.greater, (F64, I64), False),
    ("ge", operator.ge, np.greater_equal, (F64, I64), False),
]
_EXTRA = {"pow": _pow_extra, "eq": _eq_none, "ne": _eq_none}


# ---- in-place operators ------------------------------------------------------------------------
def _inplace_op(name: str):
    iop = getattr(operator, f"i{name}")

    def call(a, b):
        a = iop(a, b)
        return a

    call.__name__ = f"operator.i{name}"
    return call


def inplace_samples(*, nonneg: bool = False):
    def gen(rng, dtype):
        a = lambda shape: make_array(rng, shape, dtype)  # noqa: E731
        yield SampleInput((a((3, 4)), _right(rng, (3, 4), dtype, nonneg)), {}, "same shape")
        yield SampleInput((a((3, 4)), _right(rng, (4,), dtype, nonneg)), {}, "b broadcasts")
        yield SampleInput((a(()), _right(rng, (), dtype, nonneg)), {}, "0-d")
        yield SampleInput((a((2, 0)), _right(rng, (0,), dtype, nonneg)), {}, "size-0")
        yield SampleInput((a((4,)), _right(rng, (3, 4), dtype, nonneg)), {},
                          "b larger than the target raises")
        yield SampleInput((a((3,)), _scalars(dtype, nonneg)[0]), {}, "Python scalar")
        yield SampleInput((a((3,)), make_array(rng, (3,), F64, low=0, high=3)), {},
                          "float64 b (raises for an integer target)")
    return gen


_INPLACE = [
    # (name, ufunc, dtypes, non-negative right operand)
    ("add", np.add, (F64, I64, F32), False), ("sub", np.subtract, (F64, I64), False),
    ("mul", np.multiply, (F64, I64, C128), False), ("truediv", np.divide, (F64, I64), False),
    ("floordiv", np.floor_divide, (F64, I64), False), ("mod", np.remainder, (F64, I64), False),
    ("pow", np.power, (F64, I64, C128), True), ("and", np.bitwise_and, (I64, B), False),
    ("or", np.bitwise_or, (I64, B), False), ("xor", np.bitwise_xor, (I64, B), False),
    ("lshift", np.left_shift, (I64,), True), ("rshift", np.right_shift, (I64,), True),
]


# ---- unary, divmod, round, matmul ---------------------------------------------------------------
def unary_samples(rng, dtype):
    for shape in [(), (0,), (5,), (2, 3, 4)]:
        yield SampleInput((make_array(rng, shape, dtype),), {}, f"{shape}")
    yield SampleInput((make_array(rng, (3, 4), dtype, noncontiguous=True),), {}, "non-contig")


def _unsupported(dt):
    def gen(rng, dtype):
        yield from unary_samples(rng, dtype)
        if dtype == F64:
            yield SampleInput((make_array(rng, (3,), dt),), {},
                              f"{np.dtype(dt)} raises TypeError")
    return gen


_UNARY = [
    ("neg", operator.neg, np.negative, (F64, I64, C128), _unsupported(B)),
    ("pos", operator.pos, np.positive, (F64, I64), _unsupported(B)),
    ("abs", abs, np.absolute, (F64, I64, C128, B), unary_samples),
    ("invert", operator.invert, np.invert, (I64, B, U8), unary_samples),
]


def _invert_float(rng, dtype):
    yield SampleInput((make_array(rng, (3,), F64),), {}, "~float raises TypeError")


def _divmod_samples(rng, dtype):
    yield from binary_samples(scalars=False)(rng, dtype)
    yield SampleInput((make_array(rng, (3,), dtype), 3), {}, "divmod(array, 3)")
    yield SampleInput((7, make_array(rng, (3,), dtype)), {}, "divmod(7, array)")
    yield SampleInput((np.float64(7.5), make_array(rng, (3,), dtype)), {},
                      "divmod(np.float64, array)")


def _round_op(x, *nd):
    """``round()`` of a 0-d example is the NumPy scalar's: x[()] is a scalar per example."""
    return round(x[()] if x.ndim == 0 else x, *nd)


def _round_samples(rng, dtype):
    yield SampleInput((make_array(rng, (), dtype),), {}, "round(scalar): a Python int")
    yield SampleInput((make_array(rng, (), dtype), 1), {}, "round(scalar, 1)")
    yield SampleInput((np.asarray(make_array(rng, (), dtype) * 100), -1), {}, "round(scalar, -1)")
    yield SampleInput((make_array(rng, (3,), dtype),), {}, "round(array) raises TypeError")
    yield SampleInput((make_array(rng, (3,), dtype), 2), {}, "round(array, 2) raises TypeError")


def _round_errors(rng, dtype):
    x = make_array(rng, (), dtype)
    if rng.random() < 0.5:
        x[()] = np.nan
    yield SampleInput((x,), {}, "round(nan) raises ValueError")
    x = make_array(rng, (), dtype)
    if rng.random() < 0.5:
        x[()] = -np.inf
    yield SampleInput((x,), {}, "round(inf) raises OverflowError")


def _matmul_samples(rng, dtype):
    for sa, sb in [((3, 4), (4,)), ((4,), (4, 2)), ((4,), (4,)), ((2, 3), (3, 4)),
                   ((5, 2, 3), (3, 2)), ((0, 3), (3, 2)), ((3, 4), (3,)), ((), (3,))]:
        yield SampleInput((make_array(rng, sa, dtype), make_array(rng, sb, dtype)), {},
                          f"{sa} @ {sb}")


_IMATMUL_LOOP = ("a plain target: ndarray.__imatmul__ passes axes=, which the matmul rule "
                 "hands to the loop, and the loop refuses the unbatched out= (BatchingError)")


def _imatmul_samples(rng, dtype):
    for sa, sb in [((3, 3), (3, 3)), ((2, 3), (3, 3)), ((3,), (3, 3)), ((2, 3), (3, 4))]:
        yield SampleInput((make_array(rng, sa, dtype), make_array(rng, sb, dtype)), {},
                          f"{sa} @= {sb}", loop_reason=_IMATMUL_LOOP)


def _nep50_samples(rng, dtype):
    a = lambda: make_array(rng, (3,), dtype)  # noqa: E731
    kind = np.dtype(dtype).kind
    yield SampleInput((a(), 2.0), {}, "array + Python float")
    yield SampleInput((a(), 2), {}, "array + Python int")
    yield SampleInput((a(), np.float64(2.0)), {}, "array + np.float64 (strong)")
    yield SampleInput((a(), np.float32(2.0)), {}, "array + np.float32 (strong)")
    yield SampleInput((a(), 1j), {}, "array + Python complex")
    if kind in "iu":
        yield SampleInput((a(), 300), {}, "Python int out of the dtype's range raises")


def _nep50_reflected(rng, dtype):
    for s in _nep50_samples(rng, dtype):
        yield SampleInput(s.args[::-1], {}, s.name + " (reflected)")


def _ops() -> list:
    ops = []
    for name, fn, uf, dts, nonneg in _BINARY:
        gen = binary_samples(nonneg=nonneg)
        if name in _EXTRA:
            gen = _with(gen, _EXTRA[name])
        ops.append(OpInfo(f"operator.{name}", fn, gen, "boxed", dtypes=dts, covers=uf))
    for name, uf, dts, nonneg in _INPLACE:
        ops.append(OpInfo(f"operator.i{name}", _inplace_op(name), inplace_samples(nonneg=nonneg),
                          "boxed", dtypes=dts, covers=uf, inplace=0))
    for name, fn, uf, dts, gen in _UNARY:
        ops.append(OpInfo(f"operator.{name}", fn, gen, "boxed", dtypes=dts, covers=uf))
    ops += [
        OpInfo("operator.invert.float", operator.invert, _invert_float, "boxed",
               covers=np.invert),
        OpInfo("operator.divmod", divmod, _divmod_samples, "boxed", dtypes=(F64, I64),
               covers=np.divmod),
        OpInfo("operator.round", _round_op, _round_samples, "rule", dtypes=(F64, F32, I64, U8),
               covers=round),
        OpInfo("operator.round.errors", _round_op, _round_errors, "rule", dtypes=(F64,),
               covers=round),
        OpInfo("operator.matmul", operator.matmul, _matmul_samples, "rule",
               dtypes=(F64, I64), covers=np.matmul),
        OpInfo("operator.imatmul", _inplace_op("matmul"), _imatmul_samples, "rule",
               dtypes=(F64,), covers=np.matmul, inplace=0),
        OpInfo("operator.nep50", operator.add, _nep50_samples, "boxed", dtypes=(F32, U8, I8),
               covers=np.add),
        OpInfo("operator.nep50.reflected", operator.add, _nep50_reflected, "boxed",
               dtypes=(F32, U8, I8), covers=np.add),
    ]
    return ops


OPS = _ops()
