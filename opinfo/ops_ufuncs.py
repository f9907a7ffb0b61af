"""Every ufunc's ``__call__`` in the ``numpy`` namespace, generated from one table: one OpInfo
per distinct ufunc object (``ufunc.<name>``) plus its ``out=`` / ``where=`` variant
(``ufunc.<name>.out``); the gufuncs that ``boxed/variadic.py`` batches generically; a few
``scipy.special`` ufuncs and a ``np.frompyfunc`` ufunc (any ufunc is pointwise automatically);
and the ufunc methods ``outer`` and ``at`` (``reduce`` / ``accumulate`` / ``reduceat`` are in
``ops_reductions.py``).

Dtypes come from ``ufunc.types``: float64, int64, complex128 and bool, where the ufunc has a loop
for them. NaN results are fine (the sweep compares NaN positions), so domains are only narrowed
where most values would otherwise leave the domain.
"""

from __future__ import annotations

import numpy as np
import scipy.special as sc

from .core import OpInfo, SampleInput
from .samples import make_array, out_variant, with_nans

#: every distinct ufunc object reachable as ``np.<name>`` (90 objects, 106 names in NumPy 2.4)
NUMPY_UFUNCS = sorted({u for n in dir(np) if isinstance(u := getattr(np, n), np.ufunc)},
                      key=lambda u: u.__name__)
ELEMENTWISE = [u for u in NUMPY_UFUNCS if u.signature is None]
#: gufuncs: matmul's rule (and its OpInfo) belong to the linalg family
GUFUNCS = [u for u in NUMPY_UFUNCS if u.signature is not None and u is not np.matmul]

_CHAR = {np.float64: "d", np.int64: "l", np.complex128: "D", np.bool_: "?", np.float32: "f"}

#: (low, high) for float inputs, per ufunc and argument, where the default N(0, 2²) would leave
#: the domain almost everywhere (some values outside it remain: NaN positions are compared)
_DOMAIN = {
    "arccos": [(-1.2, 1.2)], "arcsin": [(-1.2, 1.2)], "arctanh": [(-1.2, 1.2)],
    "arccosh": [(0.5, 6.0)], "log": [(-0.5, 8.0)], "log2": [(-0.5, 8.0)],
    "log10": [(-0.5, 8.0)], "log1p": [(-1.5, 8.0)], "sqrt": [(-1.0, 9.0)],
    "power": [(0.0, 4.0), (-3.0, 3.0)], "float_power": [(0.0, 4.0), (-3.0, 3.0)],
}
#: (low, high) for integer inputs, per argument: shifts and powers need non-negative right
#: operands (negative integer powers raise, negative shifts are undefined)
_INT_DOMAIN = {
    "power": [(-4, 5), (0, 5)], "left_shift": [(-9, 10), (0, 8)],
    "right_shift": [(-99, 100), (0, 8)], "ldexp": [None, (-6, 6)],
}


#: integer ufuncs that divide (a zero divisor gives 0 with a RuntimeWarning, no error)
_INT_DIVISION = {"floor_divide", "remainder", "fmod", "divmod"}


def _has_loop(uf, char: str) -> bool:
    return any(set(t.split("->")[0]) == {char} for t in uf.types)


def ufunc_dtypes(uf) -> tuple:
    """float64, int64, complex128, bool: those with a loop of their own, at most three."""
    if uf is np.isnat:
        return ("datetime64[s]", "timedelta64[ms]")
    if uf is np.ldexp:
        return (np.float64, np.float32)
    picked = [dt for dt in (np.float64, np.int64, np.complex128, np.bool_)
              if _has_loop(uf, _CHAR[dt])]
    return tuple(picked[:3])


def _unsupported(uf):
    """A dtype the ufunc rejects with a TypeError (None if it takes all of them)."""
    for dt in (np.complex128, np.float64, np.bool_):
        try:
            with np.errstate(all="ignore"):
                uf(*[np.ones(2, dt)] * uf.nin)
        except TypeError:
            return dt
    return None


