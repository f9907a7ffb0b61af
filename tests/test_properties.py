"""Property tests: random shapes, dtypes, in_axes, out_axes, nesting depth and chunk sizes over
composite functions, against the per-example loop (the ground truth of every result).

Each case draws a function, a dtype, one example's shapes, then for each of 1-3 nested vmap
levels a batch size, an in_axes entry per argument (None, or an axis, often negative), an
out_axes (an int, or a pytree prefix for tuple/dict outputs) and a chunk size; it builds the
physical inputs by inserting the batch axes innermost first and compares
``vmap(...vmap(f)...)`` with ``loop_vmap(...loop_vmap(f)...)``: same tree, shapes, dtypes,
values (NaN where NaN), or the same exception type. The run is derandomised (reproducible in
CI) and generates well over 10,000 cases.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loop_reference import assert_same, loop_vmap

import batchtensor as bt
from batchtensor.levels import active_levels
from batchtensor.pytree import flatten

REAL = ("float64", "float32", "int64", "int32")
NUMERIC = REAL + ("complex128",)
ALL = NUMERIC + ("bool",)


def _last(x):
    return -1 if x.ndim else None


def _inplace(x, y):
    a = np.zeros_like(x + y)  # batched if either is (np.zeros_like(x) alone is plain for a
    # plain x, and writing a batched y into a plain array raises, by design)
    a += y
    a[...] *= 2
    if a.ndim:
        a[..., 0] = x[..., 0]
    return a


def _scalar_aliases(x, y):
    """0-d values are NumPy scalars per example: += rebinds (the list keeps the old value) and
    an array built from one is new storage."""
    v = x.sum() * 1
    hist = [v]
    v += y.sum()
    hist.append(v)
    a = np.atleast_1d(v)
    a += 1
    return np.stack(hist), a, v


def _powers(x, y):
    with np.errstate(all="ignore"):
        return x ** 2, (x * y) ** 0.5, (x > y) ** 2, x.sum() ** 0.5, x ** -1


def _agreeing_branch(x, y):
    if np.all(x == x):  # every example agrees (no NaN inputs): a Python branch is fine
        return x + y
    return x - y


# name -> (function of one example (x, y), y's shape relative to x, dtypes, min rank of x)
#   y: "same" = x's shape, "suffix" = a trailing part of it (broadcasts), "scalar" = ()
FUNCS = {
    "pointwise": (lambda x, y: np.sin(x) * y + 1, "suffix", ("float64", "float32",
                                                              "complex128"), 0),
    "arith": (lambda x, y: (x * 3 - y) // 2 + x % 5, "suffix", REAL, 0),
    "where": (lambda x, y: np.where(x > y, x, y * 2), "suffix", REAL + ("bool",), 0),
    "reduce_last": (lambda x, y: np.sum(x * y, axis=_last(x)), "suffix", NUMERIC, 0),
    "mean_keepdims": (lambda x, y: np.mean(x, axis=_last(x), keepdims=True) - y, "suffix",
                      ("float64", "int64", "float32"), 0),
    "argmax": (lambda x, y: np.argmax(x + y, axis=_last(x)), "suffix", REAL, 0),
    "sort": (lambda x, y: np.sort(x, axis=-1) + y, "suffix", REAL, 1),
    "reshape_T": (lambda x, y: (x * y).T.reshape(-1), "suffix", ALL, 0),
    "slice": (lambda x, y: x[..., ::-1] + y, "suffix", NUMERIC, 1),
    "matmul": (lambda x, y: x @ (np.swapaxes(y, -1, -2) if y.ndim > 1 else y), "same",
               NUMERIC, 1),
    "concat_stack": (lambda x, y: np.stack([np.concatenate([x, x * y], axis=-1),
                                            np.concatenate([x + y, x], axis=-1)]), "suffix",
                     ALL, 1),
    "inplace": (_inplace, "suffix", NUMERIC, 0),
    "clip_abs": (lambda x, y: np.clip(x, -0.5, 0.5) + np.abs(y), "suffix", REAL, 0),
    "reduce_all_axes": (lambda x, y: x.sum(axis=tuple(range(x.ndim))) * np.max(y, initial=-3),
                        "suffix", REAL, 0),
    "take_along": (lambda x, y: np.take_along_axis(x, np.argsort(x * 0 + y, axis=-1), axis=-1),
                   "suffix", REAL, 1),
    "tree_out": (lambda x, y: (x.sum(), {"a": y * 2, "b": x - 1}), "suffix", NUMERIC, 0),
    "astype": (lambda x, y: (x > 0).astype(np.int32) + (y < 0), "suffix", REAL, 0),
    "moveaxis": (lambda x, y: np.moveaxis(x, 0, -1).sum(axis=0) + y.sum(), "suffix", NUMERIC,
                 1),
    "accumulate": (lambda x, y: np.multiply.accumulate(x, axis=-1) + y, "suffix", NUMERIC, 1),
    "branch": (_agreeing_branch, "suffix", NUMERIC, 0),
    "getitem_adv": (lambda x, y: x[..., [0, -1]] * 2 + y.sum(), "suffix", ALL, 1),
    "var_ddof": (lambda x, y: np.var(x, axis=_last(x), ddof=1) + y.mean(), "suffix",
                 ("float64",), 0),
    "expand_squeeze": (lambda x, y: np.squeeze(np.expand_dims(x, 0), axis=0) - y, "suffix",
                       NUMERIC, 0),
    "transpose_sum": (lambda x, y: np.transpose(x * y).sum(axis=0), "suffix", NUMERIC, 1),
    "scalar_aliases": (_scalar_aliases, "suffix", NUMERIC, 0),
    "powers": (_powers, "suffix", ("float64", "float32", "complex128"), 0),
}

CASES = {"count": 0}


def _values(rng, shape, dtype):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith("int"):
        return rng.integers(-5, 6, size=shape).astype(dtype)
    if dtype == "complex128":
        return rng.normal(size=shape) + 1j * rng.normal(size=shape)
    return rng.normal(size=shape).astype(dtype)


def _insert(x, axis, size, rng, dtype):
    """A batch of ``size`` independent copies-with-new-values of ``x`` along ``axis``."""
    parts = [x] + [_values(rng, x.shape, dtype) for _ in range(size - 1)]
    return np.stack(parts[:size], axis=axis)


@st.composite
def cases(draw, names=tuple(sorted(FUNCS))):
    name = draw(st.sampled_from(names))
    f, ykind, dtypes, min_rank = FUNCS[name]
    dtype = draw(st.sampled_from(dtypes))
    rank = draw(st.integers(min_rank, 3))
    shape = tuple(draw(st.lists(st.integers(0, 3) if draw(st.booleans()) else st.integers(1, 3),
                                min_size=rank, max_size=rank)))
    if ykind == "same":
        yshape = shape
    else:
        yshape = shape[draw(st.integers(0, rank)):]
    seed = draw(st.integers(0, 2**16))
    depth = draw(st.integers(1, 3))
    rng = np.random.default_rng(seed)
    x, y = _values(rng, shape, dtype), _values(rng, yshape, dtype)
    levels = []
    for _ in range(depth):  # innermost first
        size = draw(st.integers(1, 3))
        axes = []
        for arr_i, a in enumerate((x, y)):
            if draw(st.integers(0, 3)) == 0:
                axes.append(None)
                continue
            pos = draw(st.integers(0, a.ndim))
            axes.append(pos - a.ndim - 1 if draw(st.booleans()) else pos)
            new = _insert(a, pos, size, rng, dtype)
            if arr_i == 0:
                x = new
            else:
                y = new
        chunk = draw(st.sampled_from([None, None, 1, 2]))
        spec = axes[0] if axes[0] == axes[1] and draw(st.booleans()) else tuple(axes)
        levels.append({"size": size, "in_axes": spec, "chunk": chunk, "all_none":
                       axes == [None, None]})
    return name, dtype, x, y, levels


def _out_axes(data, out_ranks, tree_out):
    """An out_axes valid for outputs of the given ranks (per example of this level)."""
    def one(r):
        pos = data.draw(st.integers(0, r), label="out axis")
        return pos - r - 1 if data.draw(st.booleans(), label="negative") else pos

    if tree_out and data.draw(st.booleans(), label="tree out_axes"):
        r0, ra, rb = out_ranks
        return (one(r0), {"a": one(ra), "b": one(rb)})
    return one(min(out_ranks))


def _build(name, levels, data, x, y):
    f = FUNCS[name][0]
    vm, ref = f, f
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        example = f(_example(x, levels, 0), _example(y, levels, 1))
    ranks = [np.ndim(leaf) for leaf in flatten(example)[0]]
    for depth, lv in enumerate(levels):
        out_axes = _out_axes(data, [r + depth for r in ranks], name == "tree_out")
        size = lv["size"] if lv["all_none"] else None
        vm = bt.vmap(vm, lv["in_axes"], out_axes, axis_size=size, chunk_size=lv["chunk"])
        ref = loop_vmap(ref, lv["in_axes"], out_axes, axis_size=lv["size"])
    return vm, ref


def _example(a, levels, which):
    """One example of argument ``which``: index 0 along each mapped axis, outermost first."""
    for lv in reversed(levels):
        spec = lv["in_axes"]
        ax = spec if not isinstance(spec, tuple) else spec[which]
        if ax is not None:
            a = np.take(a, 0, axis=ax)
    return a


def check_case(case, data):
    name, dtype, x, y, levels = case
    CASES["count"] += 1
    try:
        vm, ref = _build(name, levels, data, x, y)
    except Exception as e:  # noqa: BLE001  (one example already raises: both must)
        vm = ref = None
        first_error = e
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if ref is None:
            with pytest.raises(type(first_error)):
                f = FUNCS[name][0]
                for lv in levels:
                    f = bt.vmap(f, lv["in_axes"], 0, chunk_size=lv["chunk"],
                                axis_size=lv["size"] if lv["all_none"] else None)
                f(x.copy(), y.copy())
            return
        try:
            want = ref(x.copy(), y.copy())
        except Exception as e:  # noqa: BLE001
            with pytest.raises(type(e)):
                vm(x.copy(), y.copy())
            return
        got = vm(x.copy(), y.copy())
    tol = 2e-4 if dtype in ("float32",) else None
    assert_same(got, want, rtol=tol)
    assert active_levels() == ()


SETTINGS = dict(deadline=None, derandomize=True, database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])

# README's run draws 2600 cases per group; CI's runs on the oldest and newest NumPy (which check
# NumPy's versions, not the generator) draw fewer through this variable, to keep CI short
MAX_EXAMPLES = int(os.environ.get("BATCHTENSOR_PROPERTY_EXAMPLES", "2600"))
_NAMES = sorted(FUNCS)
_GROUPS = [tuple(_NAMES[i::4]) for i in range(4)]


@settings(max_examples=MAX_EXAMPLES, **SETTINGS)
@given(cases(_GROUPS[0]), st.data())
def test_vmap_matches_loop_group0(case, data):
    check_case(case, data)


@settings(max_examples=MAX_EXAMPLES, **SETTINGS)
@given(cases(_GROUPS[1]), st.data())
def test_vmap_matches_loop_group1(case, data):
    check_case(case, data)


@settings(max_examples=MAX_EXAMPLES, **SETTINGS)
@given(cases(_GROUPS[2]), st.data())
def test_vmap_matches_loop_group2(case, data):
    check_case(case, data)


@settings(max_examples=MAX_EXAMPLES, **SETTINGS)
@given(cases(_GROUPS[3]), st.data())
def test_vmap_matches_loop_group3(case, data):
    check_case(case, data)


def test_generated_case_count():
    """The four property tests above generate >= 10,000 cases together (when they ran; in
    proportion where BATCHTENSOR_PROPERTY_EXAMPLES draws fewer)."""
    if CASES["count"] == 0:
        pytest.skip("run together with the property tests to count their cases")
    assert CASES["count"] >= 10_000 * MAX_EXAMPLES // 2600, CASES["count"]
