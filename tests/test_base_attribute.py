"""``x.base`` (and ``x.flags.owndata``) as the per-example loop sees them (docs/semantics.md,
"The ndarray surface"): NumPy's collapse of a view's base, which stops at an array whose base
is not an array (``np.from_dlpack``'s capsule, ``np.frombuffer``'s bytes) or is an array of
another type (a memmap); the base of a view of ``np.from_dlpack``'s result, made inside the
function, is that result; SciPy's ``_prune_array`` (which copies a view of a much larger
base) decides per example as the loop; scikit-learn's functions that build a CSR array from
``from_dlpack`` views give the loop's results. Everything against the loop."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

import batchtensor as bt
from loop_reference import LAYOUTS, assert_same, laid_out, loop_vmap, strict_vmap

RNG = np.random.default_rng(41)


def _code(b, ref) -> np.int64:
    """What a base is, as a number the loop and vmap can compare: -1 None, 0 ``ref`` itself,
    1 another array, 2 not an array."""
    if b is None:
        return np.int64(-1)
    if b is ref:
        return np.int64(0)
    return np.int64(1 if isinstance(b, np.ndarray) else 2)


def _size(b) -> np.int64:
    return np.int64(b.size if isinstance(b, np.ndarray) else -1)


def _nested(f, inner, outer=0):
    return bt.vmap(bt.vmap(f, in_axes=inner), in_axes=outer, fallback="error")


def _loop_nested(f, inner, outer=0):
    return loop_vmap(loop_vmap(f, inner), outer)


# ---- a vmap input's example: the base is the caller's object NumPy's collapse stops at --------
VIEWS = {
    "x": lambda x: x,
    "x[1:]": lambda x: x[1:],
    "x.T": lambda x: x.T,
    "x[..., ::-1]": lambda x: x[..., ::-1],
    "np.asarray(x)": lambda x: np.asarray(x),
    "x.view(int8)": lambda x: x.view(np.int8),
}


def _callers(kind: str, xs: np.ndarray, tmp_path) -> tuple[np.ndarray, np.ndarray]:
    """A caller's array of this kind holding ``xs``'s values, and the object the test asks
    the loop's base to be."""
    if kind == "owner":
        a = xs.copy()
        return a, a
    if kind == "view of an owner":
        owner = np.concatenate([xs, xs], axis=-1)
        return owner[..., : xs.shape[-1]], owner
    if kind == "from_dlpack":  # its base is a capsule: NumPy's collapse stops at it
        a = np.from_dlpack(xs.copy())
        return a, a
    if kind == "frombuffer":  # its base is bytes
        fb = np.frombuffer(xs.tobytes(), dtype=xs.dtype)
        return fb.reshape(xs.shape), fb
    mm = np.memmap(tmp_path / "m.dat", dtype=xs.dtype, mode="w+", shape=xs.shape)
    mm[...] = xs
    return np.asarray(mm), mm  # (an ndarray whose base is a memmap: vmap cannot tell)


CALLERS = ("owner", "view of an owner", "from_dlpack", "frombuffer", "asarray of a memmap")


@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("kind", CALLERS)
def test_base_of_an_input_example_is_the_loops(kind, view, tmp_path):
    xs = RNG.normal(size=(3, 4, 2))
    arr, ref = _callers(kind, xs, tmp_path)
    v = VIEWS[view]

    def f(x):
        b = v(x).base
        return _code(b, ref), _size(b)

    want = loop_vmap(f)(arr)
    if kind == "asarray of a memmap":
        # the loop's examples are the caller's array's, whose base NumPy's collapse keeps
        # where the next base is of another type; vmap batches a plain view of a memmap
        # passed as it is, whose examples are memmaps: it cannot tell the two apart
        with pytest.raises(bt.BatchingError, match=r"x\.base"):
            bt.vmap(f, fallback="error")(arr)
        with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
            assert_same(bt.vmap(f)(arr), want)
        return
    assert_same(strict_vmap(f)(arr), want)
    for inner in (0, -1, 1):  # every axis of the example batched by an inner vmap as well
        try:
            want = _loop_nested(f, inner)(arr)
        except ValueError as e:  # (x.view(int8) of an example whose last axis is strided)
            with pytest.raises(ValueError, match=str(e)):
                _nested(f, inner)(arr)
            continue
        assert_same(_nested(f, inner)(arr), want)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_base_of_inputs_in_every_layout(layout):
    xs, ax = laid_out(RNG.normal(size=(3, 4, 2)), layout)
    owner = xs if xs.base is None else xs.base

    def f(x):
        return tuple(_code(v(x).base, owner) for k, v in VIEWS.items()
                     if k != "x.view(int8)" or x.flags.c_contiguous)

    assert_same(strict_vmap(f, ax)(xs), loop_vmap(f, ax)(xs))