def _arg(rng, uf, k: int, shape, dtype, noncontiguous=False):
    """Operand ``k`` of ``uf``: drawn from the ufunc's domain for its dtype."""
    dt = np.dtype(dtype)
    name = uf.__name__
    if dt.kind in "mM":
        a = rng.integers(-10**6, 10**6, size=shape).astype(np.int64).view(dt)
        if a.size:
            a[rng.random(shape) < 0.3] = np.array("NaT", dtype=dt)
        return a
    if uf is np.ldexp and k == 1:
        dt, lo_hi = np.dtype(np.int64), _INT_DOMAIN["ldexp"][1]
        return make_array(rng, shape, dt, low=lo_hi[0], high=lo_hi[1], noncontiguous=noncontiguous)
    if dt.kind in "iu" and name in _INT_DOMAIN and _INT_DOMAIN[name][k] is not None:
        lo, hi = _INT_DOMAIN[name][k]
        return make_array(rng, shape, dt, low=lo, high=hi, noncontiguous=noncontiguous)
    if dt.kind in "fc" and name in _DOMAIN and k < len(_DOMAIN[name]):
        lo, hi = _DOMAIN[name][k]
        return make_array(rng, shape, dt, low=lo, high=hi, noncontiguous=noncontiguous)
    return make_array(rng, shape, dt, noncontiguous=noncontiguous)


def _args(rng, uf, shapes, dtype, noncontiguous=False):
    return tuple(_arg(rng, uf, k, s, dtype, noncontiguous) for k, s in enumerate(shapes))


#: per-example operand shapes: 0-d, size-0, n-d, broadcasting of different ranks
_UNARY_SHAPES = [(), (0,), (5,), (2, 3, 4)]
_BINARY_SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((), (2, 3)), ((2, 0, 3), (3,)),
                  ((4, 1), (1, 5))]


def call_samples(uf):
    """``uf(*arrays)``: shapes, broadcasting, weak Python scalars, dtype=, NaN/inf, errors."""
    bad = _unsupported(uf)
    nin = uf.nin
    name = uf.__name__

    def gen(rng, dtype):
        dt = np.dtype(dtype)
        if nin == 1:
            for shape in _UNARY_SHAPES:
                yield SampleInput(_args(rng, uf, [shape], dtype), {}, f"{shape}")
            yield SampleInput(_args(rng, uf, [(3, 4)], dtype, noncontiguous=True), {},
                              "non-contiguous")
        else:
            for shapes in _BINARY_SHAPES:
                yield SampleInput(_args(rng, uf, shapes, dtype), {}, f"{shapes}")
            yield SampleInput(_args(rng, uf, [(3, 5)] * 2, dtype, noncontiguous=True), {},
                              "non-contiguous")
            yield SampleInput(_args(rng, uf, [(3,), (4,)], dtype), {}, "shapes do not broadcast")
            if dt.kind in "fciub":
                # Python scalars are weak (NEP 50): the array's dtype wins.
                s = {"f": 2.0, "c": 1.5 - 0.5j, "b": True}.get(dt.kind, 3)
                if uf is np.ldexp:
                    s = 3
                (x,) = _args(rng, uf, [(2, 3)], dtype)
                yield SampleInput((x, s), {}, "array op weak scalar")
                if uf is not np.ldexp:
                    yield SampleInput((s, _arg(rng, uf, 1, (2, 3), dtype)), {},
                                      "weak scalar op array")
        if dt.kind in "fc" and dt != np.float32:
            arrays = [with_nans(rng, a) for a in _args(rng, uf, [(4, 5)] * nin, dtype)]
            if uf is np.ldexp:
                arrays[1] = _arg(rng, uf, 1, (4, 5), dtype)
            yield SampleInput(tuple(arrays), {}, "NaN and inf")
        if dt.kind in "fiu" and _has_loop(uf, "f"):
            yield SampleInput(_args(rng, uf, [(3, 4)] * nin, dtype), {"dtype": np.float32},
                              "dtype=float32")
        if dt.kind in "iu" and name in _INT_DIVISION:
            x, y = _args(rng, uf, [(3, 4), (3, 4)], dtype)
            y[:, 0] = 0
            yield SampleInput((x, y), {}, "integer division by zero")
            yield SampleInput((x, 0), {}, "integer division by a Python 0")
        if dt.kind in "iu" and name == "power":
            x, e = _args(rng, uf, [(3, 4), (3, 4)], dtype)
            e[0, 0] = -1
            yield SampleInput((x, e), {}, "integer to a negative power raises")
            yield SampleInput((x, -2), {}, "integer to a negative Python int raises")
        if bad is not None and dt == np.dtype(ufunc_dtypes(uf)[0]):
            yield SampleInput(tuple(make_array(rng, (3,), bad) for _ in range(nin)), {},
                              f"unsupported dtype {np.dtype(bad)} raises")
    return gen


