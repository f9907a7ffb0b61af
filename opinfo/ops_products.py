"""Products: dot vdot inner outer kron matmul (and ``@``) vecdot matvec vecmat tensordot einsum
einsum_path trace cross convolve correlate, and the ndarray methods dot / trace."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import OUT_LOOP, make_array, out_variant

F64, I32, I64, C128, BOOL = np.float64, np.int32, np.int64, np.complex128, np.bool_


def _arrays(rng, dtype, *shapes, nc=()):
    """Arrays of ``shapes`` (those whose index is in ``nc`` non-contiguous)."""
    return tuple(make_array(rng, s, dtype, noncontiguous=i in nc) for i, s in enumerate(shapes))


def _pairs(rng, dtype, pairs, **kw):
    for sa, sb in pairs:
        yield SampleInput(_arrays(rng, dtype, sa, sb), dict(kw), f"{sa}.{sb}")


# ---- dot, inner, vdot, outer, kron --------------------------------------------------------------
_DOT_PAIRS = [((), ()), ((), (3,)), ((3, 4), ()), ((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)),
              ((3, 4), (4, 5)), ((2, 3, 4), (4,)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)),
              ((2, 3, 4), (2, 4, 5)), ((4,), (2, 4, 5)), ((0, 4), (4, 5)), ((3, 0), (0, 5)),
              ((2, 0), (3, 0, 2))]


def dot_samples(rng, dtype):
    yield from _pairs(rng, dtype, _DOT_PAIRS)
    yield SampleInput(_arrays(rng, dtype, (3, 4), (4, 5), nc=(0, 1)), {}, "non-contiguous")
    yield SampleInput((2, make_array(rng, (3,), dtype)), {}, "Python int (not weak in dot)")
    yield SampleInput((make_array(rng, (3, 4), dtype), make_array(rng, (4,), np.int8)), {},
                      "mixed dtypes")
    yield SampleInput(_arrays(rng, dtype, (3, 4), (5,)), {}, "not aligned")
    yield SampleInput(_arrays(rng, dtype, (2, 3, 4), (2, 5, 2)), {}, "not aligned N-d")


def inner_samples(rng, dtype):
    pairs = [((), (3,)), ((4,), (4,)), ((3, 4), (4,)), ((4,), (2, 4)), ((3, 4), (2, 4)),
             ((2, 3, 4), (5, 4)), ((2, 3, 4), (2, 5, 4)), ((0, 4), (3, 4)), ((2, 0), (0,))]
    yield from _pairs(rng, dtype, pairs)
    yield SampleInput((3, make_array(rng, (3,), dtype)), {}, "Python int")
    yield SampleInput(_arrays(rng, dtype, (3, 4), (4, 3)), {}, "last dims differ")


def vdot_samples(rng, dtype):
    pairs = [((), ()), ((4,), (4,)), ((2, 3), (3, 2)), ((2, 3), (6,)), ((0,), (0,)),
             ((2, 2, 2), (8,))]
    yield from _pairs(rng, dtype, pairs)
    yield SampleInput(_arrays(rng, dtype, (3, 4), (3, 4), nc=(0,)), {}, "non-contiguous")
    yield SampleInput(_arrays(rng, dtype, (3,), (4,)), {}, "different lengths")


def outer_samples(rng, dtype):
    pairs = [((3,), (4,)), ((2, 3), (4,)), ((), (3,)), ((0,), (3,)), ((2, 2), (3, 1))]
    yield from _pairs(rng, dtype, pairs)
    yield SampleInput((2, make_array(rng, (3,), dtype)), {}, "Python int")


def kron_samples(rng, dtype):
    pairs = [((2,), (3,)), ((2, 3), (3, 2)), ((2, 3), (4,)), ((4,), (2, 3)), ((2, 1, 3), (2, 2)),
             ((), (2, 3)), ((2, 3), ()), ((0, 3), (2, 2)), ((2, 2, 2), (1, 2, 1))]
    yield from _pairs(rng, dtype, pairs)
    yield SampleInput(_arrays(rng, dtype, (2, 3), (2, 2), nc=(0,)), {}, "non-contiguous")
    yield SampleInput((2, make_array(rng, (2, 2), dtype)), {}, "Python int")


# ---- matmul -------------------------------------------------------------------------------------
_MATMUL_PAIRS = [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((3, 4), (4, 5)),
                 ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)),
                 ((4,), (2, 4, 5)), ((2, 3, 4), (4,)), ((0, 4), (4, 3)), ((3, 0), (0, 2)),
                 ((2, 0, 3, 4), (4, 2))]


def matmul_samples(rng, dtype):
    yield from _pairs(rng, dtype, _MATMUL_PAIRS)
    yield SampleInput(_arrays(rng, dtype, (3, 4), (4, 2), nc=(0, 1)), {}, "non-contiguous")
    # matrix @ vector and vector @ matrix: the operator fast path (one GEMM) when the matrix
    # is shared
    yield SampleInput(_arrays(rng, dtype, (3, 4), (4,), nc=(0, 1)), {}, "non-contiguous M @ v")
    yield SampleInput(_arrays(rng, dtype, (4,), (4, 3), nc=(0, 1)), {}, "non-contiguous v @ M")
    yield SampleInput(_arrays(rng, dtype, (3, 4), (5,)), {}, "M @ v core mismatch")
    yield SampleInput(_arrays(rng, dtype, (3, 4), (4, 2)), {"dtype": np.complex128}, "dtype=")
    yield SampleInput(_arrays(rng, dtype, (), (3,)), {}, "0-d raises")
    yield SampleInput(_arrays(rng, dtype, (3, 4), ()), {}, "0-d raises (b)")
    # a 0-d example beside a plain matrix whose first axis is as long as the batch: the
    # physical (B,) @ w would be a valid product of the wrong axes
    for b in (2, 3, 4, 5):
        yield SampleInput(_arrays(rng, dtype, (), (b, 3)), {}, f"0-d @ ({b}, 3) raises")
        yield SampleInput(_arrays(rng, dtype, (3, b), ()), {}, f"(3, {b}) @ 0-d raises")
    yield SampleInput(_arrays(rng, dtype, (3, 4), (5, 2)), {}, "core mismatch")
    yield SampleInput(_arrays(rng, dtype, (2, 3, 4), (3, 4, 2)), {}, "loop dims mismatch")


def matmul_out_samples(rng, dtype):
    for sa, sb, so in [((3, 4), (4, 2), (3, 2)), ((4,), (4, 2), (2,)), ((3, 4), (4,), (3,)),
                       ((4,), (4,), ()), ((2, 3, 4), (4,), (2, 3)), ((3, 4), (4, 2), (2, 3, 2))]:
        a, b = _arrays(rng, dtype, sa, sb)
        yield SampleInput((a, b, make_array(rng, so, np.complex128)), {}, f"{sa}@{sb} -> {so}")
    a, b = _arrays(rng, dtype, (3, 4), (4, 2))
    yield SampleInput((a, b, make_array(rng, (3, 3), np.complex128)), {}, "out shape mismatch")


def _matmul_out(a, b, out):
    return np.matmul(a, b, out=out)


def _matmul_op(a, b):
    return a @ b


# ---- tensordot ----------------------------------------------------------------------------------
def tensordot_samples(rng, dtype):
    cases = [((2, 3, 4), (3, 4, 5), {}), ((3, 4), (4, 5), {"axes": 1}),
             ((2, 3), (4,), {"axes": 0}), ((3, 2, 4), (2, 3, 5), {"axes": ([1, 0], [0, 1])}),
             ((3, 4), (4, 5), {"axes": ([-1], [0])}), ((3, 4), (5, 3), {"axes": (0, 1)}),
             ((0, 4), (4, 2), {"axes": 1}), ((2, 0), (0, 3), {"axes": 1}),
             ((3, 4), (4, 5), {"axes": -1})]
    for sa, sb, kw in cases:
        yield SampleInput(_arrays(rng, dtype, sa, sb), kw, f"{sa}.{sb} {kw}")
    yield SampleInput(_arrays(rng, dtype, (2, 3, 4), (3, 4, 5), nc=(0, 1)), {}, "non-contiguous")
    yield SampleInput(_arrays(rng, dtype, (3, 4), (5, 3)), {"axes": 1}, "shape mismatch")
    yield SampleInput(_arrays(rng, dtype, (2, 3), (3, 2)), {"axes": ([0, 1], [1, 0])},
                      "size mismatch, equal products")
    yield SampleInput(_arrays(rng, dtype, (3, 3), (3, 3)), {"axes": ([0, 0], [0, 1])},
                      "duplicate axes")
    yield SampleInput(_arrays(rng, dtype, (3, 4), (4, 5)), {"axes": ([2], [0])},
                      "axis out of range")


# ---- einsum, einsum_path ------------------------------------------------------------------------
_EINSUM = [("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("ii->i", [(3, 3)]),
           ("ii", [(3, 3)]), ("i,i", [(4,), (4,)]), ("i,j->ij", [(2,), (3,)]),
           ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]), ("...ij,jk", [(2, 3, 4), (4, 5)]),
           ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ij->ji", [(3, 4)]), ("ijk->", [(2, 3, 4)]),
           ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("aB,Bc", [(2, 3), (3, 4)]),
           ("Ba", [(2, 3)]), (",i->i", [(), (3,)]), ("i->", [(0,)]),
           ("ij , jk -> ik", [(2, 3), (3, 2)]),
           ("iij->ij", [(3, 3, 2)]), ("i...->...", [(3, 2)])]


def einsum_samples(rng, dtype):
    for subs, shapes in _EINSUM:
        yield SampleInput((subs,) + _arrays(rng, dtype, *shapes), {}, subs)
    yield SampleInput(("ij,jk,kl->il",) + _arrays(rng, dtype, (2, 3), (3, 4), (4, 2)),
                      {"optimize": True}, "optimize=True")
    yield SampleInput(("ij,jk->ik",) + _arrays(rng, dtype, (2, 3), (3, 4)),
                      {"optimize": "greedy"}, "optimize='greedy'")
    yield SampleInput(("ij,jk->ik",) + _arrays(rng, dtype, (2, 3), (3, 4), nc=(0, 1)), {},
                      "non-contiguous")
    yield SampleInput(("ij,j->i",) + _arrays(rng, dtype, (2, 3), (3,)),
                      {"dtype": np.complex128}, "dtype=")
    a, b = _arrays(rng, dtype, (3, 4), (4, 2))
    yield SampleInput((a, [0, 1], b, [1, 2], [0, 2]), {}, "interleaved form")
    yield SampleInput((a, [Ellipsis, 1]), {}, "interleaved form, implicit output")
    yield SampleInput(("ij,jk->ik",) + _arrays(rng, dtype, (3, 4), (5, 2)), {}, "size mismatch")
    yield SampleInput(("ij,jk->ik",) + _arrays(rng, dtype, (3, 4)), {}, "missing operand")
    yield SampleInput(("ij->ik",) + _arrays(rng, dtype, (3, 4)), {}, "bad output label")


def einsum_out_samples(rng, dtype):
    for subs, shapes, so in [("ij,jk->ik", [(3, 4), (4, 2)], (3, 2)), ("i,i", [(4,), (4,)], ()),
                             ("ii,i->i", [(3, 3), (3,)], (3,))]:
        yield SampleInput((subs, *_arrays(rng, dtype, *shapes), make_array(rng, so, C128)), {},
                          subs)


def _einsum_out(subs, *operands):
    *ops, out = operands
    return np.einsum(subs, *ops, out=out)


def _einsum_path(*args, **kwargs):
    path, report = np.einsum_path(*args, **kwargs)
    return path[1:], np.frombuffer(report.encode(), dtype=np.uint8)


def einsum_path_samples(rng, dtype):
    yield SampleInput(("ij,jk,kl->il",) + _arrays(rng, dtype, (2, 3), (3, 40), (40, 2)), {},
                      "greedy")
    yield SampleInput(("ij,jk,kl->il",) + _arrays(rng, dtype, (20, 3), (3, 4), (4, 2)),
                      {"optimize": "optimal"}, "optimal")
    yield SampleInput(("...i,...i",) + _arrays(rng, dtype, (2, 3), (3,)), {}, "ellipsis")


# ---- trace --------------------------------------------------------------------------------------
def trace_samples(rng, dtype):
    for shape, kw in [((3, 4), {}), ((4, 3), {"offset": 1}), ((3, 4), {"offset": -1}),
                      ((3, 3), {"offset": 5}), ((2, 3, 4), {}),
                      ((2, 3, 4), {"axis1": 1, "axis2": 2}),
                      ((2, 3, 4), {"axis1": -1, "axis2": 0}), ((0, 3), {}),
                      ((3, 4), {"dtype": np.float32}), ((3, 4), {"dtype": np.int8})]:
        yield SampleInput((make_array(rng, shape, dtype),), kw, f"{shape} {kw}")
    yield SampleInput((make_array(rng, (3, 4), dtype, noncontiguous=True),), {}, "non-contiguous")
    yield SampleInput((make_array(rng, (4,), dtype),), {}, "1-d raises")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"axis1": 0, "axis2": 0}, "same axes")
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"axis2": 2}, "axis out of range")


def _method(name):
    def call(x, *args, **kwargs):
        return getattr(x, name)(*args, **kwargs)

    call.__name__ = f"ndarray.{name}"
    return call


# ---- vecdot, matvec, vecmat ---------------------------------------------------------------------
def vecdot_samples(rng, dtype):
    yield from _pairs(rng, dtype, [((4,), (4,)), ((3, 4), (4,)), ((3, 4), (2, 3, 4)),
                                   ((0, 4), (4,)), ((3, 0), (3, 0))])
    yield SampleInput(_arrays(rng, dtype, (4, 3), (4, 3)), {"axis": 0}, "axis=0")
    yield SampleInput(_arrays(rng, dtype, (2, 4, 3), (4, 3)), {"axis": -2}, "axis=-2")
    yield SampleInput(_arrays(rng, dtype, (3, 4), (3,)), {"axis": 0}, "axis=0, 1-d x2")
    yield SampleInput(_arrays(rng, dtype, (3, 4), (3, 4), nc=(0,)), {}, "non-contiguous")
    yield SampleInput(_arrays(rng, dtype, (3, 4), (3, 4)), {"axis": 2}, "axis out of range")
    yield SampleInput(_arrays(rng, dtype, (), (3,)), {}, "0-d raises")
    yield SampleInput(_arrays(rng, dtype, (3,), (4,)), {}, "size mismatch")


def matvec_samples(rng, dtype):
    yield from _pairs(rng, dtype, [((3, 4), (4,)), ((2, 3, 4), (4,)), ((3, 4), (2, 4)),
                                   ((0, 4), (4,))])
    yield SampleInput(_arrays(rng, dtype, (3, 4), ()), {}, "0-d raises")
    yield SampleInput(_arrays(rng, dtype, (4,), (4,)), {}, "1-d matrix raises")


def vecmat_samples(rng, dtype):
    yield from _pairs(rng, dtype, [((3,), (3, 4)), ((2, 3), (3, 4)), ((3,), (2, 3, 4))])
    yield SampleInput(_arrays(rng, dtype, (3,), (3,)), {}, "1-d matrix raises")


# ---- cross --------------------------------------------------------------------------------------
def cross_samples(rng, dtype):
    cases = [((3,), (3,), {}), ((4, 3), (3,), {}), ((3,), (4, 3), {}), ((2,), (2,), {}),
             ((2,), (3,), {}), ((3,), (2,), {}), ((4, 2), (2,), {}), ((3, 4), (4, 3), {"axisa": 0}),
             ((4, 3), (3, 4), {"axisb": 0}), ((4, 3), (4, 3), {"axisc": 0}),
             ((3, 4), (3, 4), {"axis": 0}), ((5, 1, 3), (2, 3), {}),
             ((2, 3), (5, 1, 3), {"axisc": 1}),
             ((0, 3), (3,), {})]
    for sa, sb, kw in cases:
        yield SampleInput(_arrays(rng, dtype, sa, sb), kw, f"{sa}x{sb} {kw}")
    yield SampleInput(_arrays(rng, dtype, (4, 3), (4, 3), nc=(0,)), {}, "non-contiguous")
    yield SampleInput(_arrays(rng, dtype, (4,), (4,)), {}, "bad vector size")
    yield SampleInput(_arrays(rng, dtype, (), (3,)), {}, "0-d raises")
    yield SampleInput(_arrays(rng, dtype, (3,), (3,)), {"axisa": 1}, "axisa out of range")
    yield SampleInput(_arrays(rng, dtype, (4, 3), (3,)), {"axisc": 2}, "axisc out of range")


# ---- convolve, correlate ------------------------------------------------------------------------
def _conv_samples(default_mode):
    def gen(rng, dtype):
        for sa, sv in [((5,), (3,)), ((3,), (5,)), ((4,), (4,)), ((1,), (5,)), ((6,), (1,)),
                       ((4,), (6,)), ((7,), (2,))]:
            for mode in ("full", "same", "valid"):
                yield SampleInput(_arrays(rng, dtype, sa, sv), {"mode": mode}, f"{sa}*{sv} {mode}")
        yield SampleInput(_arrays(rng, dtype, (6,), (3,)), {}, f"default mode {default_mode!r}")
        yield SampleInput(_arrays(rng, dtype, (6,), (3,)), {"mode": 1}, "integer mode")
        yield SampleInput(_arrays(rng, dtype, (6,), (3,), nc=(0, 1)), {}, "non-contiguous")
        yield SampleInput(_arrays(rng, dtype, (0,), (3,)), {}, "empty raises")
        yield SampleInput(_arrays(rng, dtype, (3, 2), (3,)), {}, "2-d raises")
        yield SampleInput(_arrays(rng, dtype, (), (3,)), {}, "0-d operand")
        yield SampleInput(_arrays(rng, dtype, (5,), (3,)), {"mode": "middle"}, "bad mode")
        yield SampleInput(_arrays(rng, dtype, (5,), (3,)), {"mode": None}, "mode=None")
        # long signal and kernel: the rule calls NumPy's own routine per example
        for mode in ("full", "same", "valid"):
            yield SampleInput(_arrays(rng, dtype, (2048,), (32,)), {"mode": mode},
                              f"long (2048*32, NumPy's routine per example) {mode}")
        yield SampleInput(_arrays(rng, dtype, (32,), (2048,)), {}, "long kernel first")
        if np.dtype(dtype).kind in "fc":
            # the vectorised form pads the signal with zeros, and 0 * inf is NaN where NumPy
            # sums only the overlapping products: such a kernel runs per example (the check
            # looks at the kernel flipped back, contiguous or not)
            a, v = _arrays(rng, dtype, (5,), (3,))
            v[1] = np.inf
            yield SampleInput((a, v), {"mode": "full"}, "inf in the kernel",
                              loop_reason="inf or NaN in the kernel: per example")
            a, v = _arrays(rng, dtype, (5,), (3,), nc=(1,))
            v[0] = np.nan
            yield SampleInput((a, v), {"mode": "same"}, "NaN in a non-contiguous kernel",
                              loop_reason="inf or NaN in the kernel: per example")
            a, v = _arrays(rng, dtype, (5,), (3,))
            a[2] = -np.inf
            yield SampleInput((a, v), {"mode": "full"}, "inf in the signal (vectorised)"
                              if np.dtype(dtype).kind == "f" else "inf in the signal",
                              loop_reason=None if np.dtype(dtype).kind == "f"
                              else "complex values with inf or NaN parts: per example")
    return gen


OPS = [
    OpInfo("dot", np.dot, dot_samples, "rule", dtypes=(F64, I32, BOOL, C128)),
    OpInfo("ndarray.dot", _method("dot"), dot_samples, "rule", dtypes=(F64, I64), covers=np.dot,
           unbatched_self=True),
    OpInfo("vdot", np.vdot, vdot_samples, "rule", dtypes=(F64, C128, I32, BOOL)),
    OpInfo("inner", np.inner, inner_samples, "rule", dtypes=(F64, I64, BOOL, C128)),
    OpInfo("outer", np.outer, outer_samples, "rule", dtypes=(F64, I32, BOOL)),
    OpInfo("kron", np.kron, kron_samples, "rule", dtypes=(F64, I64, BOOL)),
    OpInfo("matmul", np.matmul, matmul_samples, "rule", dtypes=(F64, I64, BOOL, C128)),
    OpInfo("matmul.operator", _matmul_op, matmul_samples, "rule", dtypes=(F64, I64),
           covers=np.matmul),
    # integer operands: the sweep compares in-place writes exactly, and a batched matmul may
    # round differently from the per-example one (another BLAS kernel)
    OpInfo("matmul.out", _matmul_out, matmul_out_samples, "rule", dtypes=(I64, BOOL),
           covers=np.matmul, inplace=2),
    OpInfo("tensordot", np.tensordot, tensordot_samples, "rule", dtypes=(F64, I64, C128)),
    OpInfo("einsum", np.einsum, einsum_samples, "rule", dtypes=(F64, I64, BOOL, C128)),
    OpInfo("einsum.out", _einsum_out, einsum_out_samples, "rule", dtypes=(I64,),
           covers=np.einsum, inplace=3),
    OpInfo("einsum_path", _einsum_path, einsum_path_samples, "rule", covers=np.einsum_path),
    OpInfo("trace", np.trace, trace_samples, "decomposition", dtypes=(F64, I32, BOOL, C128)),
    OpInfo("ndarray.trace", _method("trace"), trace_samples, "decomposition", dtypes=(F64, I64),
           covers=np.trace, unbatched_self=True),
    OpInfo("vecdot", np.vecdot, vecdot_samples, "rule", dtypes=(F64, C128, I32)),
    OpInfo("matvec", np.matvec, matvec_samples, "rule", dtypes=(F64, C128)),
    OpInfo("vecmat", np.vecmat, vecmat_samples, "rule", dtypes=(F64, C128)),
    OpInfo("cross", np.cross, cross_samples, "rule", dtypes=(F64, I64)),
    OpInfo("convolve", np.convolve, _conv_samples("full"), "rule", dtypes=(F64, I64, C128)),
    OpInfo("correlate", np.correlate, _conv_samples("valid"), "rule", dtypes=(F64, I64, C128)),
]


def _product_out_cases(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield (a(3, 4), a(4, 2)), {}, "2-d @ 2-d"
    yield (a(3, 4), a(4)), {}, "2-d @ 1-d"


def _outer_out_cases(rng, dtype):
    yield (make_array(rng, (3,), dtype), make_array(rng, (2, 2), dtype)), {}, "1-d x 2-d"


def _trace_out_cases(rng, dtype):
    yield (make_array(rng, (2, 3, 4), dtype),), {}, "3-d"
    yield (make_array(rng, (3, 4, 2), dtype),), {"axis1": 1, "axis2": 2}, "axes 1, 2"


OPS += [
    OpInfo("dot.out", np.dot, out_variant(np.dot, _product_out_cases), "loop",
           dtypes=(F64, I64), inplace=2, loop_reason=OUT_LOOP),
    OpInfo("outer.out", np.outer, out_variant(np.outer, _outer_out_cases), "loop",
           dtypes=(F64,), inplace=2, loop_reason=OUT_LOOP),
    OpInfo("trace.out", np.trace, out_variant(np.trace, _trace_out_cases), "decomposition",
           dtypes=(F64, I64), inplace=1),
]