def test_base_of_one_example_and_of_none():
    xs = np.from_dlpack(RNG.normal(size=(1, 5)))

    def f(x):
        return _code(x.base, xs), _size(x[2:].base)

    assert_same(strict_vmap(f)(xs), loop_vmap(f)(xs))
    none = np.from_dlpack(np.zeros((0, 5)))
    got = strict_vmap(f)(none)
    assert [g.shape for g in got] == [(0,), (0,)]


# ---- np.from_dlpack inside the function ---------------------------------------------------------
def _from_dlpack_views(x):
    """Every answer about base and ownership the loop gives for np.from_dlpack's result and
    for views of it (whose base is that result, a view whose own base is not an array)."""
    # (a copy of the example: x * 1 of an input mapped along its last axis would hold the
    # examples interleaved, where x.view(uint8) is a copy: docs/semantics.md)
    b = np.from_dlpack(np.ascontiguousarray(x) if x.base is not None else x * 1)
    out = [np.bool_(b.flags.owndata)]
    for v in (b[1:], b.T, b[::-1], b.reshape(-1), b.view(np.uint8), b[1:][1:], np.asarray(b)[:2]):
        base = v.base
        out += [_size(base), np.int64(base.ndim), np.bool_(v.flags.owndata),
                np.bool_(np.shares_memory(base, b)), np.asarray(base, like=base) * 1]
    view = b[1:]
    view.base[0] = 7  # a write into the base reaches the array itself, as in the loop
    out.append(b)
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64, np.uint8])
def test_views_of_a_from_dlpack_result_have_it_as_their_base(dtype):
    xs = (RNG.normal(size=(3, 6)) * 10).astype(dtype)
    f = _from_dlpack_views  # (it writes into the caller's array: each run gets its own copy)
    assert_same(strict_vmap(f)(xs.copy()), loop_vmap(f)(xs.copy()))
    assert_same(strict_vmap(f, -1)(xs.T.copy()), loop_vmap(f, -1)(xs.T.copy()))
    deep = np.stack([xs, xs[::-1]], axis=1)
    assert_same(_nested(f, 0)(deep.copy()), _loop_nested(f, 0)(deep.copy()))
    assert_same(_nested(f, -1, outer=1)(deep.T.copy()), _loop_nested(f, -1, outer=1)(deep.T.copy()))


def test_from_dlpack_of_an_input_and_of_a_copy():
    xs = RNG.normal(size=(4, 5))
    for copy in (None, False, True):
        def f(x, copy=copy):
            b = np.from_dlpack(x, copy=copy)
            v = b[1:3]
            return _size(v.base), np.bool_(b.flags.owndata), np.bool_(v.flags.owndata), \
                np.bool_(np.shares_memory(v.base, x))

        assert_same(strict_vmap(f)(xs), loop_vmap(f)(xs))


def test_from_dlpack_of_a_0d_array_example():
    xs = RNG.normal(size=(3,))

    def f(x):
        b = np.from_dlpack(np.array(x))  # a 0-d array, not a NumPy scalar
        return np.int64(b[...].base.ndim), _size(b[...].base), np.bool_(b.flags.owndata)

    assert_same(strict_vmap(f)(xs), loop_vmap(f)(xs))