def _result_dtypes(uf, dtype):
    with np.errstate(all="ignore"):
        res = uf(*[_arg(np.random.default_rng(0), uf, k, (2,), dtype) for k in range(uf.nin)])
    return [r.dtype for r in (res if uf.nout > 1 else (res,))]


def out_samples(uf):
    """``uf(*arrays, out=o, where=m)``: the first output written in place (``inplace=nin``)."""
    nin, nout = uf.nin, uf.nout

    def outs(o):
        return o if nout == 1 else (o,) + (None,) * (nout - 1)

    def gen(rng, dtype):
        rdt = _result_dtypes(uf, dtype)[0]
        x = _args(rng, uf, [(3, 4)] * nin, dtype)
        yield SampleInput(x, {"out": outs(make_array(rng, (3, 4), rdt))}, "out=")
        x = _args(rng, uf, [(4,)] * nin, dtype)
        yield SampleInput(x, {"out": outs(make_array(rng, (3, 4), rdt))},
                          "inputs broadcast into out=")
        if nout == 1:  # (a second output made by NumPy is uninitialised where where=False)
            x = _args(rng, uf, [(3, 4)] * nin, dtype)
            yield SampleInput(x, {"out": outs(make_array(rng, (3, 4), rdt)),
                                  "where": make_array(rng, (3, 4), np.bool_)}, "out= where=")
        x = _args(rng, uf, [(3, 4)] * nin, dtype)
        yield SampleInput(x, {"out": outs(make_array(rng, (), rdt)),
                              "where": make_array(rng, (4,), np.bool_)},
                          "out= smaller than the inputs raises")
        if rdt.kind in "fc":
            x = _args(rng, uf, [(3, 4)] * nin, dtype)
            yield SampleInput(x, {"out": outs(make_array(rng, (3, 4), np.int64))},
                              "float result into an int out= raises")
    return gen


def _ufunc_ops():
    ops = []
    for uf in ELEMENTWISE:
        dts = ufunc_dtypes(uf)
        ops.append(OpInfo(f"ufunc.{uf.__name__}", uf, call_samples(uf), "boxed", dtypes=dts))
        ops.append(OpInfo(f"ufunc.{uf.__name__}.out", uf, out_samples(uf), "boxed",
                          dtypes=dts[:1], inplace=uf.nin))
    return ops


# ---- gufuncs batched generically by boxed/variadic.py -------------------------------------------
def _gufunc_samples(shapes_list):
    def gen(rng, dtype):
        for shapes in shapes_list:
            yield SampleInput(tuple(make_array(rng, s, dtype) for s in shapes), {}, f"{shapes}")
    return gen


_GUFUNC_SHAPES = {
    "vecdot": [((3,), (3,)), ((2, 3), (3,)), ((3,), (4, 3)), ((2, 1, 3), (4, 3)), ((0, 3), (3,)),
               ((3,), (4,)), ((), (3,))],
    "matvec": [((2, 3), (3,)), ((4, 2, 3), (3,)), ((2, 3), (5, 3)), ((2, 0), (0,)),
               ((2, 3), (2,)), ((3,), (3,))],
    "vecmat": [((3,), (3, 2)), ((4, 3), (3, 2)), ((3,), (5, 3, 2)), ((3,), (2, 3)), ((3,), (3,))],
}
_GUFUNC_LOOP = "an operand with fewer dims than its core signature: NumPy's error via the loop"


