"""Creation and conversion: the *_like functions, the like= functions (zeros, ones, empty, full,
arange, eye, identity, tri, fromfunction), conversion with like= (array, asarray, asanyarray,
ascontiguousarray, asfortranarray, require), linspace / logspace / geomspace with array
endpoints, and meshgrid."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import ALL, SHAPES, make_array


def like_samples(fill: bool):
    def gen(rng, dtype):
        head = (lambda a: (a, 2.5)) if fill else (lambda a: (a,))
        for shape in SHAPES:
            yield SampleInput(head(make_array(rng, shape, dtype)), {}, f"{shape}")
        a = make_array(rng, (3, 4), dtype)
        yield SampleInput(head(a), {"dtype": np.int32}, "dtype=")
        yield SampleInput(head(a), {"shape": (2, 5)}, "shape=")
        yield SampleInput(head(a), {"shape": 3}, "shape=int")
        yield SampleInput(head(a), {"shape": ()}, "shape=()")
        yield SampleInput(head(a), {"shape": (2, 0)}, "shape with a 0")
        yield SampleInput(head(a), {"order": "F"}, "order=F")
        yield SampleInput(head(a), {"order": "C", "shape": (4, 2)}, "order=C shape=")
        yield SampleInput(head(a), {"order": "F", "shape": (4, 2)}, "order=F shape=")
        yield SampleInput(head(make_array(rng, (3, 5), dtype, noncontiguous=True)), {},
                          "non-contiguous")
        yield SampleInput(head(a), {"order": "X"}, "bad order raises")
        yield SampleInput(head(a), {"shape": (-1, 2)}, "negative shape raises")
        if fill:
            yield SampleInput((a, -1.7), {"dtype": np.int64}, "unsafe cast of the fill")
            yield SampleInput((a, np.nan), {"dtype": np.float32}, "NaN fill")
    return gen




# ---- from a shape, with like=: an unbatched result on the reference's backend -----------------
# NumPy dispatches these only through ``like=``; the sample's only array is the reference, so
# nothing batched reaches the op: dispatch creates one plain array (no path is recorded for it)
# and vmap broadcasts it, which must equal the loop's stack of identical arrays.
_LIKE_NOTE = ("like= only: dispatch creates one plain array on the reference's backend (no "
              "batched argument, so no path is recorded); vmap broadcasts it")


def _with_like(fn):
    def op(ref, *args, **kwargs):
        return fn(*args, like=ref, **kwargs)

    op.__name__ = f"{fn.__name__}_like"
    return op


def _like_only(name, samples, **kw) -> OpInfo:
    fn = getattr(np, name)
    kw.setdefault("notes", _LIKE_NOTE)
    return OpInfo(name, _with_like(fn), samples, "rule", covers=fn, **kw)


def _ref(rng, k):
    """A like= reference of another shape per sample (0-d, size-0, n-d)."""
    return make_array(rng, ((), (0,), (3,), (2, 3))[k % 4], np.float64)


def shape_samples(*, fill=None):
    def gen(rng, dtype):
        head = (lambda s: (s,)) if fill is None else (lambda s: (s, fill))
        for k, shape in enumerate([(), 0, 3, (2, 0), (2, 3), [2, 1, 2]]):
            yield SampleInput((_ref(rng, k),) + head(shape), {}, f"shape={shape!r}")
        yield SampleInput((_ref(rng, 0),) + head((2, 3)), {"dtype": dtype}, "dtype=")
        yield SampleInput((_ref(rng, 1),) + head((2, 3)), {"dtype": np.complex64}, "complex")
        yield SampleInput((_ref(rng, 2),) + head((3, 2)), {"order": "F"}, "order=F")
        yield SampleInput((_ref(rng, 3),) + head((-1, 2)), {}, "negative shape raises")
        yield SampleInput((_ref(rng, 3),) + head(2), {"order": "X"}, "bad order raises")
        yield SampleInput((_ref(rng, 2),) + head(2), {"dtype": "foo"}, "bad dtype raises")
    return gen


def full_samples(rng, dtype):
    yield from shape_samples(fill=2.5)(rng, dtype)
    ref = _ref(rng, 2)
    # a batched fill value: one fill per example (the rule); with only the fill batched NumPy
    # never dispatches (like= a plain array) and the conversion raises a clear TypeError. (With
    # dtype= NumPy's full copies into a plain array instead, which raises a BatchingError:
    # tests/test_creation.py covers dtype= and that error.)
    yield SampleInput((ref, (2, 3), make_array(rng, (), dtype)), {}, "fill 0-d array")
    yield SampleInput((ref, (2, 3), make_array(rng, (3,), dtype)), {}, "fill broadcast")
    yield SampleInput((ref, (3, 2), make_array(rng, (2,), dtype)), {"order": "F"}, "order=F")
    yield SampleInput((ref, (2, 0), make_array(rng, (1,), dtype)), {}, "size-0 shape")
    yield SampleInput((ref, (), make_array(rng, (), dtype)), {}, "0-d shape")
    yield SampleInput((ref, (2, 3), make_array(rng, (2,), dtype)), {}, "no broadcast raises")
    yield SampleInput((ref, (2, 3), make_array(rng, (3,), dtype)), {"order": "K"},
                      "order=K raises")


def arange_samples(rng, dtype):
    for k, args in enumerate([(5,), (2, 9), (9, 2, -2), (0.5, 3.2, 0.7), (3, 3), (-2.5,),
                              (1, 10, 4)]):
        yield SampleInput((_ref(rng, k),) + args, {}, f"arange{args}")
    yield SampleInput((_ref(rng, 0), 0, 6, 2), {"dtype": np.float32}, "dtype=")
    yield SampleInput((_ref(rng, 1), 0.5, 4), {"dtype": np.int64}, "float bounds, int dtype")
    yield SampleInput((_ref(rng, 2), 0, 5, 0), {}, "step 0 raises")
    yield SampleInput((_ref(rng, 3), 5), {"dtype": bool}, "bool of length > 2 raises")


def eye_samples(rng, dtype):
    for k, (args, kw) in enumerate([((3,), {}), ((2, 4), {}), ((4, 3, 1), {}), ((3,), {"k": -2}),
                                    ((0,), {}), ((3, 3, 5), {}), ((3,), {"dtype": dtype}),
                                    ((2, 3), {"order": "F"})]):
        yield SampleInput((_ref(rng, k),) + args, kw, f"eye{args} {kw}")
    yield SampleInput((_ref(rng, 0), -1), {}, "negative N raises")
    yield SampleInput((_ref(rng, 1), 3), {"k": 1.5}, "float k raises")


def identity_samples(rng, dtype):
    for k, n in enumerate([0, 1, 4]):
        yield SampleInput((_ref(rng, k), n), {}, f"n={n}")
    yield SampleInput((_ref(rng, 3), 3), {"dtype": dtype}, "dtype=")
    yield SampleInput((_ref(rng, 2), -2), {}, "negative n raises")


def tri_samples(rng, dtype):
    for k, (args, kw) in enumerate([((3,), {}), ((2, 4), {}), ((4, 3, 1), {}), ((3,), {"k": -1}),
                                    ((0,), {}), ((3,), {"dtype": dtype}), ((-1,), {})]):
        yield SampleInput((_ref(rng, k),) + args, kw, f"tri{args} {kw}")


def _fromfunction_op(ref, c, *, mode, shape, dtype=float):
    """``mode="closure"``: the function closes over ``c``; ``"kwarg"``: ``c`` is a keyword
    that fromfunction passes on; ``"plain"``: ``c`` unused (an unbatched result)."""
    if mode == "closure":
        return np.fromfunction(lambda *idx: sum(idx) * c, shape, dtype=dtype, like=ref)
    if mode == "kwarg":
        return np.fromfunction(lambda *idx, c: sum(idx) * c, shape, dtype=dtype, like=ref, c=c)
    return np.fromfunction(lambda *idx: sum(idx) + 0 * c.size, shape, dtype=dtype, like=ref)


def fromfunction_samples(rng, dtype):
    for mode in ("closure", "kwarg", "plain"):
        yield SampleInput((_ref(rng, 2), make_array(rng, (), dtype)),
                          {"mode": mode, "shape": (2, 3)}, mode)
    yield SampleInput((_ref(rng, 0), make_array(rng, (3,), dtype)),
                      {"mode": "kwarg", "shape": (2, 3), "dtype": int}, "broadcast c, dtype=int")
    yield SampleInput((_ref(rng, 1), make_array(rng, (), dtype)),
                      {"mode": "kwarg", "shape": (0, 3)}, "size-0 shape")
    yield SampleInput((_ref(rng, 3), make_array(rng, (4,), dtype)),
                      {"mode": "closure", "shape": (3,)}, "1-d")
    yield SampleInput((_ref(rng, 3), make_array(rng, (), dtype)),
                      {"mode": "kwarg", "shape": (-1, 2)}, "negative shape raises")


# ---- conversion with like= ----------------------------------------------------------------------
_FORMS = {
    "pair": lambda a, b: [a, b],
    "tuple": lambda a, b: (a, b, a),
    "nested": lambda a, b: [[a, b], [b, a]],
    "scalars": lambda a, b: [a, 1.5, b, 2],
    "mixed list": lambda a, b: [a, [1, 2, 3]],
}


def _with_like_conv(fn):
    """``fn(a, like=a)``; with ``form``, ``fn(<a sequence holding a and b>, like=a)``."""
    def op(a, *rest, form=None, **kwargs):
        obj = a if form is None else _FORMS[form](a, *rest)
        return fn(obj, like=a, **kwargs)

    op.__name__ = f"{fn.__name__}_like"
    return op


def conversion_samples(*, order=True, copy=True, ndmin=False, lists=True, requirements=False):
    def gen(rng, dtype):
        for shape in SHAPES:
            yield SampleInput((make_array(rng, shape, dtype),), {}, f"{shape}")
        a = make_array(rng, (3, 4), dtype)
        yield SampleInput((make_array(rng, (3, 5), dtype, noncontiguous=True),), {},
                          "non-contiguous")
        yield SampleInput((a,), {"dtype": np.float32}, "dtype=float32")
        yield SampleInput((a,), {"dtype": np.int8}, "dtype=int8 (unsafe cast)")
        yield SampleInput((a,), {"dtype": "foo"}, "bad dtype raises")
        if order:
            yield SampleInput((a,), {"order": "C"}, "order=C")
            yield SampleInput((make_array(rng, (3, 5), dtype, noncontiguous=True),),
                              {"order": "F"}, "order=F")
            yield SampleInput((make_array(rng, (2, 3, 4), dtype),), {"order": "A"}, "order=A")
            yield SampleInput((a,), {"order": "X"}, "bad order raises")
        if copy:
            yield SampleInput((a,), {"copy": True}, "copy=True")
            yield SampleInput((a,), {"copy": False}, "copy=False, nothing to copy")
            yield SampleInput((a,), {"copy": False, "dtype": np.complex64},
                              "copy=False with a cast raises")
            if order:
                yield SampleInput((a,), {"copy": False, "order": "F"},
                                  "copy=False, not F-contiguous raises")
        if ndmin:
            yield SampleInput((make_array(rng, (), dtype),), {"ndmin": 2}, "ndmin on 0-d")
            yield SampleInput((make_array(rng, (3,), dtype),), {"ndmin": 3}, "ndmin=3")
            yield SampleInput((a,), {"ndmin": 1}, "ndmin below the rank")
            yield SampleInput((a,), {"ndmin": 4, "order": "F"}, "ndmin with order=F")
            yield SampleInput((a,), {"ndmax": 2}, "ndmax=")
            yield SampleInput((a,), {"ndmax": 1, "dtype": np.complex64},
                              "ndmax below the rank with a cast raises")
            yield SampleInput((a,), {"subok": True}, "subok=")
        if requirements:
            for req in ("C", "F", ["A", "W"], "FOW", ["E", "C"], "O", (), "CF"):
                yield SampleInput((make_array(rng, (3, 5), dtype, noncontiguous=True),),
                                  {"requirements": req}, f"requirements={req!r}")
            yield SampleInput((a,), {"requirements": ["Q"]}, "unknown flag raises")
        if lists:
            b0, b1 = make_array(rng, (), dtype), make_array(rng, (), dtype)
            c0, c1 = make_array(rng, (3,), dtype), make_array(rng, (3,), dtype)
            yield SampleInput((c0, c1), {"form": "pair"}, "a list of batched values")
            yield SampleInput((b0, b1), {"form": "tuple"}, "a tuple")
            yield SampleInput((c0, c1), {"form": "nested"}, "nested lists")
            yield SampleInput((b0, b1), {"form": "scalars"}, "Python scalars among them")
            yield SampleInput((c0, c1), {"form": "mixed list"}, "a plain sub-list")
            yield SampleInput((c0, c1), {"form": "pair", "dtype": np.float32}, "list, dtype=")
            yield SampleInput((b0, b1), {"form": "scalars", "dtype": np.int8},
                              "list, dtype=int8")
            yield SampleInput((c0, make_array(rng, (2,), dtype)), {"form": "pair"},
                              "ragged raises")
            if copy:
                yield SampleInput((c0, c1), {"form": "pair", "copy": False},
                                  "a list with copy=False raises")
    return gen


# ---- ranges from array endpoints ----------------------------------------------------------------
def _endpoints(rng, dtype, shape_a=(), shape_b=()):
    a = make_array(rng, shape_a, dtype)
    b = make_array(rng, shape_b, dtype)
    return a, b


def linspace_samples(rng, dtype):
    for sa, sb in [((), ()), ((3,), (3,)), ((2, 3), (3,)), ((), (2, 2)), ((0,), ()),
                   ((2, 1), (4,))]:
        yield SampleInput(_endpoints(rng, dtype, sa, sb), {"num": 5}, f"{sa} {sb}")
    a, b = _endpoints(rng, dtype, (3,), (3,))
    yield SampleInput((a, b), {}, "num=50 default")
    yield SampleInput((a, b), {"num": 0}, "num=0")
    yield SampleInput((a, b), {"num": 1}, "num=1")
    yield SampleInput((a, b), {"num": 1, "endpoint": False}, "num=1 endpoint=False")
    yield SampleInput((a, b), {"num": 4, "endpoint": False}, "endpoint=False")
    yield SampleInput((a, b), {"num": 4, "retstep": True}, "retstep")
    yield SampleInput((a, b), {"num": 1, "retstep": True}, "retstep num=1 (NaN step)")
    yield SampleInput((a, b), {"num": 4, "axis": -1}, "axis=-1")
    yield SampleInput(_endpoints(rng, dtype, (2, 3), (2, 3)), {"num": 4, "axis": 1}, "axis=1")
    yield SampleInput((a, b), {"num": 4, "axis": 2}, "axis out of range raises")
    yield SampleInput((a, b), {"num": -1}, "negative num raises")
    yield SampleInput((a, b), {"num": 7, "dtype": np.int64}, "int dtype floors")
    yield SampleInput((a, b), {"num": 6, "dtype": np.float32}, "dtype=float32")
    # start == stop in some examples only: NumPy's data-dependent branch (any step == 0) must be
    # taken per example. linspace(0, 22, 22, endpoint=False) floors to 0..21 by ``arange *
    # step``; the other branch gives 14.999... at 15, so one batched call would floor it to 14.
    c = float(rng.integers(-5, 5))
    s, t = (np.array(0.0), np.array(22.0)) if rng.random() < 0.5 else (np.array(c), np.array(c))
    yield SampleInput((s, t), {"num": 22, "endpoint": False, "dtype": np.int64},
                      "a zero step in some examples")
    yield SampleInput((make_array(rng, (), dtype),), {"num": 5, "scalar_start": 1.5},
                      "a Python scalar start")


def logspace_samples(rng, dtype):
    for sa, sb in [((), ()), ((3,), (3,)), ((2, 3), (3,))]:
        a, b = _endpoints(rng, dtype, sa, sb)
        yield SampleInput((a, b), {"num": 5}, f"{sa} {sb}")
    a, b = _endpoints(rng, dtype, (3,), (3,))
    yield SampleInput((a, b), {"num": 4, "endpoint": False, "axis": -1}, "endpoint, axis")
    yield SampleInput((a, b), {"num": 0}, "num=0")
    yield SampleInput((a, b), {"num": 4, "dtype": np.int64}, "int dtype")
    base0 = make_array(rng, (), np.float64, low=1.5, high=3)
    base1 = make_array(rng, (3,), np.float64, low=1.5, high=3)
    yield SampleInput((a, b, base0), {"num": 4}, "0-d base")
    yield SampleInput((a, b, base1), {"num": 4}, "1-d base")
    yield SampleInput((a, b, base1), {"num": 4, "axis": 1}, "1-d base, axis=1")
    yield SampleInput((make_array(rng, (), dtype), make_array(rng, (), dtype), base1),
                      {"num": 3, "axis": -1}, "0-d endpoints, 1-d base")
    yield SampleInput((a, b, make_array(rng, (2,), np.float64, low=1.5, high=3)), {"num": 3},
                      "base does not broadcast raises")
    yield SampleInput((base1,), {"num": 3, "scalar_ends": (0, 2)},
                      "Python scalar endpoints, batched base")
    yield SampleInput((base0,), {"num": 3, "scalar_ends": (0.5, 1)},
                      "Python scalar endpoints, 0-d base")


def _logspace_op(*arrays, scalar_ends=None, **kw):
    if scalar_ends is not None:
        return np.logspace(*scalar_ends, base=arrays[0], **kw)
    if len(arrays) == 3:
        return np.logspace(arrays[0], arrays[1], base=arrays[2], **kw)
    return np.logspace(*arrays, **kw)


def _linspace_op(*arrays, scalar_start=None, **kw):
    if scalar_start is not None:
        return np.linspace(scalar_start, arrays[0], **kw)
    return np.linspace(*arrays, **kw)


def geomspace_samples(rng, dtype):
    def ends(sa, sb, low=1, high=9):
        a = make_array(rng, sa, dtype, low=low, high=high)
        b = make_array(rng, sb, dtype, low=low, high=high)
        return a, b

    for sa, sb in [((), ()), ((3,), (3,)), ((2, 3), (3,)), ((0,), ())]:
        yield SampleInput(ends(sa, sb), {"num": 5}, f"{sa} {sb}")
    a, b = ends((3,), (3,))
    yield SampleInput((a, b), {"num": 0}, "num=0")
    yield SampleInput((a, b), {"num": 1}, "num=1")
    yield SampleInput((a, b), {"num": 4, "endpoint": False, "axis": -1}, "endpoint, axis")
    yield SampleInput((a, b), {"num": 4, "dtype": np.int64}, "int dtype")
    yield SampleInput((a, b), {"num": 4, "dtype": np.float32}, "dtype=float32")
    if np.dtype(dtype).kind != "u":
        yield SampleInput(ends((3,), (3,), -9, -1), {"num": 4}, "negative endpoints")
    yield SampleInput((a, b), {"num": 4, "axis": 2}, "axis out of range raises")
    z = make_array(rng, (3,), dtype, low=1, high=9)
    z[0] = 0
    yield SampleInput((z, b), {"num": 3}, "a zero endpoint raises")


def meshgrid_samples(rng, dtype):
    x, y = make_array(rng, (3,), dtype), make_array(rng, (4,), np.float64)
    yield SampleInput((x, y), {}, "xy")
    yield SampleInput((x, y), {"indexing": "ij"}, "ij")
    yield SampleInput((x, y), {"sparse": True}, "sparse")
    yield SampleInput((x, y), {"sparse": True, "copy": False, "indexing": "ij"},
                      "sparse copy=False")
    yield SampleInput((x, y), {"copy": False}, "copy=False (broadcast views)")
    yield SampleInput((x, y, make_array(rng, (2,), dtype)), {}, "three grids")
    yield SampleInput((x,), {}, "one grid")
    yield SampleInput((make_array(rng, (2, 3), dtype), make_array(rng, (), dtype)), {},
                      "n-d and 0-d inputs are raveled")
    yield SampleInput((x, make_array(rng, (0,), dtype)), {"indexing": "ij"}, "size-0")
    yield SampleInput((x, y), {"indexing": "yx"}, "bad indexing raises")


OPS = [
    OpInfo("zeros_like", np.zeros_like, like_samples(False), "rule", dtypes=ALL),
    OpInfo("ones_like", np.ones_like, like_samples(False), "rule", dtypes=ALL),
    OpInfo("empty_like", np.empty_like, like_samples(False), "rule", dtypes=ALL,
           check_values=False, notes="values are uninitialised: shapes and dtypes only"),
    OpInfo("full_like", np.full_like, like_samples(True), "rule", dtypes=ALL),
    *[_like_only(name, samples, dtypes=dtypes, **kw) for name, samples, dtypes, kw in [
        ("zeros", shape_samples(), (np.float64,), {}),
        ("ones", shape_samples(), (np.int32,), {}),
        ("empty", shape_samples(), (np.float64,),
         {"check_values": False, "notes": "values are uninitialised: shapes and dtypes only; "
                                          + _LIKE_NOTE}),
        ("arange", arange_samples, (np.float64,), {}),
        ("eye", eye_samples, (np.int32,), {}),
        ("identity", identity_samples, (np.bool_,), {}),
        ("tri", tri_samples, (np.int32,), {}),
    ]],
    OpInfo("full", _with_like(np.full), full_samples, "rule", covers=np.full,
           dtypes=(np.float64, np.int32), undispatched=(-1,),
           notes="a batched fill value: the rule; with like= a plain array NumPy never "
                 "dispatches and the conversion raises a clear TypeError"),
    OpInfo("fromfunction", _fromfunction_op, fromfunction_samples, "decomposition",
           covers=np.fromfunction, dtypes=(np.float64, np.int64),
           notes="a batched keyword: the decomposition; a function closing over batched "
                 "values runs once on the plain coordinates and batches by itself"),
    OpInfo("array", _with_like_conv(np.array), conversion_samples(ndmin=True), "rule",
           covers=np.array, dtypes=(np.float64, np.int32, np.complex128, np.bool_),
           undispatched=(1,),
           notes="like= a plain array with only a list element batched: NumPy never "
                 "dispatches (a clear TypeError)"),
    OpInfo("asarray", _with_like_conv(np.asarray), conversion_samples(), "rule",
           covers=np.asarray, dtypes=(np.float64, np.int32), undispatched=(1,)),
    OpInfo("asanyarray", _with_like_conv(np.asanyarray), conversion_samples(lists=False),
           "rule", covers=np.asanyarray),
    OpInfo("ascontiguousarray", _with_like_conv(np.ascontiguousarray),
           conversion_samples(order=False, copy=False, lists=False), "rule",
           covers=np.ascontiguousarray, dtypes=(np.float64, np.uint8)),
    OpInfo("asfortranarray", _with_like_conv(np.asfortranarray),
           conversion_samples(order=False, copy=False, lists=False), "rule",
           covers=np.asfortranarray, dtypes=(np.float64, np.uint8)),
    OpInfo("require", _with_like_conv(np.require),
           conversion_samples(order=False, copy=False, lists=False, requirements=True), "rule",
           covers=np.require),
    OpInfo("linspace", _linspace_op, linspace_samples, "rule", covers=np.linspace,
           dtypes=(np.float64, np.float32, np.int32, np.complex128)),
    OpInfo("logspace", _logspace_op, logspace_samples, "rule", covers=np.logspace,
           dtypes=(np.float64, np.int32)),
    OpInfo("geomspace", np.geomspace, geomspace_samples, "rule",
           dtypes=(np.float64, np.int32, np.complex128)),
    OpInfo("meshgrid", np.meshgrid, meshgrid_samples, "rule", dtypes=(np.float64, np.int32)),
]
