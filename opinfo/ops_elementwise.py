"""Elementwise functions that are not ufuncs (clip, isclose, nan_to_num, round, fix, i0, sinc,
angle, iscomplex, isreal, isneginf, isposinf), the whole-array predicates (allclose,
array_equal, array_equiv, iscomplexobj, isrealobj), real_if_close, interp, unwrap, and the
ndarray methods clip / round / conj / conjugate."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import FLOAT, make_array, with_nans

F64, F32, I64, C128, B = np.float64, np.float32, np.int64, np.complex128, np.bool_


def _method(name):
    def call(x, *args, **kwargs):
        return getattr(x, name)(*args, **kwargs)

    call.__name__ = f"ndarray.{name}"
    return call


# ---- clip ---------------------------------------------------------------------------------------
def _clip_samples(rng, dtype):
    a = lambda s=(3, 4): make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(), -1, 2), {}, "scalar bounds")
    yield SampleInput((a(), a(), a()), {}, "array bounds")
    yield SampleInput((a(), a((4,)), 3), {}, "a_min broadcasts")
    yield SampleInput((a((4,)), a((3, 4)), None), {}, "bound larger than a: result broadcasts")
    yield SampleInput((a(()), a(()), a(())), {}, "0-d")
    yield SampleInput((a((2, 0)), 0, 1), {}, "size-0")
    yield SampleInput((a(), None, a((3, 1))), {}, "only a_max")
    yield SampleInput((a(),), {"min": a((4,)), "max": 5}, "min=/max= keywords")
    yield SampleInput((a(),), {"min": -1, "max": a((3, 1))}, "max= keyword batched")
    yield SampleInput((a(), 2, -2), {}, "a_min > a_max")
    yield SampleInput((a(), None, None), {}, "no bound raises")
    yield SampleInput((a(), a((3,)), None), {}, "bound does not broadcast raises")
    if np.dtype(dtype).kind == "f":
        yield SampleInput((with_nans(rng, a()), a(), a()), {}, "NaN in a")
        yield SampleInput((a(), with_nans(rng, a()), None), {}, "NaN bound")


def _clip_out_samples(rng, dtype):
    a = lambda s=(3, 4): make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(), a(), a()), {"out": a()}, "out=")
    yield SampleInput((a((4,)), 0, 1), {"out": a()}, "a broadcasts into out=")
    yield SampleInput((a(), a(), 1), {"out": a(), "where": make_array(rng, (3, 4), B)},
                      "out= where=")
    yield SampleInput((a(), 0, 1), {"out": a((4,))}, "out= too small raises")


def _clip_method_samples(rng, dtype):
    a = lambda s=(3, 4): make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(), a(), a()), {}, "x.clip(lo, hi)")
    yield SampleInput((a(),), {"max": a((4,))}, "x.clip(max=)")
    yield SampleInput((a(),), {"min": 0}, "x.clip(min=)")
    yield SampleInput((a(),), {}, "x.clip() raises")


# ---- isclose / allclose / array_equal / array_equiv -------------------------------------------
def _near(rng, a, frac=0.5):
    """``a`` perturbed slightly, and in some examples (chosen by ``rng``) by a lot."""
    b = np.array(a + (1e-9 * make_array(rng, a.shape, a.dtype) if a.dtype.kind in "fc" else 0),
                 dtype=a.dtype)
    if a.size and rng.random() < frac:
        b.flat[rng.integers(a.size)] += 1
    return b


def _isclose_samples(rng, dtype):
    a = lambda s=(3, 4): make_array(rng, s, dtype)  # noqa: E731
    x = a()
    yield SampleInput((x, _near(rng, x)), {}, "near")
    yield SampleInput((a(), a()), {}, "random")
    yield SampleInput((a(), a((4,))), {}, "broadcast")
    yield SampleInput((a(()), a(())), {}, "0-d")
    yield SampleInput((a((0, 2)), a((2,))), {}, "size-0")
    x = a()
    yield SampleInput((x, _near(rng, x)), {"rtol": 0.0, "atol": 0.5}, "atol=")
    x = a()
    yield SampleInput((x, _near(rng, x), make_array(rng, (3, 4), F64, low=0, high=0.3),
                       make_array(rng, (4,), F64, low=0, high=0.3)), {}, "array tolerances")
    yield SampleInput((a(), 1), {}, "Python scalar b")
    if np.dtype(dtype).kind in "fc":
        x = with_nans(rng, a())
        yield SampleInput((x, x.copy()), {}, "NaN")
        yield SampleInput((x, x.copy()), {"equal_nan": True}, "equal_nan")


def _allclose_samples(rng, dtype):
    a = lambda s=(3, 4): make_array(rng, s, dtype)  # noqa: E731
    for shape in [(3, 4), (), (0, 2), (5,)]:
        x = a(shape)
        yield SampleInput((x, _near(rng, x)), {}, f"{shape}")
    x = a()
    yield SampleInput((x, _near(rng, x[0])), {}, "broadcast")
    x = a()
    yield SampleInput((x, _near(rng, x)), {"atol": make_array(rng, (), F64, low=0, high=2)},
                      "batched atol")
    x = a()
    yield SampleInput((x, _near(rng, x)), {"rtol": make_array(rng, (), F64, low=0, high=0.5)},
                      "batched rtol")
    yield SampleInput((a(), a((3,))), {}, "shapes do not broadcast raises")
    if np.dtype(dtype).kind == "f":
        x = with_nans(rng, a())
        yield SampleInput((x, x.copy()), {"equal_nan": True}, "equal_nan")


def _array_equal_samples(rng, dtype):
    a = lambda s=(3, 4): make_array(rng, s, dtype)  # noqa: E731
    for shape in [(3, 4), (), (0, 2), (5,)]:
        x = a(shape)
        yield SampleInput((x, _near(rng, x)), {}, f"{shape}")
    yield SampleInput((a(), a((4,))), {}, "other shapes: False")
    yield SampleInput((a(), a((3, 5))), {}, "other shapes: False")
    x = a((4,))
    yield SampleInput((x, [1, 2, 3, 4]), {}, "a list")
    yield SampleInput((a((2,)), np.array(["a", "b"])), {}, "numbers and strings: False")
    if np.dtype(dtype).kind in "fc":
        x = with_nans(rng, a())
        y = x.copy()
        if rng.random() < 0.5:
            y[0, 0] = np.nan if y[0, 0] == y[0, 0] else 1.0
        yield SampleInput((x, y), {"equal_nan": True}, "equal_nan")
        yield SampleInput((x, y), {}, "NaN without equal_nan")


def _array_equiv_samples(rng, dtype):
    a = lambda s=(3, 4): make_array(rng, s, dtype)  # noqa: E731
    x = a()
    yield SampleInput((x, _near(rng, x)), {}, "same shape")
    x = a((4,))
    yield SampleInput((np.broadcast_to(x, (3, 4)).copy(), _near(rng, x)), {}, "broadcast")
    yield SampleInput((a(), a((3,))), {}, "shapes do not broadcast: False")
    x = a(())
    yield SampleInput((x, _near(rng, x)), {}, "0-d")
    yield SampleInput((a((0, 4)), a((4,))), {}, "size-0")


# ---- nan_to_num / round / fix / i0 / sinc / angle -----------------------------------------------
def _nan_to_num_samples(rng, dtype):
    x = lambda s=(3, 4): with_nans(rng, make_array(rng, s, dtype), 0.3)  # noqa: E731
    yield SampleInput((x(),), {}, "defaults")
    yield SampleInput((x(),), {"nan": -1.0, "posinf": 9.0, "neginf": -9.0}, "fill values")
    yield SampleInput((x(()),), {}, "0-d")
    yield SampleInput((x((0,)),), {}, "size-0")
    if np.dtype(dtype).kind == "f":
        y = x()
        y.flat[0] = -np.inf
        yield SampleInput((y,), {"neginf": 0}, "neginf=")


def _nan_to_num_inplace(rng, dtype):
    yield SampleInput((with_nans(rng, make_array(rng, (3, 4), dtype), 0.3),), {"copy": False},
                      "copy=False writes in place")


def _round_samples(rng, dtype):
    a = lambda s=(3, 4): np.asarray(make_array(rng, s, dtype) * 7)  # noqa: E731
    yield SampleInput((a(),), {}, "decimals=0")
    yield SampleInput((a(), 2), {}, "decimals=2")
    yield SampleInput((a(), -1), {}, "decimals=-1")
    yield SampleInput((a(()),), {}, "0-d")
    yield SampleInput((a((0,)), 1), {}, "size-0")


def _round_out_samples(rng, dtype):
    a = lambda s=(3, 4): np.asarray(make_array(rng, s, dtype) * 7)  # noqa: E731
    yield SampleInput((a(), 1, a()), {}, "out")
    yield SampleInput((a((4,)), 0, a()), {}, "a broadcasts into out=")


def _unary_samples(low=None, high=None, extra=None):
    def gen(rng, dtype):
        a = lambda s: make_array(rng, s, dtype, low=low, high=high)  # noqa: E731
        for shape in [(3, 4), (), (0, 2), (2, 3, 4)]:
            yield SampleInput((a(shape),), {}, f"{shape}")
        yield SampleInput((make_array(rng, (3, 4), dtype, noncontiguous=True),), {}, "non-contig")
        if extra:
            yield from extra(rng, dtype)
    return gen


def _fix_out_samples(rng, dtype):
    yield SampleInput((make_array(rng, (3, 4), dtype), make_array(rng, (3, 4), F64)), {}, "out=")
    yield SampleInput((make_array(rng, (4,), dtype), make_array(rng, (3, 4), F64)), {},
                      "x broadcasts into out=")


def _i0_extra(rng, dtype):
    yield SampleInput((make_array(rng, (3,), C128),), {}, "complex raises TypeError")


def _sinc_extra(rng, dtype):
    x = make_array(rng, (6,), dtype)
    x[rng.integers(6)] = 0
    yield SampleInput((x,), {}, "a zero")


def _angle_extra(rng, dtype):
    yield SampleInput((make_array(rng, (3, 4), dtype),), {"deg": True}, "deg=True")


def _isinf_samples(rng, dtype):
    x = lambda s=(3, 4): with_nans(rng, make_array(rng, s, dtype), 0.2)  # noqa: E731
    y = x()
    y[rng.random(y.shape) < 0.3] = -np.inf
    yield SampleInput((y,), {}, "inf and -inf")
    yield SampleInput((x(()),), {}, "0-d")
    yield SampleInput((x((0,)),), {}, "size-0")
    yield SampleInput((make_array(rng, (3,), C128),), {}, "complex raises TypeError")


def _isinf_out_samples(rng, dtype):
    y = with_nans(rng, make_array(rng, (3, 4), dtype), 0.3)
    y[rng.random(y.shape) < 0.3] = -np.inf
    yield SampleInput((y, make_array(rng, (3, 4), B)), {}, "out=")


def _iscomplex_samples(rng, dtype):
    x = make_array(rng, (3, 4), dtype)
    if x.dtype.kind == "c":
        x[rng.random(x.shape) < 0.4] = 1.0
    yield SampleInput((x,), {}, "(3, 4)")
    yield SampleInput((make_array(rng, (), dtype),), {}, "0-d")
    yield SampleInput((make_array(rng, (0,), dtype),), {}, "size-0")


def _obj_samples(rng, dtype):
    yield SampleInput((make_array(rng, (3,), dtype),), {}, "(3,)")
    yield SampleInput((make_array(rng, (), dtype),), {}, "0-d")


# ---- real_if_close ------------------------------------------------------------------------------
def _real_if_close_samples(rng, dtype):
    re = lambda s=(3, 4): make_array(rng, s, F64)  # noqa: E731
    eps = np.finfo(np.float64).eps
    yield SampleInput(((re() + 1j * eps * re()).astype(dtype),), {}, "all close: real result")
    yield SampleInput(((re() + 1j * (2 + np.abs(re()))).astype(dtype),), {},
                      "none close: complex result")
    yield SampleInput(((re() + 1j * 500 * eps * re()).astype(dtype),), {"tol": 1e4}, "tol=1e4")
    yield SampleInput(((re() + 0.01j * re()).astype(dtype),), {"tol": 0.5},
                      "tol<1: absolute")
    yield SampleInput((np.asarray(re(()) + 1j * eps * re(()), dtype=dtype),), {}, "0-d")
    yield SampleInput((np.zeros((0, 3), dtype),), {}, "size-0")


def _real_if_close_real(rng, dtype):
    yield SampleInput((make_array(rng, (3, 4), dtype),), {}, "real input")


# ---- interp -------------------------------------------------------------------------------------
def _xp(rng, n, lo=-3.0, hi=3.0):
    return np.sort(rng.uniform(lo, hi, n))


def _interp_samples(rng, dtype):
    f = lambda n: make_array(rng, (n,), dtype)  # noqa: E731
    x = lambda s: rng.uniform(-4, 4, s)  # noqa: E731
    yield SampleInput((x((7,)), _xp(rng, 5), f(5)), {}, "1-d x")
    yield SampleInput((x((3, 4)), _xp(rng, 6), f(6)), {}, "2-d x")
    yield SampleInput((x(()), _xp(rng, 5), f(5)), {}, "0-d x")
    yield SampleInput((x((0,)), _xp(rng, 5), f(5)), {}, "size-0 x")
    xp = _xp(rng, 6)
    xs = np.concatenate([xp[rng.integers(0, 6, 4)], [xp[0], xp[-1], np.nan]])
    yield SampleInput((xs, xp, f(6)), {}, "x at the sample points, the ends, NaN")
    yield SampleInput((x((6,)), _xp(rng, 5), f(5), make_array(rng, (), F64),
                       make_array(rng, (), F64)), {}, "left/right arrays")
    yield SampleInput((x((6,)), _xp(rng, 5), f(5)), {"left": -7.0, "right": 7}, "left/right")
    yield SampleInput((x((6,)), _xp(rng, 1), f(1), make_array(rng, (), F64)), {},
                      "one sample point")
    yield SampleInput((x((6,)), np.sort(rng.integers(-2, 3, 8).astype(F64)), f(8)), {},
                      "repeated sample points")
    yield SampleInput((x((40,)), _xp(rng, 33), f(33)), {}, "longer")
    yield SampleInput((x((6,)), rng.uniform(0, 10, 5), f(5)), {"period": 4.0}, "period=")
    yield SampleInput((x((6,)), rng.uniform(-10, 0, 5), f(5)), {"period": -3}, "negative period")
    yield SampleInput((x((4,)), _xp(rng, 3), f(3)), {"period": 0}, "period=0 raises")
    yield SampleInput((x((4,)), _xp(rng, 3), f(4)), {}, "xp and fp lengths differ raise")
    yield SampleInput((x((4,)), np.zeros((0,)), f(0)), {}, "no sample points raises")
    yield SampleInput((x((4,)), _xp(rng, 3).reshape(3, 1), f(3)), {}, "2-d xp raises")
    if np.dtype(dtype).kind == "f":
        fp = f(6)
        fp[rng.integers(6)] = np.inf
        yield SampleInput((x((8,)), _xp(rng, 6), fp), {}, "an infinite fp value")


def _interp_unsorted(rng, dtype):
    yield SampleInput((rng.uniform(-4, 4, 6), rng.uniform(-3, 3, 5),
                       make_array(rng, (5,), dtype)), {}, "xp not increasing",
                      loop_reason="interp with sample points that are not increasing: "
                                  "NumPy's search then depends on its guesses, done per example")


# ---- unwrap -------------------------------------------------------------------------------------
def _unwrap_samples(rng, dtype):
    def phase(shape, scale=2.5):
        return np.cumsum(make_array(rng, shape, F64) * scale, axis=-1).astype(dtype)

    yield SampleInput((phase((8,)),), {}, "1-d")
    yield SampleInput((phase((3, 6)),), {}, "axis=-1")
    yield SampleInput((phase((5, 3)),), {"axis": 0}, "axis=0")
    yield SampleInput((phase((2, 4, 3)),), {"axis": 1}, "axis=1")
    yield SampleInput((phase((3, 6)),), {"discont": 4.0}, "discont=")
    yield SampleInput((phase((3, 6)),), {"period": 3.0}, "period=")
    yield SampleInput((phase((2, 0)),), {}, "size-0")
    yield SampleInput((phase(()),), {}, "0-d raises")
    yield SampleInput((phase((3, 4)),), {"axis": 2}, "axis out of range")


def _unwrap_int_samples(rng, dtype):
    yield SampleInput((make_array(rng, (3, 6), dtype, low=-20, high=20),), {"period": 8},
                      "integer period")
    yield SampleInput((make_array(rng, (6,), dtype, low=-20, high=20),), {"period": 7},
                      "odd integer period")


OPS = [
    OpInfo("clip", np.clip, _clip_samples, "boxed", dtypes=(F64, I64, F32)),
    OpInfo("clip.out", np.clip, _clip_out_samples, "boxed", dtypes=(F64,), inplace=3),
    OpInfo("ndarray.clip", _method("clip"), _clip_method_samples, "boxed", dtypes=(F64, I64),
           covers=np.clip, unbatched_self=True),
    OpInfo("isclose", np.isclose, _isclose_samples, "boxed", dtypes=(F64, F32, I64, C128)),
    OpInfo("allclose", np.allclose, _allclose_samples, "decomposition", dtypes=(F64, I64)),
    OpInfo("array_equal", np.array_equal, _array_equal_samples, "decomposition",
           dtypes=(F64, I64, C128)),
    OpInfo("array_equiv", np.array_equiv, _array_equiv_samples, "decomposition",
           dtypes=(F64, I64)),
    OpInfo("nan_to_num", np.nan_to_num, _nan_to_num_samples, "boxed", dtypes=(F64, C128, I64)),
    OpInfo("nan_to_num.copy_false", np.nan_to_num, _nan_to_num_inplace, "boxed",
           dtypes=(F64,), inplace=0),
    OpInfo("round", np.round, _round_samples, "boxed", dtypes=(F64, F32, I64, C128)),
    OpInfo("round.out", np.round, _round_out_samples, "boxed", dtypes=(F64,), inplace=2),
    OpInfo("around.out", np.around, _round_out_samples, "boxed", dtypes=(F64,), inplace=2),
    OpInfo("around", np.around, _round_samples, "boxed", dtypes=(F64, I64)),
    OpInfo("ndarray.round", _method("round"), _round_samples, "boxed", dtypes=(F64, I64),
           covers=np.round, unbatched_self=True),
    OpInfo("fix", np.fix, _unary_samples(), "boxed", dtypes=(F64, F32, I64)),
    OpInfo("fix.out", np.fix, _fix_out_samples, "boxed", dtypes=(F64, I64), inplace=1),
    OpInfo("i0", np.i0, _unary_samples(-10, 10, _i0_extra), "boxed", dtypes=(F64, I64)),
    OpInfo("sinc", np.sinc, _unary_samples(extra=_sinc_extra), "boxed", dtypes=(F64, C128)),
    OpInfo("angle", np.angle, _unary_samples(extra=_angle_extra), "boxed",
           dtypes=(C128, F64, I64)),
    OpInfo("iscomplex", np.iscomplex, _iscomplex_samples, "boxed", dtypes=(C128, F64)),
    OpInfo("isreal", np.isreal, _iscomplex_samples, "boxed", dtypes=(C128, F64)),
    OpInfo("isneginf", np.isneginf, _isinf_samples, "boxed", dtypes=FLOAT),
    OpInfo("isposinf", np.isposinf, _isinf_samples, "boxed", dtypes=FLOAT),
    OpInfo("isneginf.out", np.isneginf, _isinf_out_samples, "boxed", inplace=1),
    OpInfo("isposinf.out", np.isposinf, _isinf_out_samples, "boxed", inplace=1),
    OpInfo("iscomplexobj", np.iscomplexobj, _obj_samples, "rule", dtypes=(C128, F64, I64, B)),
    OpInfo("isrealobj", np.isrealobj, _obj_samples, "rule", dtypes=(C128, F64, I64, B)),
    OpInfo("real_if_close", np.real_if_close, _real_if_close_samples, "rule",
           dtypes=(C128, np.complex64)),
    OpInfo("real_if_close.real", np.real_if_close, _real_if_close_real, "rule",
           dtypes=(F64, I64)),
    OpInfo("interp", np.interp, _interp_samples, "rule", dtypes=(F64, C128, I64),
           undispatched=(3, 4)),  # NumPy dispatches on x, xp, fp only
    OpInfo("interp.unsorted", np.interp, _interp_unsorted, "rule"),
    OpInfo("unwrap", np.unwrap, _unwrap_samples, "rule", dtypes=(F64, F32)),
    OpInfo("unwrap.int", np.unwrap, _unwrap_int_samples, "rule", dtypes=(I64,)),
    OpInfo("ndarray.conj", _method("conj"), _unary_samples(), "boxed", dtypes=(C128, F64, I64),
           covers=np.conjugate, unbatched_self=True),
    OpInfo("ndarray.conjugate", _method("conjugate"), _unary_samples(), "boxed",
           dtypes=(C128,), covers=np.conjugate, unbatched_self=True),
]