def _gufunc_with_loop_marks(uf):
    base = _gufunc_samples(_GUFUNC_SHAPES[uf.__name__])
    core = [len(g) for g in _parse_core(uf.signature)]

    def gen(rng, dtype):
        for s in base(rng, dtype):
            short = any(np.ndim(a) < c for a, c in zip(s.args, core))
            if short:
                s.loop_reason = _GUFUNC_LOOP
            yield s
    return gen


def _parse_core(sig):
    ins = sig.split("->")[0]
    return [[d for d in g.split(",") if d] for g in ins.replace(" ", "")[1:-1].split("),(")]


def _gufunc_out_cases(uf):
    def cases(rng, dtype):
        for shapes in _GUFUNC_SHAPES[uf.__name__][:3]:
            yield tuple(make_array(rng, s, dtype) for s in shapes), {}, f"{shapes}"
    return cases


def _vecdot_axis_samples(rng, dtype):
    """``axis=``: the one shared core dimension at that axis of each operand (astropy's
    sigma clipping calls its own gufunc so)."""
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield SampleInput((a(3, 4), a(3, 4)), {"axis": 0}, "axis=0")
    yield SampleInput((a(2, 3, 4), a(3, 4)), {"axis": -2}, "axis=-2, broadcast")
    yield SampleInput((a(4, 3), a(3,)), {"axis": -1}, "axis=-1, 1-d second")
    yield SampleInput((a(0, 3), a(0, 3)), {"axis": 0}, "size-0 core")
    yield SampleInput((a(3, 4), a(3, 4)), {"axis": 2}, "axis out of range (AxisError)",
                      loop_reason="NumPy's AxisError, raised by the per-example loop")


def _gufunc_ops():
    ops = []
    for uf in GUFUNCS:
        ops.append(OpInfo(f"ufunc.{uf.__name__}", uf, _gufunc_with_loop_marks(uf), "boxed",
                          dtypes=(np.float64, np.int64, np.complex128)))
        ops.append(OpInfo(f"ufunc.{uf.__name__}.out", uf, out_variant(uf, _gufunc_out_cases(uf)),
                          "boxed", dtypes=(np.float64,), inplace=2))
    ops.append(OpInfo("ufunc.vecdot.axis", np.vecdot, _vecdot_axis_samples, "boxed",
                      covers=np.vecdot, dtypes=(np.float64, np.int64)))
    return ops


# ---- any ufunc is pointwise: scipy.special and np.frompyfunc ------------------------------------
def _special_samples(domains):
    def gen(rng, dtype):
        def arg(k, shape):
            lo, hi = domains[k] if domains[k] else (None, None)
            return make_array(rng, shape, dtype, low=lo, high=hi)

        n = len(domains)
        yield SampleInput(tuple(arg(k, (3, 4)) for k in range(n)), {}, "(3, 4)")
        yield SampleInput(tuple(arg(k, s) for k, s in enumerate([(), (2, 3)][:n])), {}, "0-d")
        yield SampleInput(tuple(arg(k, s) for k, s in enumerate([(4,), (3, 4)][:n])), {},
                          "broadcast")
        yield SampleInput(tuple(arg(k, (0, 2)) for k in range(n)), {}, "size-0")
    return gen


_SPECIAL = {
    "gammaln": (sc.gammaln, [None]), "erf": (sc.erf, [None]), "expit": (sc.expit, [None]),
    "logit": (sc.logit, [(-0.2, 1.2)]), "xlogy": (sc.xlogy, [(-1.0, 3.0), (-0.5, 4.0)]),
}


def _pyfunc(a, b):
    return a * b + 1 if a > b else a - b


#: an object-dtype ufunc made from a Python function
PYFUNC_UFUNC = np.frompyfunc(_pyfunc, 2, 1)