def test_the_base_of_a_from_dlpack_result_itself_reruns():
    """The loop's base is the capsule, which no batch holds: the rerun gives it."""
    xs = RNG.normal(size=(3, 4))

    def f(x):
        return np.bool_(isinstance(np.from_dlpack(x * 1).base, np.ndarray))

    with pytest.raises(bt.BatchingError, match=r"x\.base"):
        bt.vmap(f, fallback="error")(xs)
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        assert_same(bt.vmap(f)(xs), loop_vmap(f)(xs))


@pytest.mark.parametrize("change", ["shape", "dtype", "shape of np.asarray(b)"])
def test_a_from_dlpack_result_changed_in_place_reruns_for_its_views_base(change):
    xs = RNG.normal(size=(3, 6))

    def f(x):
        b = np.from_dlpack(x * 1)
        if change == "shape":
            b.shape = (2, 3)
        elif change == "dtype":
            b.dtype = np.float32
        else:
            c = np.asarray(b)  # the same array in the loop
            c.shape = (3, 2)
        base = b[:1].base
        return np.int64(base.ndim), _size(base)

    with pytest.raises(bt.BatchingError, match=r"x\.base"):
        bt.vmap(f, fallback="error")(xs)
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        assert_same(bt.vmap(f)(xs), loop_vmap(f)(xs))


def test_an_inner_vmaps_result_is_not_taken_for_from_dlpacks():
    """An inner vmap that returned np.from_dlpack's result: the loop's inner vmap returns a
    stacked array of its own, which vmap's physical view of that result does not tell; the
    vectorised pass refuses rather than answer as for the from_dlpack array itself."""
    xs = RNG.normal(size=(2, 3, 4))

    def f(x):
        y = bt.vmap(lambda z: np.from_dlpack(z * 1))(x)
        return np.bool_(y.flags.owndata)

    with pytest.raises(bt.BatchingError, match=r"x\.flags\.owndata"):
        bt.vmap(f, fallback="error")(xs)


def test_views_of_a_fresh_value_still_rerun():
    """A view of a value made inside the function by any other op: vmap does not know
    whether the loop's example views it or owns memory a rule laid out."""
    xs = RNG.normal(size=(3, 4))

    def f(x):
        return np.bool_((x * 2)[1:].base is None), np.bool_((x * 2).base is None)

    with pytest.raises(bt.BatchingError, match=r"x\.base"):
        bt.vmap(f, fallback="error")(xs)
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        assert_same(bt.vmap(f)(xs), loop_vmap(f)(xs))


# ---- SciPy's _prune_array: copy a view of a much larger base ----------------------------------
util = pytest.importorskip("scipy._lib._util", reason="SciPy is a test extra")


def _pruned(k, through_dlpack=True):
    def f(x):
        b = np.from_dlpack(x * 1) if through_dlpack else x
        a = util._prune_array(b[:k])
        copied = not np.shares_memory(a, b) if a.size else np.bool_(a.flags.owndata)
        if a.size:
            a[0] = -1  # reaches b where the loop's a is a view
        return np.bool_(copied), np.bool_(a.flags.owndata), b * 1

    return f


@pytest.mark.parametrize("k", [0, 1, 2, 3, 4, 5, 8])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.bool_])
def test_prune_array_copies_where_the_loop_does(k, dtype):
    xs = (RNG.normal(size=(3, 8)) > 0).astype(dtype) if dtype is np.bool_ else \
        (RNG.normal(size=(3, 8)) * 5).astype(dtype)
    f = _pruned(k)
    assert_same(strict_vmap(f)(xs), loop_vmap(f)(xs))
    assert_same(strict_vmap(f, -1)(xs.T.copy()), loop_vmap(f, -1)(xs.T.copy()))
    deep = np.stack([xs, xs[::-1]], axis=1)  # (3, 2, 8): different examples in both levels
    assert_same(_nested(f, 0)(deep), _loop_nested(f, 0)(deep))
    assert_same(_nested(f, 0, outer=1)(deep), _loop_nested(f, 0, outer=1)(deep))


