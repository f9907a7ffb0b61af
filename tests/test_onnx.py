"""bt.onnx.export: workloads exported with symbolic batch axes and validated in onnxruntime at
batch sizes 1, 3 and 7 (inside export) and at another size against the per-example loop
(here); NumPy semantics that ONNX spells differently; leaks, refusals and error messages."""

from __future__ import annotations

import operator
import subprocess
import sys
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX tests need the onnx extra: "
                                          "pip install 'batchtensor[onnx]'")
ort = pytest.importorskip("onnxruntime", reason="the ONNX tests need onnxruntime (the onnx "
                                                "extra): pip install 'batchtensor[onnx]'")

import batchtensor as bt  # noqa: E402
from batchtensor.onnx import (BatchSizeLeakError, ExportError, ExportValidationError,  # noqa: E402
                              UnsupportedOpError, export, validate)
from batchtensor.onnx.exporter import find_leaks  # noqa: E402

FLOATS = [np.float32, np.float64]
OPSETS = [18, 21]


def _rng(seed=0):
    return np.random.default_rng(seed)


def _dims(vi) -> list:
    return [d.dim_param or d.dim_value for d in vi.type.tensor_type.shape.dim]


def _run(model, feeds: dict) -> list:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _loop(f, args, in_axes):
    """The ground truth: f per example, stacked (one vmap level, axis 0)."""
    n = next(a.shape[0] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [f(*[a[i] if ax is not None else a for a, ax in zip(args, in_axes)])
            for i in range(n)]
    return np.stack(outs)


def _close(got, want, dtype):
    if np.dtype(dtype) == np.float32:
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


# ---- the workloads of the issue ------------------------------------------------------------------
def mlp_case(dt, rng):
    W1, b1 = rng.normal(size=(16, 4)).astype(dt), rng.normal(size=16).astype(dt)
    W2, b2 = rng.normal(size=(3, 16)).astype(dt), rng.normal(size=3).astype(dt)

    def mlp(x):
        h = np.maximum(W1 @ x + b1, 0)
        return np.tanh(W2 @ h + b2)

    return mlp, (rng.normal(size=(5, 4)).astype(dt),), (0,)


def ensemble_case(dt, rng):
    def member(W, b, x):  # one model of the ensemble on a shared input
        return np.tanh(W @ x + b)

    W, b = rng.normal(size=(5, 3, 4)).astype(dt), rng.normal(size=(5, 3)).astype(dt)
    x = rng.normal(size=4).astype(dt)
    return member, (W, b, x), (0, 0, None)


def xent_case(dt, rng):
    def xent(logits, label):
        m = np.max(logits)
        lse = m + np.log(np.sum(np.exp(logits - m)))
        return lse - np.take_along_axis(logits, label[None], axis=0)[0]

    return xent, (rng.normal(size=(6, 10)).astype(dt), rng.integers(0, 10, size=6)), (0, 0)


def layernorm_case(dt, rng):
    gamma, beta = rng.normal(size=8).astype(dt), rng.normal(size=8).astype(dt)

    def layernorm(x):
        mu = np.mean(x, axis=-1, keepdims=True)
        var = np.var(x, axis=-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * gamma + beta

    return layernorm, (rng.normal(size=(5, 3, 8)).astype(dt),), (0,)


def attention_case(dt, rng):
    def attention(q, k, v):
        s = q @ k.T / np.sqrt(q.shape[-1])
        p = np.exp(s - np.max(s, axis=-1, keepdims=True))
        return (p / np.sum(p, axis=-1, keepdims=True)) @ v

    q, k, v = (rng.normal(size=(5, 4, 8)).astype(dt) for _ in range(3))
    return attention, (q, k, v), (0, 0, 0)


def lorenz_case(dt, rng):
    sigma, rho, beta, h = 10.0, 28.0, 8 / 3, 0.01

    def f(s):
        x, y, z = s[0], s[1], s[2]
        return np.stack([sigma * (y - x), x * (rho - z) - y, x * y - beta * z])

    def rk4(s):
        k1 = f(s)
        k2 = f(s + h / 2 * k1)
        k3 = f(s + h / 2 * k2)
        k4 = f(s + h * k3)
        return s + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)

    return rk4, (rng.normal(size=(5, 3)).astype(dt) * 5,), (0,)


def reshape_concat_case(dt, rng):
    def f(x, y):
        z = np.concatenate([np.reshape(x, (-1,)), y])  # (6,) + (4,)
        return np.reshape(z, (5, 2)).T

    return f, (rng.normal(size=(5, 2, 3)).astype(dt), rng.normal(size=(5, 4)).astype(dt)), (0, 0)


WORKLOADS = {"mlp": mlp_case, "ensemble": ensemble_case, "softmax_xent": xent_case,
             "layernorm": layernorm_case, "attention": attention_case, "lorenz_rk4": lorenz_case,
             "reshape_concat": reshape_concat_case}


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("dt", FLOATS, ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(WORKLOADS))
def test_workload(name, dt, opset):
    rng = _rng(hash(name) % 1000)
    f, args, in_axes = WORKLOADS[name](dt, rng)
    model = export(f, *args, in_axes=in_axes, opset=opset)  # validates at B = 1, 3, 7
    assert model.ir_version == onnx.helper.find_min_ir_version_for(
        [onnx.helper.make_opsetid("", opset)])
    assert [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [opset]
    inputs = {i.name: _dims(i) for i in model.graph.input}
    mapped = [a for a, ax in zip(args, in_axes) if ax is not None]
    assert len(inputs) == len(mapped)  # in_axes=None arguments are initializers
    for dims in inputs.values():
        assert dims[0] == "B"
    (out,) = model.graph.output
    assert _dims(out)[0] == "B"
    # Another batch size, against the per-example loop (not against vmap).
    big = [np.concatenate([a, a[::-1]]) if ax is not None else a
           for a, ax in zip(args, in_axes)]
    feeds = dict(zip(inputs, [a for a, ax in zip(big, in_axes) if ax is not None]))
    (got,) = _run(model, feeds)
    want = _loop(f, big, in_axes)
    assert got.dtype == want.dtype
    _close(got, want, dt)


@pytest.mark.parametrize("dt", FLOATS, ids=["f32", "f64"])
def test_pairwise_distances_two_symbolic_axes(dt):
    rng = _rng(1)
    xs, ys = rng.normal(size=(4, 3)).astype(dt), rng.normal(size=(6, 3)).astype(dt)

    def dist(x, y):
        return np.sqrt(np.sum((x - y) ** 2))

    model = export(bt.vmap(dist, in_axes=(None, 0)), xs, ys, in_axes=(0, None))
    assert [_dims(i) for i in model.graph.input] == [["B0", 3], ["B1", 3]]
    assert _dims(model.graph.output[0]) == ["B0", "B1"]
    a, b = rng.normal(size=(2, 3)).astype(dt), rng.normal(size=(5, 3)).astype(dt)
    (got,) = _run(model, {"x": a, "y": b})
    want = np.array([[dist(x, y) for y in b] for x in a])
    _close(got, want, dt)


def test_inner_vmap_with_auto_chunks_records_one_graph_for_every_batch_size():
    # chunk_size="auto" weighs an inner example by the outer examples it carries; while
    # recording, the outer batch size is symbolic and the graph must serve every batch size.
    rng = _rng(7)
    a, b = rng.normal(size=(7, 4096)), rng.normal(size=(40, 4096))

    def dist(x, y):
        return np.sqrt(np.sum((x - y) ** 2))

    def f(x):
        return bt.vmap(dist, in_axes=(None, 0), chunk_size="auto")(x, b)

    model = export(f, a)
    a2 = rng.normal(size=(3, 4096))
    (got,) = _run(model, {"x": a2})
    _close(got, np.array([[dist(x, y) for y in b] for x in a2]), np.float64)


def test_out_axes_and_pytree_outputs():
    rng = _rng(2)

    def f(x):
        return {"s": np.sum(x, axis=0), "t": x.T}

    xs = rng.normal(size=(5, 3, 2))
    model = export(f, xs, out_axes={"s": 0, "t": 1})
    dims = {o.name: _dims(o) for o in model.graph.output}
    assert dims == {"output_s": ["B", 2], "output_t": [2, "B", 3]}


# ---- NumPy semantics that ONNX spells differently --------------------------------------------
def test_integer_floor_division_and_modulo():
    a = np.array([[-7, 7, -7, 7, 0, 5, -9, 3]] * 5, dtype=np.int64) + np.arange(5)[:, None]
    b = np.array([[2, -2, -2, 2, 3, 0, 4, -1]] * 5, dtype=np.int64)

    def f(a, b):
        return np.stack([a // b, a % b, np.fmod(a, b), *np.divmod(a, b)])

    with np.errstate(divide="ignore"):
        model = export(f, a, b)
        (got,) = _run(model, {"a": a, "b": b})
        want = _loop(f, (a, b), (0, 0))
    np.testing.assert_array_equal(got, want)
    assert (want[0][:, 0] == -4 + 0).any()  # NumPy floors; ONNX Div would truncate to -3


def test_float_floor_division_and_remainder():
    a = np.array([[1.0, -7.5, 7.5, 0.0, -0.0, np.inf, 3.0, np.nan]] * 4)
    b = np.array([[0.1, 2.0, -2.0, -3.0, 3.0, 2.0, 0.0, 1.0]] * 4)
    f = lambda a, b: np.stack([a // b, a % b, np.fmod(a, b)])  # noqa: E731
    with np.errstate(all="ignore"):
        model = export(f, a, b)
        (got,) = _run(model, {"a": a, "b": b})
        want = _loop(f, (a, b), (0, 0))
    # NaN positions included; zeros compare equal whatever their sign (onnxruntime's Where
    # returns +0.0 for a selected -0.0: see docs/onnx.md).
    np.testing.assert_array_equal(got, want)


def test_nan_in_max_argmax_sort():
    x = np.array([[1.0, np.nan, 3.0, -1.0], [2.0, 5.0, np.nan, np.nan], [0.5, 0.25, 1.0, 2.0],
                  [np.inf, np.nan, -np.inf, 0.0]])

    def f(x):
        return (np.max(x), np.min(x), np.argmax(x), np.argmin(x), np.sort(x),
                np.argsort(x, stable=True))

    model = export(f, x)
    got = _run(model, {"x": x})
    want = [_loop(lambda v, i=i: f(v)[i], (x,), (0,)) for i in range(6)]
    for g_, w in zip(got, want):
        np.testing.assert_array_equal(g_, w)


def test_argsort_needs_a_stable_sort():
    x = np.array([[3, 1, 3, 1, 2, 2]] * 4)  # ties: NumPy's default order is not defined
    with pytest.raises(UnsupportedOpError, match="stable=True"):
        export(np.argsort, x)
    model = export(lambda x: np.argsort(x, kind="stable"), x)
    (got,) = _run(model, {"x": x})
    np.testing.assert_array_equal(got, np.argsort(x, axis=-1, kind="stable"))


def test_reshape_with_size_zero_dims():
    x = np.zeros((4, 0, 3))
    model = export(lambda x: np.reshape(x, (3, 0, 5)), x)
    (got,) = _run(model, {"x": np.zeros((2, 0, 3))})
    assert got.shape == (2, 3, 0, 5)


def test_type_promotion_is_explicit_casts():
    rng = _rng(3)
    a = rng.integers(-5, 5, size=(5, 3)).astype(np.int32)
    b = rng.normal(size=(5, 3)).astype(np.float32)
    model = export(lambda a, b: a + b, a, b)  # NumPy: int32 + float32 -> float64
    casts = [n for n in model.graph.node if n.op_type == "Cast"]
    assert len(casts) == 2
    assert model.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.DOUBLE


@pytest.mark.parametrize("fn", [np.tan, np.sinh, np.cosh], ids=lambda f: f.__name__)
def test_float64_ops_onnxruntime_lacks_are_decomposed(fn):
    x = np.array([[1e-12, -3e-4, 0.5, -1.2], [2.0, -0.0, 1e-7, 0.9]] * 2)
    model = export(fn, x)
    assert fn.__name__.capitalize() not in {n.op_type for n in model.graph.node}
    (got,) = _run(model, {"x": x})
    np.testing.assert_allclose(got, fn(x), rtol=1e-12, atol=0)


def test_float64_op_without_exact_route_is_refused():
    x = np.linspace(-1, 1, 12).reshape(4, 3)
    with pytest.raises(UnsupportedOpError, match=r"float64.*Atan"):
        export(np.arctan, x)
    export(np.arctan, x.astype(np.float32))  # float32 has the kernel


# ---- constants, initializers, folding -------------------------------------------------------
def test_closure_arrays_and_unmapped_arguments_are_deduplicated_initializers():
    rng = _rng(4)
    c = rng.normal(size=3)

    def f(x, v):
        return np.tanh(x + c) * c + v

    v = rng.normal(size=3)
    model = export(f, rng.normal(size=(5, 3)), v, in_axes=(0, None))
    assert [i.name for i in model.graph.input] == ["x"]
    inits = [onnx.numpy_helper.to_array(t) for t in model.graph.initializer]
    assert sum(1 for t in inits if np.array_equal(t, c)) == 1
    assert sum(1 for t in inits if np.array_equal(t, v)) == 1


def test_values_that_depend_on_no_input_are_folded():
    def f(x):
        return x * (np.arange(4.0) ** 2 + np.cos(np.linspace(0, 1, 4)))

    model = export(f, np.ones((5, 4)))
    assert {n.op_type for n in model.graph.node} <= {"Mul", "Identity"}


def test_in_place_write_into_a_created_array():
    def f(x):
        y = x * 0.0  # a new batched array
        y[1:3] = x[:2] * 2
        y[0] = -1
        return y

    rng = _rng(5)
    x = rng.normal(size=(5, 4))
    model = export(f, x)
    (got,) = _run(model, {"x": x[:2]})
    np.testing.assert_array_equal(got, _loop(f, (x[:2],), (0,)))


def _loop_copy(f, args):
    """The per-example loop on copies (``f`` may write its arguments in place)."""
    return _loop(f, [np.copy(a) for a in args], (0,) * len(args))


def _check_at_two(f, args):
    """Export (validated inside), then run at batch size 2 against the loop."""
    model = export(f, *[np.copy(a) for a in args])
    names = [i.name for i in model.graph.input]
    small = [np.copy(a[:2]) for a in args]
    (got,) = _run(model, dict(zip(names, [np.copy(a) for a in small])))
    np.testing.assert_array_equal(got, _loop_copy(f, small))
    return model


def test_out_receives_broadcast_inputs_and_keeps_its_content_off_where():
    rng = _rng(11)
    x, o, m = rng.normal(size=(5, 4)), rng.normal(size=(5, 3, 4)), rng.random((5, 3, 4)) < 0.5
    x34 = rng.normal(size=(5, 3, 4))
    _check_at_two(lambda x, o: np.add(x, x, out=o), (x, o))  # (4,) into (3, 4)
    _check_at_two(lambda x, o: np.negative(x, out=o), (x, o))
    _check_at_two(lambda x, o, m: np.multiply(x, 2.0, out=o, where=m), (x34, o, m))
    _check_at_two(lambda x, o, m: np.add(x, 1.0, out=o, where=m), (x, o, m))
    # np.clip / np.round: the boxed rule passes out= positionally
    _check_at_two(lambda x, o: np.clip(x, -0.5, 0.5, out=o), (x, o))
    _check_at_two(lambda x, o, m: np.clip(x, -0.5, 0.5, out=o, where=m), (x34, o, m))
    _check_at_two(lambda x, o: np.round(x, 1, out=o), (x34, o.astype(np.float32)))
    with pytest.raises(UnsupportedOpError, match="out= must be one recorded array"):
        export(lambda x, o: np.divmod(x, 2.0, out=(o, None))[0], x34, o)


def test_in_place_operators_on_an_input():
    rng = _rng(12)
    a, b = rng.normal(size=(5, 3, 4)), rng.normal(size=(5, 4))
    ia, ib = rng.integers(-50, 50, size=(5, 3, 4)), rng.integers(0, 9, size=(5, 4))
    ops = [(operator.iadd, a, b), (operator.isub, a, b), (operator.imul, a, b),
           (operator.itruediv, a, b), (operator.ifloordiv, a, b), (operator.ipow, np.abs(a), b),
           (operator.ipow, ia, ib), (operator.ixor, ia, ib), (operator.imod, ia, ib + 1)]
    for op, x, y in ops:
        with np.errstate(all="ignore"):  # (validation feeds onnxruntime copies: eager writes a)
            _check_at_two(lambda a, b, op=op: op(a, b), (x, y))


def test_integer_power_is_exact_and_wraps():
    # onnxruntime's integer Pow goes through double: 12345**4 is off by one there
    a = np.array([[12345, 3, -7, 2, 0, -1, 5]] * 4, dtype=np.int64) + np.arange(4)[:, None]
    b = np.array([[4, 39, 30, 70, 0, 63, 2]] * 4, dtype=np.int64)
    model = _check_at_two(np.power, (a, b))
    assert "Loop" in {n.op_type for n in model.graph.node}
    _check_at_two(np.power, (a.astype(np.int8), b.astype(np.int8)))
    _check_at_two(lambda a: a ** 3, (a.astype(np.int32),))


def test_ufunc_dtype_selects_the_loop():
    # dtype=float32 makes NumPy divide in float32: x // 0 is inf, x % 0 nan (integers give 0)
    a = np.array([[-7, 7, 3, 0, 5]] * 4, dtype=np.int64) + np.arange(4)[:, None]
    b = np.array([[2, -2, 0, 0, 3]] * 4, dtype=np.int64)
    for uf in (np.floor_divide, np.remainder, np.fmod):
        with np.errstate(all="ignore"):
            _check_at_two(lambda a, b, uf=uf: uf(a, b, dtype=np.float32), (a, b))
    with np.errstate(all="ignore"):
        _check_at_two(lambda a, b: np.stack(np.divmod(a, b, dtype=np.float64)), (a, b))


def test_nan_reductions_of_0d_examples():
    x = np.array([1.5, np.nan, -2.0, np.nan, 0.25])
    for fn in (np.nanmean, np.nanmax, np.nanmin, np.nansum):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices
            _check_at_two(fn, (x,))


def test_gather_with_batched_indices():
    rng = _rng(6)
    x, idx = rng.normal(size=(5, 10, 3)), rng.integers(-10, 10, size=(5, 2))

    def f(x, i):
        return x[i] + np.take(x, i[::-1], axis=0) + x[[0, -1], ::-1] + x[:2, i[0] % 3, None]

    model = export(f, x, idx)
    (got,) = _run(model, {"x": x[:2], "i": idx[:2]})
    np.testing.assert_array_equal(got, _loop(f, (x[:2], idx[:2]), (0, 0)))


# ---- leaks ----------------------------------------------------------------------------------
def test_function_baking_the_batch_size_is_caught():
    x = np.ones((5, 3))
    with pytest.raises(ExportValidationError, match="differ"):
        export(lambda x: x * int(x.batch_size), x)
    export(lambda x: x * x.batch_size, x)  # kept symbolic: exports and validates


def test_batch_rule_leaking_a_literal_is_caught():
    from batchtensor.registry import REGISTRY
    from batchtensor.rules._helpers import move_bdim_to_front

    saved = REGISTRY[np.ravel]

    @bt.batch_rule(np.ravel, replace=True)
    def leaky_ravel(a, a_bdim, order="C"):
        x = move_bdim_to_front(a, a_bdim)
        return np.reshape(x, (int(x.shape[0]), -1)), 0

    try:
        with pytest.raises(BatchSizeLeakError, match="numpy.reshape"):
            export(np.ravel, np.ones((5, 2, 3)))
    finally:
        REGISTRY[np.ravel] = saved


def _baked_reshape_model():
    from onnx import TensorProto, helper, numpy_helper
    node = helper.make_node("Reshape", ["x", "shape"], ["output"])
    node.doc_string = "numpy.reshape at somewhere.py:1"
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, ["B", 2, 3])],
        [helper.make_tensor_value_info("output", TensorProto.DOUBLE, ["B", 6])],
        initializer=[numpy_helper.from_array(np.array([7, 6]), "shape")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def test_constant_scan_and_shape_inference_catch_a_baked_batch_size():
    model = _baked_reshape_model()
    (leak,) = find_leaks(model, [7])
    assert "Reshape" in leak and "somewhere.py:1" in leak
    assert find_leaks(model, [11]) == []
    with pytest.raises(BatchSizeLeakError, match="output 'output' axis 0"):
        validate(model, lambda x: np.reshape(x, (6,)), np.ones((7, 2, 3)))


# ---- refusals and errors --------------------------------------------------------------------
def test_op_without_lowering_is_named():
    with pytest.raises(UnsupportedOpError, match="numpy.arctan2 has no ONNX lowering"):
        export(np.arctan2, np.ones((4, 3)), np.ones((4, 3)))


def test_loop_fallback_is_refused():
    with pytest.raises(ExportError, match="loop fallback cannot be recorded"):
        # a batched `repeats` over the rows of 2-d examples: only the per-example loop
        export(lambda x: np.repeat(x, np.ones(3, int) + (x[:, 0] > 5), axis=0),
               np.ones((4, 3, 2)))


def test_data_dependent_shapes_and_control_flow_are_refused():
    with pytest.raises(ExportError):
        export(lambda x: x[x > 0], np.ones((4, 3)))
    with pytest.raises(ExportError, match="recorded value"):
        export(lambda x: x if np.sum(x) > 0 else -x, np.ones((4, 3)))


def test_validation_reports_the_first_difference(monkeypatch):
    from batchtensor.onnx import recorder

    monkeypatch.setitem(recorder.LOWERINGS, np.negative,
                        lambda g, out, x, **kw: g.node("Identity", [g.val(x)]))
    with pytest.raises(ExportValidationError, match=r"output 'output' .* differ at index"):
        export(np.negative, np.arange(1.0, 13.0).reshape(4, 3))


def test_import_without_onnx_installed():
    code = ("import sys; sys.modules['onnx'] = None; sys.modules['onnxruntime'] = None\n"
            "import numpy as np, batchtensor as bt\n"
            "assert bt.vmap(np.sum)(np.ones((2, 3))).tolist() == [3.0, 3.0]\n"
            "try:\n    bt.onnx.export(np.sum, np.ones((2, 3)))\n"
            "except ImportError as e:\n    assert 'batchtensor[onnx]' in str(e), e\n"
            "else:\n    raise SystemExit('no ImportError')\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