def _pyfunc_samples(rng, dtype):
    # (No 0-d sample: a 0-d call returns a Python object, which the loop reference stacks
    # into a numeric array while the batched call keeps object dtype.)
    yield SampleInput((make_array(rng, (3, 4), dtype), make_array(rng, (3, 4), dtype)), {},
                      "(3, 4)")
    yield SampleInput((make_array(rng, (2, 3), dtype), make_array(rng, (3,), dtype)), {},
                      "broadcast")
    yield SampleInput((make_array(rng, (4,), dtype), 2), {}, "Python scalar")
    yield SampleInput((make_array(rng, (0, 3), dtype), make_array(rng, (3,), dtype)), {},
                      "size-0")


def _other_ufunc_ops():
    ops = [OpInfo(f"scipy.special.{name}", uf, _special_samples(dom), "boxed",
                  dtypes=(np.float64, np.float32))
           for name, (uf, dom) in _SPECIAL.items()]
    ops.append(OpInfo("ufunc.frompyfunc", PYFUNC_UFUNC, _pyfunc_samples, "boxed",
                      dtypes=(np.int64, np.float64)))
    return ops


# ---- ufunc.outer and ufunc.at ------------------------------------------------------------------
def _outer_samples(uf):
    def gen(rng, dtype):
        for sa, sb in [((3,), (4,)), ((2, 3), (4,)), ((), (3,)), ((3,), ()), ((2, 0), (3,)),
                       ((2, 3), (1, 2))]:
            yield SampleInput((_arg(rng, uf, 0, sa, dtype), _arg(rng, uf, 1, sb, dtype)), {},
                              f"{sa} x {sb}")
        yield SampleInput((_arg(rng, uf, 0, (3,), dtype), 2), {}, "Python scalar")
        yield SampleInput((1.5, _arg(rng, uf, 1, (3,), dtype)), {},
                          "Python float first (outer makes it an array: not weak)")
        yield SampleInput((_arg(rng, uf, 0, (3,), dtype), _arg(rng, uf, 1, (2,), dtype)),
                          {"dtype": np.float64}, "dtype=")
    return gen


def _outer_out_samples(rng, dtype):
    a, b = make_array(rng, (3,), dtype), make_array(rng, (2, 4), dtype)
    yield SampleInput((a, b), {"out": make_array(rng, (3, 2, 4), dtype)}, "out=")
    yield SampleInput((a, b), {"out": make_array(rng, (3, 2, 4), dtype),
                               "where": make_array(rng, (2, 4), np.bool_)}, "out= where=")


def _outer_errors(rng, dtype):
    yield SampleInput((make_array(rng, (3,), dtype), make_array(rng, (2,), dtype)), {},
                      "outer of a unary ufunc raises")


def _divmod_outer(rng, dtype):
    yield SampleInput((make_array(rng, (3,), dtype), make_array(rng, (2, 2), dtype)), {},
                      "two outputs")


def _at_samples(rng, dtype):
    def a(shape=(5, 3)):
        return make_array(rng, shape, dtype)

    # Index lists stay static (the sweep maps only ndarray leaves): unbatched indices.
    yield SampleInput((a(), [0, 1, 1, 4, -1]), {}, "repeated indices, no b")
    yield SampleInput((a(), [0, 2, 2], a((3, 3))), {}, "b batched, full region")
    yield SampleInput((a(), [0, 2, 2], a((3,))), {}, "b broadcasts")
    yield SampleInput((a(), [1, 1, 3], 2), {}, "Python scalar b")
    yield SampleInput((a(), ([0, 0, 4], [1, 1, 2]), a((3,))), {}, "tuple of index lists")
    yield SampleInput((a(), (slice(1, 4), [0, 0])), {}, "slice then index list")
    yield SampleInput((a((4, 2, 3)), ([0, 0, 3], slice(None), [1, 1, 2]), a((3, 2))), {},
                      "index lists separated by a slice")
    yield SampleInput((a((4, 2, 3)), ([0, 0, 3], slice(None), [1, 1, 2]), a((2,))), {},
                      "separated index lists, b broadcasts")
    yield SampleInput((a(), (Ellipsis, [2, 2])), {}, "Ellipsis")
    yield SampleInput((a(), 2, a((3,))), {}, "int index")
    yield SampleInput((a(), (1, slice(None, None, 2)), a((2,))), {}, "basic index only")
    yield SampleInput((a(()), (), a(())), {}, "0-d")
    yield SampleInput((a(), [0, 5]), {}, "index out of range raises")
    yield SampleInput((a(), [1, 3], a((3, 2))), {}, "b does not broadcast raises")


