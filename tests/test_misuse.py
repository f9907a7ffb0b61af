"""The misuse corpus: bad calls people make, each with the exception type it must raise and a
pattern its message must contain, naming the argument (or the call) that was wrong.

Every case runs with ``fallback="error"``: many of these calls (conversions, disagreeing
control flow, writes of a batched value into a plain array) give the loop's result by default,
through the whole-function rerun (tests/test_rerun.py); with the rerun refused, each must still
raise its clear error.

Categories: wrong axes, size mismatches, escaped tensors, conversions, disagreeing control flow,
writes into unbatched arrays, non-array leaves, bad out_axes, bad vmap options, bt.random, the
manual API. A silent wrong result is the worst bug; an unclear error is the second worst.
"""

from __future__ import annotations

import collections
import pickle
import warnings

import sys

import numpy as np
import pytest

import batchtensor as bt
from batchtensor.levels import active_levels

X = np.arange(12.0).reshape(3, 4)  # 3 examples of shape (4,)
CAPTURED_RNG = np.random.default_rng(0)  # made outside the vmapped functions
Y = np.arange(10.0).reshape(5, 2)  # 5 examples
S = np.arange(3.0)  # 3 scalar examples
Pair = collections.namedtuple("Pair", "a b")
BTE, VE, TE = bt.BatchingError, ValueError, TypeError


def vm(f, *args, **kw):
    return lambda: bt.vmap(f, **kw)(*args)


def _not_intercepted(run):
    with bt.config(intercept_numpy=False):
        return run()


def _leaked():
    box = []
    bt.vmap(lambda x: box.append(x) or x)(X)
    return box[0]


def use_leak(op):
    return lambda: op(_leaked())


_PLAIN0 = np.zeros(())
_PLAIN4 = np.zeros(4)
_PLAIN3_INT = np.zeros(3, dtype=np.int64)


def plain_write(stmt):
    """A function writing into a plain array (a method's copy of a global: np.zeros(4) in the
    function would be a buffer, batched at the write); then ``stmt(out, x)``."""
    def f(x):
        out = _PLAIN4.copy()
        stmt(out, x)
        return out
    return f


def shared(stmt):
    """``stmt(a, v)`` inside an inner vmap where ``a`` is batched only at the outer level."""
    def inner(a, v):
        stmt(a, v)
        return v

    def outer(a, v):
        return bt.vmap(inner, in_axes=(None, 0))(a, v)

    return lambda: bt.vmap(outer, in_axes=(0, None))(X.copy(), Y[:, :1].repeat(4, 1)[:4])


def with_level(body):
    def run():
        with bt.vmap_level() as level:
            return body(level)
    return run


def rng_call(call, randomness="error", xs=S):
    return lambda: bt.vmap(lambda x: call(bt.random.default_rng(0), x),
                           randomness=randomness)(xs)


def setitem(a, k, v):
    a[k] = v