def test_prune_array_with_an_unbatched_argument():
    xs, ys = RNG.normal(size=(3, 8)), RNG.normal(size=(8,))

    def f(x, y):
        a = util._prune_array(np.from_dlpack(x + y)[:3])
        return np.bool_(a.flags.owndata), a

    assert_same(strict_vmap(f, (0, None))(xs, ys), loop_vmap(f, (0, None))(xs, ys))


def test_prune_array_of_an_input_view_decides_from_the_callers_array():
    xs = RNG.normal(size=(4, 6))
    for k in (1, 6):
        f = _pruned(k, through_dlpack=False)
        assert_same(strict_vmap(f)(xs.copy()), loop_vmap(f)(xs.copy()))


# ---- the corpus: scikit-learn builds a CSR array from from_dlpack views ------------------------
metrics = pytest.importorskip("sklearn.metrics", reason="scikit-learn is a test extra")
preprocessing = pytest.importorskip("sklearn.preprocessing", reason="scikit-learn is a test extra")

CLASSES = [0, 1, 2]


def _labels(batch, n, dtype=np.int64):
    y = RNG.integers(0, 3, (batch, n)).astype(dtype)
    y[:, :3] = CLASSES  # every class in every example: the loop's label sets agree
    return y


def _probabilities(batch, n, dtype):
    p = RNG.uniform(0.05, 1.0, (batch, n, 3))
    return (p / p.sum(-1, keepdims=True)).astype(dtype)


def _binary(batch, n):
    y = RNG.integers(0, 2, (batch, n))
    y[:, :2] = [0, 1]
    return y


def _corpus(dtype):
    b, n = 4, 12
    return {
        "log_loss": (functools.partial(metrics.log_loss, labels=CLASSES),
                     (_labels(b, n), _probabilities(b, n, dtype))),
        "d2_log_loss_score": (functools.partial(metrics.d2_log_loss_score, labels=CLASSES),
                              (_labels(b, n), _probabilities(b, n, dtype))),
        "hinge_loss": (metrics.hinge_loss,
                       (2 * _binary(b, n) - 1, RNG.normal(size=(b, n)).astype(dtype))),
        "roc_auc_score": (metrics.roc_auc_score,
                          (_binary(b, n), RNG.uniform(0.01, 0.99, (b, n)).astype(dtype))),
        "label_binarize": (functools.partial(preprocessing.label_binarize, classes=CLASSES),
                           (_labels(b, 7, np.int32 if dtype is np.float32 else np.int64),)),
    }


def _moved(args, axis):
    return tuple(np.moveaxis(a, 0, axis) for a in args)


def _check(f, args, in_axes, nested=False):
    """The loop's result; and where vmap does not run vectorised, not for ``x.base`` (the
    remaining cause, compiled code of scipy.sparse, reruns)."""
    if nested:  # the outer level maps a leading axis of two copies, each example different
        args = tuple(np.stack([a, a[::-1]]) for a in args)
        want = _loop_nested(f, in_axes)(*args)
        run = functools.partial(_nested, inner=in_axes)
    else:
        want = loop_vmap(f, in_axes)(*args)
        run = functools.partial(bt.vmap, in_axes=in_axes, fallback="error")
    try:
        got = run(f)(*args)
    except (TypeError, bt.BatchingError) as e:
        assert "x.base" not in str(e) and "x.flags.owndata" not in str(e), e
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", bt.PerformanceWarning)
            got = (bt.vmap(bt.vmap(f, in_axes=in_axes)) if nested
                   else bt.vmap(f, in_axes=in_axes))(*args)
    assert_same(got, want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ["log_loss", "d2_log_loss_score", "hinge_loss",
                                  "roc_auc_score", "label_binarize"])
def test_corpus_functions_as_the_loop(name, dtype):
    f, args = _corpus(dtype)[name]
    _check(f, args, 0)
    _check(f, _moved(args, -1), -1)
    _check(f, args, 0, nested=True)
    if len(args) == 2:  # y_true shared by every example
        _check(f, (args[0][0], args[1]), (None, 0))