def _at_batched_index(rng, dtype):
    # ndarray indices are mapped by the sweep: each example scatters into its own positions.
    def a(shape):
        return make_array(rng, shape, dtype)

    yield SampleInput((a((5,)), rng.integers(0, 5, size=4), a((4,))), {}, "batched indices")
    yield SampleInput((a((5,)), np.array([0, 4, 4, -1, -5, 2]), a((6,))), {},
                      "repeated and negative indices")
    yield SampleInput((a((5,)), rng.integers(-5, 5, size=3), a(())), {}, "0-d b")
    yield SampleInput((a((4, 3)), rng.integers(0, 4, size=5), a((5, 3))), {},
                      "rows of a 2-d target")
    yield SampleInput((a((4, 3)), rng.integers(0, 4, size=5), a((3,))), {},
                      "rows, b broadcasts")
    yield SampleInput((a((5,)), np.zeros(0, dtype=np.intp), a((0,))), {}, "empty index")


def _at_pair(a, i, j, b):
    np.add.at(a, (i, j), b)
    return a


def _at_pair_samples(rng, dtype):
    def a(shape):
        return make_array(rng, shape, dtype)

    yield SampleInput((a((4, 3)), rng.integers(0, 4, size=5), rng.integers(-3, 3, size=5),
                       a((5,))), {}, "two index arrays")
    yield SampleInput((a((4, 3, 2)), rng.integers(0, 4, size=(2, 3)), rng.integers(0, 3, size=3),
                       a((2,))), {}, "index arrays that broadcast, b broadcasts")


def _at_op(uf):
    def call(a, *args):
        uf.at(a, *args)
        return a

    call.__name__ = f"{uf.__name__}.at"
    return call


def _method_ops():
    ops = []
    for uf, dts in [(np.add, (np.float64, np.int64, np.float32)), (np.subtract, (np.float64,)),
                    (np.power, (np.float64,)), (np.greater, (np.float64, np.int64)),
                    (np.logical_and, (np.bool_,)), (np.arctan2, (np.float64,))]:
        ops.append(OpInfo(f"{uf.__name__}.outer", uf.outer, _outer_samples(uf), "rule",
                          dtypes=dts))
    ops.append(OpInfo("multiply.outer.out", np.multiply.outer, _outer_out_samples, "rule",
                      inplace=2))
    ops.append(OpInfo("sin.outer", np.sin.outer, _outer_errors, "rule"))
    ops.append(OpInfo("divmod.outer", np.divmod.outer, _divmod_outer, "rule",
                      dtypes=(np.float64, np.int64)))
    for uf, dts in [(np.add, (np.float64, np.int64)), (np.maximum, (np.float64,)),
                    (np.multiply, (np.int64,))]:
        ops.append(OpInfo(f"{uf.__name__}.at", _at_op(uf), _at_samples, "rule", dtypes=dts,
                          covers=uf.at, inplace=0))
    ops.append(OpInfo("negative.at", _at_op(np.negative),
                      lambda rng, dt: (s for s in _at_samples(rng, dt) if len(s.args) == 2),
                      "rule", covers=np.negative.at, inplace=0))
    ops.append(OpInfo("add.at.batched_indices", _at_op(np.add), _at_batched_index, "rule",
                      covers=np.add.at, inplace=0))
    # NumPy's dispatcher does not look into the index tuple: with only i and j batched, the
    # plain ufunc.at converts them (the clear error), as the OpInfo's undispatched says.
    ops.append(OpInfo("add.at.batched_index_pair", _at_pair, _at_pair_samples, "rule",
                      covers=np.add.at, inplace=0, undispatched=(1, 2)))
    return ops


OPS = _ufunc_ops() + _gufunc_ops() + _other_ufunc_ops() + _method_ops()