CASES = [
    # ---- wrong in_axes -------------------------------------------------------------------------
    ("in_axes_out_of_range", vm(np.sin, X, in_axes=2), VE, r"args\[0\] \(argument 'x'\).*axis 2"),
    ("in_axes_negative_out_of_range", vm(np.sin, X, in_axes=-3), VE, r"argument 'x'.*axis -3"),
    ("in_axes_on_0d", vm(np.sin, np.float64(1.0).reshape(()), in_axes=0), VE,
     r"argument 'x'.*0-d array cannot be mapped"),
    ("in_axes_second_arg", vm(np.add, X, X, in_axes=(0, 5)), VE, r"args\[1\] \(argument 'x2'\)"),
    ("in_axes_bool", vm(np.sin, X, in_axes=True), VE, r"in_axes must be an int, None or a tuple"),
    ("in_axes_top_dict", vm(np.sin, X, in_axes={"x": 0}), VE, r"in_axes at the top level.*dict"),
    ("in_axes_too_long", vm(np.sin, X, in_axes=(0, 0)), VE, r"in_axes is a tuple of length 2"),
    ("in_axes_too_short", vm(np.add, X, X, in_axes=(0,)), VE, r"in_axes is a tuple of length 1"),
    ("in_axes_list_len", vm(lambda t: t[0], [X, X], in_axes=([0, 0, 0],)), VE,
     r"in_axes\[0\] is a list of length 3"),
    ("in_axes_dict_keys", vm(lambda d: d["a"], {"a": X}, in_axes=({"b": 0},)), VE,
     r"in_axes\[0\] has keys \['b'\]"),
    ("in_axes_str_leaf", vm(np.sin, X, in_axes=("0",)), VE, r"in_axes\[0\] must be an int"),
    ("in_axes_float_leaf", vm(np.sin, X, in_axes=(0.0,)), VE, r"in_axes\[0\] must be an int"),
    ("in_axes_node_vs_leaf", vm(np.sin, X, in_axes=((0, 0),)), VE,
     r"in_axes\[0\] is a tuple but args\[0\] is a leaf"),
    ("in_axes_nested_out_of_range", vm(lambda t: t[1], (X, X), in_axes=((0, 3),)), VE,
     r"args\[0\]\[1\].*axis 3"),
    ("in_axes_dict_leaf_range", vm(lambda d: d["w"], {"w": X}, in_axes=({"w": -5},)), VE,
     r"args\[0\]\['w'\].*axis -5"),
    ("in_axes_namedtuple", vm(lambda p: p.a, Pair(X, X), in_axes=(Pair(0, 9),)), VE,
     r"args\[0\]\['b'\]"),
    ("in_axes_dict_vs_list", vm(lambda t: t, [X], in_axes=({"a": 0},)), VE,
     r"in_axes\[0\] has keys \['a'\] but args\[0\] has type list"),
    # ---- size mismatches -----------------------------------------------------------------------
    ("sizes_two_args", vm(np.add, X, Y), VE, r"argument 'x1'.*size 3[\s\S]*argument 'x2'.*size 5"),
    ("sizes_axis_size", vm(np.sin, X, axis_size=4), VE, r"size 3[\s\S]*axis_size=4"),
    ("sizes_nested_tree", vm(lambda d: d["a"] + d["b"], {"a": X, "b": Y}), VE,
     r"args\[0\]\['a'\][\s\S]*args\[0\]\['b'\]"),
    ("sizes_other_axis", vm(np.add, X, X, in_axes=(0, 1)), VE,
     r"axis 0 of shape \(3, 4\) has size 3[\s\S]*axis 1 of shape \(3, 4\) has size 4"),
    ("sizes_varargs", vm(lambda *a: a[0] + a[1], X, Y), VE, r"argument '\*a'"),
    ("no_mapped_argument", vm(np.sin, X, in_axes=None), VE, r"no argument is mapped.*axis_size"),
    ("no_arguments", vm(lambda: 1.0), VE, r"axis_size"),
    ("manual_size_mismatch", with_level(lambda lv: (bt.BatchedTensor(X, 0),
                                                    bt.BatchedTensor(Y, 0))), VE,
     r"shape \(5, 2\).*batch size 5 but vmap level \d+ has batch size 3"),
    ("manual_fixed_size", lambda: _manual_fixed(), VE, r"batch size 3 but vmap level \d+ has "
                                                       r"batch size 4"),
    ("broadcast_mismatch_per_example", vm(lambda x, y: x + y, X, Y[:3]), VE,
     r"operands could not be broadcast"),
    # ---- escaped tensors -----------------------------------------------------------------------
    ("escaped_ufunc", use_leak(np.sin), bt.EscapedBatchedTensorError, r"escaped its vmap level"),
    ("escaped_operator", use_leak(lambda t: t + 1), bt.EscapedBatchedTensorError, r"escaped"),
    ("escaped_method", use_leak(lambda t: t.sum()), bt.EscapedBatchedTensorError, r"escaped"),
    ("escaped_getitem", use_leak(lambda t: t[0]), bt.EscapedBatchedTensorError, r"escaped"),
    ("escaped_bool", use_leak(bool), bt.EscapedBatchedTensorError, r"escaped"),
    ("escaped_function", use_leak(lambda t: np.concatenate([t, t])),
     bt.EscapedBatchedTensorError, r"escaped"),
    ("escaped_matmul", use_leak(lambda t: t @ t), bt.EscapedBatchedTensorError, r"escaped"),
    ("escaped_as_input", use_leak(lambda t: bt.vmap(np.sin)(t)), bt.EscapedBatchedTensorError,
     r"escaped"),
    ("escaped_in_new_vmap", use_leak(lambda t: bt.vmap(lambda x: x + t)(X)),
     bt.EscapedBatchedTensorError, r"escaped"),
    ("escaped_like", use_leak(lambda t: np.zeros(2, like=t)), bt.EscapedBatchedTensorError,
     r"escaped"),
    ("escaped_setitem", use_leak(lambda t: setitem(t, 0, 1.0)), bt.EscapedBatchedTensorError,
     r"escaped"),
    ("escaped_inplace", use_leak(lambda t: t.__iadd__(1.0)), bt.EscapedBatchedTensorError,
     r"escaped"),
    # ---- conversions ---------------------------------------------------------------------------
    ("convert_asarray", vm(np.asarray, X), TE, r"__array__.*np\.array/np\.asarray"),
    ("convert_array", lambda: _not_intercepted(vm(lambda x: np.array(x), X)), TE, r"__array__"),
    ("convert_float", vm(lambda x: round(float(x[0]), 6) * 2, X), TE,
     r"float\(\) on a BatchedTensor"),
    ("convert_int", vm(lambda x: int(x[0]) // 2, X), TE, r"int\(\) on a BatchedTensor"),
    ("convert_complex", vm(lambda x: complex(x[0]) * 2, X), TE,
     r"complex\(\) on a BatchedTensor"),
    ("convert_item", vm(lambda x: x[0].item() * 2, X), TE, r"\.item\(\) on a BatchedTensor"),
    ("convert_tolist", vm(lambda x: x.tolist(), X), TE, r"\.tolist\(\) on a BatchedTensor"),
    ("convert_index_list", vm(lambda x: [1, 2, 3][x[0].astype(int)], X), TE,
     r"as an index or size \(__index__\)"),
    ("convert_range", vm(lambda x: range(x[0].astype(int)), X), TE, r"__index__"),
    ("convert_plain_getitem", vm(lambda x: _PLAIN[x[0].astype(int)], X), TE,
     r"np\.take_along_axis"),
    ("convert_plain_take", vm(lambda x: _ELSEWHERE["take"](np.arange(5.0), x.astype(int)), X),
     TE, r"inside numpy\.take"),
    ("convert_full", vm(lambda x: _ELSEWHERE["full"](3, x[0]), X), TE,
     r"inside numpy\.full.*np\.full_like\(value, value, shape=shape\)"),
    ("convert_list_of_batched", vm(lambda x: np.sum([x[0], x[1]]), X), TE,
     r"inside numpy\.sum.*given a list or tuple of batched values.*np\.stack\(values\)"),
    # (without otypes each example's first element decides its output type: the per-op loop)
    ("vectorize_without_otypes", vm(lambda x: np.vectorize(lambda a: a * 2)(x), X), BTE,
     r"numpy\.vectorize\.__call__ has no batch rule.*bt\.config\.fallback is 'error'"),
    ("convert_vectorize", lambda: _not_intercepted(vm(lambda x: np.vectorize(lambda a: a)(x),
                                                     X)), TE,
     r"inside numpy\.vectorize\.__call__.*np\.frompyfunc\(func, nin, nout\)"),
    ("convert_numpy_random", vm(lambda x: CAPTURED_RNG.normal(x), X), TE,
     r"captured from outside.*pass it to the function as an argument"),
    ("convert_pickle", vm(lambda x: pickle.dumps(x), X), TE, r"cannot be pickled"),
    ("convert_len_0d", vm(lambda x: len(x[0]), X), TE, r"len\(\) of unsized object"),
    ("convert_iter_0d", vm(lambda x: list(x[0]), X), TE, r"iteration over a 0-d array"),
    ("convert_format", vm(lambda x: f"{x[0]:.2f}", X), TE, r"float\(\)|__format__|format"),
    # ---- disagreeing control flow --------------------------------------------------------------
    ("control_if", vm(lambda x: x if x.sum() > 20 else -x, X), bt.BatchingError,
     r"bool\(\) of a batched value.*np\.where\(cond, a, b\)"),
    ("control_while", vm(lambda x: _while(x), X), bt.BatchingError, r"bool\(\).*np\.where"),
    ("control_and", vm(lambda x: (x[0] > 1) and x, X), bt.BatchingError, r"bool\(\)"),
    ("control_not", vm(lambda x: not (x[0] > 1), X), bt.BatchingError, r"bool\(\)"),
    ("control_assert", vm(lambda x: _assert(x[0] > 1), X), bt.BatchingError, r"bool\(\)"),
    ("control_any", vm(lambda x: 1 if np.any(x > 8) else 0, X), bt.BatchingError,
     r"unless fallback='error', bt\.vmap reruns the function once per example"),
    ("control_nested_inner", vm(bt.vmap(lambda s: s if s > 5 else -s), X), bt.BatchingError,
     r"bool\(\)"),
    ("control_size_zero", vm(lambda x: x if x.sum() > 0 else -x, X[:0]), bt.BatchingError,
     r"bool\(\) of a batched value with batch size 0"),
    ("control_array_bool", vm(lambda x: bool(x), X), VE,
     r"truth value of an array with more than one element"),
    ("control_empty_bool", vm(lambda x: bool(x[:0]), X), VE, r"truth value of an empty array"),
    ("control_rerun_zero", vm(lambda x: x if x.sum() > 0 else -x, X[:0], fallback="warn"),
     bt.BatchingError, r"batch size 0"),
    # ---- writes into unbatched arrays ----------------------------------------------------------
    ("write_plain_scalar_slot", vm(plain_write(lambda o, x: setitem(o, 0, x[0])), X), TE,
     r"into 'a' \(a plain numpy\.ndarray of shape \(4,\), float64\) at `a\[k\] = v`.*"
     r"np\.zeros_like"),
    ("write_plain_slice", vm(plain_write(lambda o, x: setitem(o, slice(None), x)), X), TE,
     r"cannot write a batched value or index into 'a'"),
    ("write_plain_int_dtype", vm(lambda x: _int_out(x), X), TE, r"into 'out'"),
    ("write_plain_iadd", vm(plain_write(lambda o, x: o.__iadd__(x)), X), BTE,
     r"numpy\.add: cannot write a batched result into out="),
    ("write_plain_ufunc_out", vm(plain_write(lambda o, x: np.multiply(x, 2, out=o)), X), BTE,
     r"numpy\.multiply: cannot write a batched result into out="),
    ("write_plain_reduce_out", vm(lambda x: np.sum(x, axis=0, out=_PLAIN0.copy()), X), BTE,
     r"numpy\.sum: cannot write a batched result into out="),
    ("write_plain_copyto", vm(plain_write(lambda o, x: np.copyto(o, x)), X), BTE,
     r"numpy\.copyto: cannot write into `dst`.*while `src` differs"),
    ("write_plain_put_along", vm(plain_write(lambda o, x: np.put_along_axis(
        o, np.array([1]), x[0], axis=0)), X), BTE, r"put_along_axis: cannot write into `arr`"),
    ("write_plain_putmask", vm(plain_write(lambda o, x: np.putmask(o, x > 3, 1.0)), X), BTE,
     r"putmask: cannot write into `a`.*while `mask` differs"),
    ("write_plain_ufunc_at", vm(plain_write(lambda o, x: np.add.at(o, [0], x[0])), X), BTE,
     r"numpy\.add\.at: cannot write a batched result into `a` \(the array numpy\.add\.at writes"),
    ("write_plain_fill", vm(plain_write(lambda o, x: o.fill(x[0])), X), TE,
     r"float\(\) on a BatchedTensor"),
    ("write_plain_matmul_out", vm(lambda x: np.matmul(x, np.ones(4), out=_PLAIN0.copy()), X), BTE,
     r"cannot write a batched result into out="),
    ("write_plain_index_batched_key", vm(plain_write(lambda o, x: setitem(
        o, x[1].astype(int) % 3, 1.0)), X), TE, r"batched value or index into 'a'"),
    ("write_plain_loop_take_out", vm(lambda x: np.take(x, [0, 1], out=_PLAIN4[:2].copy()), X), BTE,
     r"numpy\.take: cannot write a batched result into out="),
    ("write_plain_loop_dot_out", vm(lambda x: np.dot(x, np.ones(4), out=_PLAIN0.copy()), X), BTE,
     r"cannot write a batched result into out="),
    ("write_plain_loop_concat_out", vm(lambda x: np.concatenate(
        [x[None], x[None]], out=np.zeros((2, 4), like=x)), X), BTE,
     r"numpy\.concatenate: cannot write a batched result into out="),
    ("write_shared_setitem", shared(lambda a, v: setitem(a, 0, v[0])), BTE,
     r"x\[key\] = v: cannot write into x, which is not batched"),
    ("write_shared_iadd", shared(lambda a, v: a.__iadd__(v)), BTE, r"into out="),
    ("write_shared_copyto", shared(lambda a, v: np.copyto(a, v)), BTE, r"into `dst`"),
    ("write_shared_fill", shared(lambda a, v: a.fill(v[0])), BTE,
     r"ndarray\.fill: cannot fill x, which is not batched"),
    ("write_shared_put_along", shared(lambda a, v: np.put_along_axis(
        a, np.zeros(1, int), v[:1], 0)), BTE, r"put_along_axis: cannot write into `arr`.*`values`"),
    ("write_shared_putmask", shared(lambda a, v: np.putmask(a, v > 0, 0.0)), BTE,
     r"putmask: cannot write into `a`.*`mask`"),
    ("write_shared_fill_diagonal", lambda: bt.vmap(lambda a: bt.vmap(
        lambda v: np.fill_diagonal(a, v), in_axes=0)(np.arange(2.0)))(np.zeros((2, 2, 2))), BTE,
     r"fill_diagonal: cannot write into `a`"),
    ("write_shared_put", shared(lambda a, v: np.put(a, [0], v[:1])), BTE,
     r"numpy\.put: cannot write into `a`.*`v`"),
    ("write_shared_place", shared(lambda a, v: np.place(a, v > 0, [1.0])), BTE,
     r"numpy\.place: cannot write into `arr`.*`mask`"),
    ("write_shared_ufunc_at", shared(lambda a, v: np.add.at(a, [0], v[0])), BTE,
     r"into `a` \(the array numpy\.add\.at writes in place\)"),
    ("write_read_only_view", vm(lambda x: setitem(np.broadcast_to(x, (2, 4)), 0, 1.0), X), VE,
     r"read-only"),
    # ---- non-array leaves ----------------------------------------------------------------------
    ("leaf_float", vm(lambda a: a, 1.5), VE, r"args\[0\] \(argument 'a'\).*float, not an array"),
    ("leaf_int", vm(lambda a, b: a, X, 3), VE, r"args\[1\] \(argument 'b'\).*int, not an array"),
    ("leaf_str", vm(lambda a: a, "abc"), VE, r"argument 'a'.*str, not an array"),
    ("leaf_list_of_floats", vm(lambda a: a, [1.0, 2.0]), VE, r"args\[0\]\[0\].*float"),
    ("leaf_in_dict", vm(lambda d: d["x"], {"x": X, "n": 3}), VE, r"args\[0\]\['n'\].*int"),
    ("leaf_object", vm(lambda a: a, object()), VE, r"object, not an array"),
    ("leaf_none_in_axes_ok_but_str_mapped", vm(lambda a, s: a, X, "s", in_axes=(0, 0)), VE,
     r"args\[1\] \(argument 's'\).*str"),
    ("leaf_namedtuple_field", vm(lambda p: p.a, Pair(X, "b")), VE, r"args\[0\]\['b'\].*str"),
    ("leaf_return_str", vm(lambda x: "label", X), VE,
     r"returned a str where out_axes=0 expects an array"),
    ("leaf_return_object_in_tuple", vm(lambda x: (x, object()), X), VE,
     r"out_axes\[1\]=0 expects an array"),
    # ---- bad out_axes --------------------------------------------------------------------------
    ("out_axes_range", vm(np.sin, X, out_axes=2), VE,
     r"out_axes=2 is out of range for an output with 1 dims"),
    ("out_axes_negative_range", vm(np.sin, X, out_axes=-3), VE, r"out_axes=-3 is out of range"),
    ("out_axes_none_batched", vm(np.sin, X, out_axes=None), VE,
     r"out_axes is None but this output is batched"),
    ("out_axes_tuple_none", vm(lambda x: (x, x), X, out_axes=(0, None)), VE,
     r"out_axes\[1\] is None but this output is batched"),
    ("out_axes_tuple_len", vm(lambda x: (x, x), X, out_axes=(0, 0, 0)), VE,
     r"out_axes is a tuple of length 3"),
    ("out_axes_dict_keys", vm(lambda x: {"a": x}, X, out_axes={"b": 0}), VE,
     r"out_axes has keys \['b'\]"),
    ("out_axes_bool", vm(np.sin, X, out_axes=False), VE, r"out_axes must be an int"),
    ("out_axes_str", vm(np.sin, X, out_axes="0"), VE, r"out_axes must be an int"),
    ("out_axes_nested_range", vm(lambda x: (x, {"w": x}), X, out_axes=(0, {"w": 5})), VE,
     r"out_axes\[1\]\['w'\]=5 is out of range"),
    ("out_axes_unbatched_range", vm(lambda x: np.ones(2), X, out_axes=3), VE,
     r"out_axes=3 is out of range"),
    ("out_axes_leaf_vs_tuple", vm(np.sin, X, out_axes=((0, 0),)), VE, r"out_axes"),
    # ---- bad vmap options ----------------------------------------------------------------------
    ("chunk_zero", vm(np.sin, X, chunk_size=0), VE, r"chunk_size must be None, 'auto' or a positive int"),
    ("chunk_negative", vm(np.sin, X, chunk_size=-2), VE, r"chunk_size"),
    ("chunk_float", vm(np.sin, X, chunk_size=1.5), VE, r"chunk_size"),
    ("chunk_bool", vm(np.sin, X, chunk_size=True), VE, r"chunk_size"),
    ("axis_size_negative", vm(np.sin, X, in_axes=None, axis_size=-1), VE, r"axis_size must be"),
    ("axis_size_float", vm(np.sin, X, in_axes=None, axis_size=2.0), VE, r"axis_size must be"),
    ("randomness_bad", vm(np.sin, X, randomness="diff"), VE,
     r"randomness must be 'error', 'different' or 'same', got 'diff'"),
    ("fallback_bad", vm(np.sin, X, fallback="python"), VE,
     r"fallback must be None or one of \('warn', 'silent', 'error'\), got 'python'"),
    ("func_not_callable", lambda: bt.vmap(3), TE, r"vmap: expected a function, got int"),
    ("fallback_mode_bad", lambda: setattr(bt.config, "fallback", "loud"), VE,
     r"bt\.config\.fallback must be one of"),
    ("vmap_level_negative", lambda: bt.vmap_level(-1).__enter__(), VE,
     r"vmap_level: size must be >= 0"),
    ("vmap_level_randomness", lambda: bt.vmap_level(randomness="x").__enter__(), VE,
     r"randomness must be one of"),
    # ---- bt.random -----------------------------------------------------------------------------
    ("random_error_mode", rng_call(lambda g, x: g.normal()), BTE,
     r"Generator\.normal\(\) was called inside vmap with randomness='error'"),
    ("random_error_integers", rng_call(lambda g, x: g.integers(3)), BTE, r"Generator\.integers"),
    ("random_error_choice", rng_call(lambda g, x: g.choice(3)), BTE, r"Generator\.choice"),
    ("random_error_permutation", rng_call(lambda g, x: g.permutation(3)), BTE,
     r"Generator\.permutation"),
    ("random_error_shuffle", rng_call(lambda g, x: g.shuffle(np.arange(3))), BTE,
     r"Generator\.shuffle"),
    ("random_error_binomial", rng_call(lambda g, x: g.binomial(3, 0.5)), BTE,
     r"Generator\.binomial"),
    ("random_error_nested", lambda: bt.vmap(bt.vmap(
        lambda x: bt.random.default_rng(0).random(), randomness="different"))(X), BTE,
     r"Generator\.random\(\).*randomness='error'"),
    ("random_scale_negative", rng_call(lambda g, x: g.normal(0.0, x - 1), "different"), VE,
     r"scale < 0"),
    ("random_low_high", rng_call(lambda g, x: g.integers(3, 3), "different"), VE,
     r"low >= high"),
    ("random_high_bounds", rng_call(lambda g, x: g.integers(0, 300, dtype=np.uint8),
                                    "different"), VE, r"high is out of bounds for uint8"),
    ("random_integers_float_bounds", rng_call(lambda g, x: g.integers(x, 5), "different"), TE,
     r"low must be integers"),
    ("random_p_sum", rng_call(lambda g, x: g.choice(2, p=[0.3, 0.3]), "different"), VE,
     r"probabilities do not sum to 1"),
    ("random_p_negative", rng_call(lambda g, x: g.choice(2, p=[1.5, -0.5]), "different"), VE,
     r"probabilities are not non-negative"),
    ("random_p_shape", rng_call(lambda g, x: g.choice(3, p=[0.5, 0.5]), "different"), VE,
     r"p must be 1-dimensional and the same size as a"),
    ("random_no_replace_too_many", rng_call(lambda g, x: g.choice(2, 3, replace=False),
                                            "different"), VE,
     r"larger sample than population"),
    ("random_binomial_p", rng_call(lambda g, x: g.binomial(2, x), "different"), VE,
     r"p < 0, p > 1 or p is NaN"),
    ("random_size_mismatch", rng_call(lambda g, x: g.normal(np.zeros(3), size=2), "different"),
     VE, r"size=\(2,\) is not compatible with the parameters' shape \(3,\)"),
    ("random_shuffle_shared", rng_call(lambda g, x: g.shuffle(np.arange(4)), "different"), BTE,
     r"shuffle: x \(shape \(4,\)\) is not batched at vmap level"),
    ("random_bytes_per_example", rng_call(lambda g, x: g.bytes(2), "different"), BTE,
     r"Generator\.bytes returns a Python bytes object, which cannot hold a different value "
     r"per example"),
    ("random_out", rng_call(lambda g, x: g.random(3, out=np.zeros(3)), "different"), TE,
     r"Generator\.random: out= is not supported inside vmap"),
    ("random_dtype", rng_call(lambda g, x: g.standard_normal(dtype=np.int64), "different"), TE,
     r"Generator\.standard_normal: unsupported dtype int64"),
    # ---- the manual API ------------------------------------------------------------------------
    ("bt_bdim_range", with_level(lambda lv: bt.BatchedTensor(X, bdim=2)), VE,
     r"bdim=2 is out of range for a value of shape \(3, 4\)"),
    ("bt_bdim_type", with_level(lambda lv: bt.BatchedTensor(X, bdim="0")), TE,
     r"bdim must be an int, got '0'"),
    ("bt_value_type", with_level(lambda lv: bt.BatchedTensor([1, 2], bdim=0)), TE,
     r"got list"),
    ("bt_no_level", lambda: bt.BatchedTensor(X, bdim=0), BTE, r"vmap_level|level"),
    ("unwrap_inner_open", with_level(lambda lv: _unwrap_inner(lv)), BTE,
     r"cannot unwrap an output batched at the inner level"),
    ("unwrap_out_axes_none", with_level(lambda lv: lv.unwrap(bt.BatchedTensor(X, 0), None)), VE,
     r"out_axes is None but this output is batched"),
    # ---- data-dependent shapes -----------------------------------------------------------------
    ("mask_counts_differ", vm(lambda x: x[x > 5], X), BTE,
     r"batched boolean mask selects between 0 and 4 elements"),
    ("unique_sizes_differ", vm(lambda x: np.unique(np.minimum(x, 5)), X), BTE,
     r"numpy\.unique: the output size depends on the data and differs between examples"),
    # (repeats of their own per example over the rows of 2-d examples: the per-op loop)
    ("loop_shapes_differ", vm(lambda x: np.repeat(x[:, None], (x > 5).astype(int), axis=0), X,
                              fallback="silent"),
     BTE, r"numpy\.repeat: the per-example results have different shapes"),
    ("loop_fallback_error_mode", lambda: _strict(vm(
        lambda x: np.repeat(x[:, None], (x > 5).astype(int), axis=0), X)), BTE,
     r"numpy\.repeat has no batch rule.*bt\.config\.fallback is 'error'"),
]


def _while(x):
    while x.sum() > 10:
        x = x / 2
    return x


# NumPy's own functions, as another module bound them before the vmap: beyond
# batchtensor.undispatched's reach and the function module's buffer makers
_PLAIN = np.arange(5.0)  # made outside the function: a plain array
_ELSEWHERE = {"take": np.take, "full": np.full}


def _not_intercepted(call):
    with bt.config(intercept_numpy=False):
        return call()


def _assert(c):
    assert c
    return c


def _int_out(x):
    out = _PLAIN3_INT.copy()
    out[1] = x[0]
    return out


def _manual_fixed():
    with bt.vmap_level(4):
        bt.BatchedTensor(X, 0)


def _unwrap_inner(outer):
    a = bt.BatchedTensor(np.zeros((2, 3)), 0, level=outer)
    with bt.vmap_level():
        y = bt.BatchedTensor(a, 0)
        outer.unwrap(y)


def _strict(fn):
    with bt.config(fallback="error"):
        return fn()


def test_corpus_size():
    assert len(CASES) >= 100, len(CASES)
    assert len({c[0] for c in CASES}) == len(CASES), "duplicate case names"


@pytest.mark.parametrize("name, call, exc, pattern", CASES, ids=[c[0] for c in CASES])
def test_misuse(name, call, exc, pattern):
    with warnings.catch_warnings(), bt.config(fallback="error"):
        warnings.simplefilter("ignore")
        with pytest.raises(exc) as info:
            call()
    assert type(info.value) is not AssertionError
    assert info.match(pattern), f"{name}: {info.value}"
    assert active_levels() == (), f"{name} left a vmap level open"
