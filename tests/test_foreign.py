"""Foreign functions (batchtensor/foreign.py, rules/scipy_*.py): bt.batch_rule and
bt.primitive on callables NumPy does not dispatch, their interception and its limits, the
SciPy rules beyond what the OpInfo sweep checks (batch size 0, the examples' memory layout,
output= and overwrite_data=, batched coefficients, threads, lazy loading), ONNX lowerings."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import types
import warnings
from pathlib import Path

import numpy as np
import pytest

import batchtensor as bt
from batchtensor import foreign
from batchtensor.boxed.loop import reset_warnings
from batchtensor.registry import REGISTRY, record_paths
from loop_reference import assert_same, loop_vmap

scipy = pytest.importorskip("scipy", reason="the SciPy rules need the scipy extra")
from scipy import fft, linalg, ndimage, signal, special, stats  # noqa: E402
from scipy.spatial import distance  # noqa: E402

B, A = [0.25, 0.5, 0.125], [1.0, -0.4, 0.2]


# ---- a foreign library of our own ----------------------------------------------------------------
LIBRARY = '''
import numpy as np

def smooth(x, axis=-1):
    """Stands for compiled code: it reads the values as Python numbers."""
    x = np.asarray(x, dtype=float)
    flat = np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis]).tolist()
    out = [[(r[i - 1] if i else r[0]) + r[i] for i in range(len(r))] for r in flat]
    return np.moveaxis(np.array(out).reshape(np.moveaxis(x, axis, -1).shape), -1, axis)

def pipeline(x):
    return smooth(x) * 2.0  # library code reaching smooth through its module
'''


@pytest.fixture
def lib():
    """``fakelib`` (public) re-exporting ``fakelib._impl.smooth``; rules forgotten after."""
    impl = types.ModuleType("fakelib._impl")
    exec(compile(LIBRARY, "fakelib/_impl.py", "exec"), impl.__dict__)  # noqa: S102
    impl.smooth.__module__ = impl.pipeline.__module__ = "fakelib._impl"
    pkg = types.ModuleType("fakelib")
    pkg.smooth, pkg.pipeline, pkg._impl = impl.smooth, impl.pipeline, impl
    sys.modules.update({"fakelib": pkg, "fakelib._impl": impl})
    original = impl.smooth
    try:
        yield pkg
    finally:
        foreign.forget(original)
        del sys.modules["fakelib"], sys.modules["fakelib._impl"]
    assert pkg.smooth is original and impl.smooth is original


def _smooth_rule(calls):
    def smooth_rule(x, x_bdim, axis=-1):
        calls.append(x.shape)
        ax = axis % (x.ndim - 1)
        return sys.modules["fakelib"].smooth(x, ax + (ax >= x_bdim)), x_bdim
    return smooth_rule


def test_a_rule_on_a_foreign_function_takes_effect(lib):
    xs = np.arange(24.0).reshape(4, 2, 3)
    want = loop_vmap(lib.pipeline)(xs)
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        assert_same(bt.vmap(lib.pipeline)(xs), want)  # no rule: correct, per example
    calls: list = []
    bt.batch_rule(lib.smooth)(_smooth_rule(calls))
    with bt.config(fallback="error"), record_paths() as paths:
        got = bt.vmap(lib.pipeline)(xs)  # through the defining module's global
        got_pkg = bt.vmap(lambda x: lib.smooth(x, axis=0))(xs)  # through the package
    assert_same(got, want)
    assert_same(got_pkg, loop_vmap(lambda x: lib.smooth(x, axis=0))(xs))
    assert calls == [(4, 2, 3), (4, 2, 3)]  # once per vmap, not per example
    assert (lib._impl.smooth, "rule") in paths
    assert lib.smooth is lib._impl.smooth is foreign.PRIMITIVES[lib.smooth].original


def test_the_original_is_back_after_vmap_returns_or_raises(lib):
    original = lib.smooth
    bt.batch_rule(lib.smooth)(_smooth_rule([]))
    seen = []

    def f(x):
        seen.append((lib.smooth, lib._impl.smooth))
        return lib.smooth(x)

    bt.vmap(f)(np.ones((2, 3)))
    assert lib.smooth is original and lib._impl.smooth is original
    assert type(seen[0][0]) is bt.Primitive and seen[0][0] is seen[0][1]

    def fails(x):
        lib.smooth(x)
        raise KeyError("boom")

    with pytest.raises(KeyError):
        bt.vmap(fails)(np.ones((2, 3)))
    assert lib.smooth is original and lib._impl.smooth is original
    assert signal.lfilter.__module__.startswith("scipy.signal")
    assert type(signal.lfilter) is not bt.Primitive


def test_scipy_is_the_original_after_vmap():
    originals = (signal.lfilter, fft.fft, ndimage.gaussian_filter, special.logsumexp,
                 stats.zscore, signal._signaltools.lfilter)
    inside = []

    def f(x):
        inside.append((signal.lfilter, signal._signaltools.lfilter))
        return signal.lfilter(B, A, x)

    def fails(x):
        signal.lfilter(B, A, x)
        raise ZeroDivisionError

    bt.vmap(f)(np.ones((2, 5)))
    assert all(type(p) is bt.Primitive and p.original is originals[0] for p in inside[0])
    with pytest.raises(ZeroDivisionError):
        bt.vmap(fails)(np.ones((2, 5)))
    assert (signal.lfilter, fft.fft, ndimage.gaussian_filter, special.logsumexp,
            stats.zscore, signal._signaltools.lfilter) == originals
    assert all(type(f) is not bt.Primitive for f in originals)


def test_unbatched_calls_go_to_the_original_untouched():
    x = np.arange(6.0)
    want = signal.lfilter(B, A, x)
    got = []
    bt.vmap(lambda y: got.append(signal.lfilter(B, A, x)) or y)(np.ones((2, 3)))
    assert type(got[0]) is np.ndarray and np.array_equal(got[0], want)


def test_unreachable_callables_raise():
    with pytest.raises(TypeError, match="never run.*lambda"):
        bt.batch_rule(lambda x: x)
    rng = np.random.default_rng(0)
    with pytest.raises(TypeError, match="method bound to 'Generator'"):
        bt.batch_rule(rng.normal)
    with pytest.raises(TypeError, match="method bound to 'list'"):
        bt.batch_rule([].append)

    def nested(x):
        return x

    with pytest.raises(TypeError, match="not an attribute of any imported module"):
        bt.batch_rule(nested)
    with pytest.raises(TypeError, match="NumPy already hands"):
        bt.primitive(np.sum)


def test_a_rule_signature_is_checked_for_foreign_functions(lib):
    with pytest.raises(TypeError, match="does not match its signature"):
        bt.batch_rule(lib.smooth)(lambda x, x_bdim, ax=-1: (x, x_bdim))
    assert lib.smooth not in REGISTRY


def test_shipped_rules_are_not_replaced_silently():
    with pytest.raises(ValueError, match="already has a batching entry"):
        bt.batch_rule(signal.lfilter)(lambda b, a, x, x_bdim, axis=-1, zi=None: None)


def test_other_threads_get_the_original_while_a_vmap_runs():
    inside, done = threading.Event(), threading.Event()
    results = {}

    def f(x):
        inside.set()
        assert done.wait(10)
        return signal.lfilter(B, A, x)

    def other():
        assert inside.wait(10)
        x = np.arange(5.0)
        results["other"] = (type(signal.lfilter), signal.lfilter(B, A, x))
        done.set()

    t = threading.Thread(target=other)
    t.start()
    got = bt.vmap(f)(np.arange(10.0).reshape(2, 5))
    t.join()
    assert results["other"][0] is bt.Primitive  # installed: a level is open somewhere
    assert type(results["other"][1]) is np.ndarray
    np.testing.assert_allclose(results["other"][1], signal.lfilter(B, A, np.arange(5.0)))
    assert_same(got, loop_vmap(lambda x: signal.lfilter(B, A, x))(np.arange(10.0).reshape(2, 5)))


def test_vmap_of_the_function_itself():
    xs = np.random.default_rng(1).normal(size=(3, 5))
    with bt.config(fallback="error"):
        assert_same(bt.vmap(special.logsumexp)(xs), loop_vmap(special.logsumexp)(xs))
        assert_same(bt.vmap(stats.zscore)(xs), loop_vmap(stats.zscore)(xs))


# ---- bt.primitive -------------------------------------------------------------------------------
@bt.primitive
def clipped_cumsum(x, axis=-1):
    """A function of our own, declared an op: vmap never looks inside."""
    x = np.asarray(x)
    return np.clip(np.cumsum(x, axis), -1.0, 1.0)


def _cumsum_rule(x, x_bdim, axis=-1):
    ax = axis % (x.ndim - 1)
    return clipped_cumsum(x, ax + (ax >= x_bdim)), x_bdim


def test_primitive_without_a_rule_runs_per_example_and_warns():
    @bt.primitive
    def opaque(x):
        return np.asarray(x) * 2.0

    xs = np.arange(6.0).reshape(3, 2)
    with pytest.warns(bt.PerformanceWarning, match="opaque has no batch rule"):
        got = bt.vmap(lambda x: opaque(x) + 1)(xs)
    assert_same(got, loop_vmap(lambda x: opaque(x) + 1)(xs))
    with bt.config(fallback="error"), pytest.raises(bt.BatchingError, match="opaque"):
        bt.vmap(opaque)(xs)
    assert type(opaque(np.ones(2))) is np.ndarray  # outside vmap: the function itself


def test_primitive_with_a_rule():
    try:
        clipped_cumsum.def_batch_rule(_cumsum_rule)
        xs = np.random.default_rng(2).normal(size=(4, 3, 5))
        with bt.config(fallback="error"):
            for ax in (0, -1, 1):
                f = lambda x: clipped_cumsum(x, axis=ax)  # noqa: E731
                assert_same(bt.vmap(f)(xs), loop_vmap(f)(xs))
                assert_same(bt.vmap(f, in_axes=2)(xs), loop_vmap(f, in_axes=2)(xs))
            nested = bt.vmap(bt.vmap(lambda x: clipped_cumsum(x)), in_axes=1)(xs)
        assert_same(nested, loop_vmap(loop_vmap(lambda x: clipped_cumsum(x)), in_axes=1)(xs))
    finally:
        REGISTRY.pop(clipped_cumsum.original, None)


def test_primitive_of_a_foreign_function_in_extra_modules(lib):
    user = types.ModuleType("user_module")
    exec("from fakelib import smooth\ndef run(x):\n    return smooth(x) + 1\n",  # noqa: S102
         user.__dict__)
    xs = np.arange(12.0).reshape(3, 4)
    calls: list = []
    prim = bt.primitive(lib.smooth, rule=_smooth_rule(calls), modules=[user])
    assert prim is foreign.PRIMITIVES[lib._impl.smooth]
    with bt.config(fallback="error"):
        assert_same(bt.vmap(user.run)(xs), loop_vmap(user.run)(xs))
    assert calls and user.smooth is lib._impl.smooth


def test_a_name_bound_before_the_vmap_is_reached_in_the_functions_own_module_only(lib):
    """``from fakelib import smooth`` in a module not named to bt.primitive: the vmapped
    function's own module sees the Primitive during the pass (as it sees the buffer makers);
    a helper module it calls keeps the original, and the function then meets the
    BatchedTensor as any library code does (here: the whole-function rerun, correct and
    warned)."""
    helper = types.ModuleType("helper_module")
    exec("from fakelib import smooth\ndef run(x):\n    return smooth(x) + 1\n",  # noqa: S102
         helper.__dict__)
    user = types.ModuleType("user_module")
    user.helper = helper
    exec("def outer(x):\n    return helper.run(x) * 2\n", user.__dict__)  # noqa: S102
    calls: list = []
    bt.batch_rule(lib.smooth)(_smooth_rule(calls))
    xs = np.arange(12.0).reshape(3, 4)
    assert_same(bt.vmap(helper.run, fallback="error")(xs), loop_vmap(helper.run)(xs))
    assert calls and helper.smooth is lib.smooth
    calls.clear()
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        assert_same(bt.vmap(user.outer)(xs), loop_vmap(user.outer)(xs))
    assert not calls


def test_intercept_numpy_false_leaves_scipy_alone():
    seen = []
    with bt.config(intercept_numpy=False):
        bt.vmap(lambda x: seen.append(signal.lfilter) or x)(np.ones((2, 3)))
    assert seen == [signal.lfilter]


# ---- the SciPy rules beyond the sweep ---------------------------------------------------------
def _cases():
    """(name, per-example function, example input) for every shipped rule."""
    x2 = np.random.default_rng(3).normal(size=(6, 20))
    return [
        ("lfilter", lambda x: signal.lfilter(B, A, x), x2),
        ("lfilter zi", lambda x: signal.lfilter(B, A, x, zi=np.ones((6, 2)))[0], x2),
        ("sosfilt", lambda x: signal.sosfilt(signal.butter(2, 0.3, output="sos"), x, axis=0),
         x2),
        ("filtfilt", lambda x: signal.filtfilt(B, A, x), x2),
        ("sosfiltfilt", lambda x: signal.sosfiltfilt(signal.butter(2, 0.3, output="sos"), x),
         x2),
        ("detrend", lambda x: signal.detrend(x, axis=0), x2),
        ("hilbert", lambda x: signal.hilbert(x), x2),
        ("savgol_filter", lambda x: signal.savgol_filter(x, 5, 2), x2),
        ("decimate", lambda x: signal.decimate(x, 2), np.tile(x2, 2)),
        ("resample_poly", lambda x: signal.resample_poly(x, 2, 3, axis=-1), x2),
        ("fft", lambda x: fft.fft(x, axis=0), x2),
        ("rfftn", lambda x: fft.rfftn(x), x2),
        ("dctn", lambda x: fft.dctn(x, type=1), x2),
        ("fftshift", lambda x: fft.fftshift(x), x2),
        ("gaussian_filter", lambda x: ndimage.gaussian_filter(x, [1.0, 2.0]), x2),
        ("median_filter", lambda x: ndimage.median_filter(x, 3), x2),
        ("convolve", lambda x: ndimage.convolve(x, [[1.0, 2.0], [0.5, 1.0]]), x2),
        ("gaussian_gradient_magnitude",
         lambda x: ndimage.gaussian_gradient_magnitude(x, 1.0), x2),
        ("uniform_filter1d", lambda x: ndimage.uniform_filter1d(x, 3, axis=0), x2),
        ("logsumexp", lambda x: special.logsumexp(x, axis=0), x2),
        ("softmax", lambda x: special.softmax(x), x2),
        ("moment", lambda x: stats.moment(x, [2, 3], axis=None), x2),
        ("skew", lambda x: stats.skew(x, axis=1), x2),
        ("zscore", lambda x: stats.zscore(x, axis=None), x2),
        ("linalg.norm", lambda x: np.atleast_1d(linalg.norm(x[0])), x2),
        ("linalg.norm axis", lambda x: linalg.norm(x, 1, axis=0), x2),
    ]


CASES = _cases()


def _layouts(xs: np.ndarray) -> dict:
    """The same batch (batch axis 0) laid out several ways in memory."""
    f = np.asfortranarray(xs)
    rev = (slice(None, None, -1),) * xs.ndim
    neg = np.ascontiguousarray(xs[rev])[rev]
    ro = xs.copy()
    ro.flags.writeable = False
    perm = tuple(range(xs.ndim))[::-1]  # its own inverse
    transposed = np.ascontiguousarray(xs.transpose(perm)).transpose(perm)
    return {"C": xs, "F": f, "negative strides": neg, "read-only": ro, "transposed": transposed}


@pytest.mark.parametrize("name, f, x", CASES, ids=[c[0] for c in CASES])
def test_results_are_fresh_blocks_as_in_the_loop(name, f, x):
    xs = np.stack([x + i for i in range(3)])
    for layout, arr in _layouts(xs).items():
        before = arr.copy()
        with bt.config(fallback="error"):
            got = bt.vmap(f)(arr)
        want = np.stack([f(e) for e in arr])
        assert_same(got, want)
        assert np.array_equal(arr, before), layout  # the input is untouched
        assert not np.shares_memory(got, arr), layout
        assert got.flags.writeable, layout
        one = f(arr[0])
        # each example's result laid out as the loop's (its contiguity flags)
        for i in range(len(arr)):
            assert got[i].flags.c_contiguous == one.flags.c_contiguous, (layout, i)
            assert got[i].flags.f_contiguous == one.flags.f_contiguous, (layout, i)


@pytest.mark.parametrize("name, f, x", CASES, ids=[c[0] for c in CASES])
def test_batch_size_zero(name, f, x):
    one = np.asarray(f(x))
    with bt.config(fallback="error"):
        got = bt.vmap(f)(x[None][:0])
    assert got.shape == (0,) + one.shape and got.dtype == one.dtype


@pytest.mark.parametrize("name, f, x", CASES, ids=[c[0] for c in CASES])
def test_batch_size_one_and_in_axes_last(name, f, x):
    xs = np.stack([x * (i + 1) for i in range(3)], axis=-1)
    with bt.config(fallback="error"):
        assert_same(bt.vmap(f, in_axes=-1)(xs[..., :1]), loop_vmap(f, in_axes=-1)(xs[..., :1]))
        assert_same(bt.vmap(f, in_axes=-1)(xs), loop_vmap(f, in_axes=-1)(xs))


def test_batched_coefficients_run_per_example_and_warn():
    """Batched coefficients with no vectorised path (Gustafsson's filtfilt): the per-op loop
    (tests/test_foreign_signal.py has the ones that vectorise)."""
    rng = np.random.default_rng(4)
    bs, xs = rng.uniform(0.1, 1.0, size=(3, 3)), rng.normal(size=(3, 10))
    f = lambda b, x: signal.filtfilt(b, A, x, method="gust")  # noqa: E731
    reset_warnings()  # (each op's loop warning is shown once a process)
    with pytest.warns(bt.PerformanceWarning, match="scipy.signal.filtfilt has no batch rule"):
        got = bt.vmap(f)(bs, xs)
    assert_same(got, loop_vmap(f)(bs, xs))
    # batched at an outer level only: the inner level's rule, then the outer level's loop
    g = bt.vmap(lambda b: bt.vmap(lambda x: f(b, x))(xs))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        want = loop_vmap(lambda b: loop_vmap(lambda x: f(b, x))(xs))(bs)
        assert_same(g(bs), want)
    with bt.config(fallback="error"), pytest.raises(bt.BatchingError, match="filtfilt"):
        bt.vmap(f)(bs, xs)


def test_ndimage_output_arrays():
    """output= a batched array: each example writes into its own (per-op loop); an array the
    function made: the filter runs on the batch and writes into it, which makes it batched
    (tests/test_scipy_ndimage_output.py); one every example shares: the clear error of a
    batched write into shared state (the per-op loop would write every example into it)."""
    xs = np.random.default_rng(5).normal(size=(3, 6, 7))

    def into_batched(x):
        out = np.empty_like(x)
        res = ndimage.gaussian_filter(x, 1.0, output=out)
        return res, out

    def into_made(x):
        out = np.zeros(x.shape)  # made by the function: per example
        ndimage.gaussian_filter(x, 1.0, output=out)
        return out

    shared = np.zeros((6, 7))

    def into_shared(x):
        return ndimage.gaussian_filter(x, 1.0, output=shared) + 0

    with pytest.warns(bt.PerformanceWarning, match="has no batch rule for these arguments"):
        assert_same(bt.vmap(into_batched)(xs), loop_vmap(into_batched)(xs))
    for f in (into_made, lambda x: ndimage.uniform_filter1d(x, 3, output=np.zeros(x.shape))):
        assert_same(bt.vmap(f, fallback="error")(xs), loop_vmap(f)(xs))
    with pytest.raises(bt.SharedWriteError):
        bt.vmap(into_shared)(xs)
    np.testing.assert_array_equal(shared, 0.0)
    with bt.config(fallback="error"):
        assert_same(bt.vmap(lambda x: ndimage.uniform_filter(x, 3, output=np.float32))(xs),
                    loop_vmap(lambda x: ndimage.uniform_filter(x, 3, output=np.float32))(xs))


def test_detrend_overwrite_data_writes_into_each_example_as_the_loop():
    xs = np.random.default_rng(6).normal(size=(3, 10))
    loop_in, vmap_in = xs.copy(), xs.copy()
    want = loop_vmap(lambda x: signal.detrend(x, overwrite_data=True))(loop_in)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(lambda x: signal.detrend(x, overwrite_data=True))(vmap_in)
    assert_same(got, want)
    assert_same(vmap_in, loop_in)


def test_fft_overwrite_x_returns_the_input_as_the_loop_does():
    xs = np.random.default_rng(7).normal(size=(3, 8)) + 0j

    def f(x):
        r = fft.fft(x, overwrite_x=True)  # a complex input: transformed in place, returned
        r[0] = 5.0
        return x + 0

    loop_in, vmap_in = xs.copy(), xs.copy()
    want = loop_vmap(f)(loop_in)
    with bt.config(fallback="error"):
        got = bt.vmap(f)(vmap_in)
    assert_same(got, want)
    assert_same(vmap_in, loop_in)
    assert (want[:, 0] == 5.0).all()


def test_zi_batched_unbatched_and_broadcast():
    rng = np.random.default_rng(8)
    xs, zis = rng.normal(size=(4, 3, 10)), rng.normal(size=(4, 3, 2))
    f = lambda x, zi: signal.lfilter(B, A, x, zi=zi)  # noqa: E731
    with bt.config(fallback="error"):
        for axes in [(0, 0), (0, None), (None, 0), (2, 1)]:
            args = (xs if axes[0] != 2 else np.moveaxis(xs, 0, 2),
                    zis if axes[1] != 1 else np.moveaxis(zis, 0, 1))
            args = tuple(a[0] if ax is None else a for a, ax in zip(args, axes))
            assert_same(bt.vmap(f, in_axes=axes)(*args), loop_vmap(f, in_axes=axes)(*args))


# ---- loading ------------------------------------------------------------------------------------
ROOT = str(Path(__file__).resolve().parents[1])


def _python(code: str) -> str:
    """Run ``code`` in a fresh interpreter on this checkout's batchtensor."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_import_batchtensor_does_not_import_scipy_and_rules_load_lazily():
    out = _python("""
        import sys, numpy as np, batchtensor as bt
        print("scipy" in sys.modules)
        bt.vmap(np.sin)(np.ones((2, 3)))                 # no scipy: nothing to load
        import scipy.special
        from batchtensor.registry import REGISTRY
        print(scipy.special.logsumexp in REGISTRY)
        with bt.config(fallback="error"):
            r = bt.vmap(lambda x: scipy.special.logsumexp(x))(np.zeros((2, 3)))
        print(scipy.special.logsumexp in REGISTRY, r.shape)
    """)
    assert out.split() == ["False", "False", "True", "(2,)"]


def test_a_user_rule_for_a_scipy_function_meets_the_shipped_one():
    out = _python("""
        import numpy as np, batchtensor as bt, scipy.signal
        try:
            bt.batch_rule(scipy.signal.lfilter)(
                lambda b, a, x, x_bdim, axis=-1, zi=None: (None, None))
        except ValueError as e:
            print("refused")
        bt.batch_rule(scipy.signal.medfilt)(
            lambda volume, volume_bdim, kernel_size=None: (
                scipy.signal.medfilt(np.moveaxis(volume, volume_bdim, 0), [1, 3]), 0))
        xs = np.random.default_rng(0).normal(size=(3, 7))
        with bt.config(fallback="error"):
            got = bt.vmap(scipy.signal.medfilt)(xs)
        print(np.allclose(got, [scipy.signal.medfilt(x) for x in xs]))
    """)
    assert out.split() == ["refused", "True"]


# ---- ONNX ---------------------------------------------------------------------------------------
def test_primitive_onnx_lowering_round_trips():
    pytest.importorskip("onnx", reason="needs the onnx extra")
    pytest.importorskip("onnxruntime", reason="needs onnxruntime")

    @bt.primitive
    def softplus(x):
        x = np.asarray(x)
        return np.logaddexp(np.zeros((), x.dtype), x)

    @softplus.def_batch_rule
    def _(x, x_bdim):
        return softplus(x), x_bdim

    @softplus.def_onnx(onnx_ops=("Softplus",))
    def _(g, out, x):
        return g.node("Softplus", [g.val(x, out.dtype)])

    try:
        xs = np.random.default_rng(9).normal(size=(5, 3)).astype(np.float32)
        f = lambda x: softplus(x * 2.0) + 1.0  # noqa: E731
        model = bt.onnx.export(f, xs)  # validate=True: onnxruntime at three batch sizes
        assert [n.op_type for n in model.graph.node].count("Softplus") == 1
    finally:
        foreign.forget(softplus.original)


def test_primitive_onnx_custom_domain():
    onnx = pytest.importorskip("onnx", reason="needs the onnx extra")

    @bt.primitive
    def triple(x):
        return np.asarray(x) * 3

    triple.def_batch_rule(lambda x, x_bdim: (triple(x), x_bdim))
    triple.def_onnx(lambda g, out, x: g.node("Triple", [g.val(x)], domain="org.example"))
    try:
        model = bt.onnx.export(lambda x: triple(x) + 1, np.ones((4, 2), np.float32),
                               validate=False)
        onnx.checker.check_model(model, full_check=True)
        assert ("Triple", "org.example") in [(n.op_type, n.domain) for n in model.graph.node]
        assert {o.domain for o in model.opset_import} == {"", "org.example"}
    finally:
        foreign.forget(triple.original)


def test_a_primitive_without_a_lowering_is_refused_by_the_export():
    pytest.importorskip("onnx", reason="needs the onnx extra")

    @bt.primitive
    def double(x):
        return np.asarray(x) * 2

    double.def_batch_rule(lambda x, x_bdim: (double(x), x_bdim))
    try:
        with pytest.raises(bt.onnx.UnsupportedOpError, match="double has no ONNX lowering"):
            bt.onnx.export(lambda x: double(x), np.ones((4, 2), np.float32))
    finally:
        foreign.forget(double.original)


# ---- every SciPy OpInfo sample: each example's result laid out as the loop's ------------------
def _scipy_infos():
    from opinfo import DATABASE

    return [i for i in DATABASE if foreign.is_foreign(i.covers)
            or str(getattr(i.covers, "__module__", "")).startswith(tuple(foreign.LAZY_RULES))
            and i.path == "rule"]


@pytest.mark.parametrize("info", _scipy_infos(), ids=lambda i: i.name)
def test_every_sample_lays_out_each_example_as_the_loop(info):
    """The contiguity flags of each example's result are the loop's, for C, F and transposed
    batches (the OpInfo sweep compares values and writes, not flags)."""
    from opinfo.sweep import draw_examples

    dtype = info.dtypes[0]
    for examples in draw_examples(info, dtype):
        sample = examples[0]
        if sample.loop_reason or not isinstance(sample.args[0] if sample.args else None,
                                                np.ndarray):
            continue
        args = [e.args for e in examples[:3]]
        pos = next(j for j, a in enumerate(sample.args) if isinstance(a, np.ndarray))
        xs = np.stack([a[pos] for a in args])
        if xs.ndim < 2:
            continue
        rest = list(sample.args)

        def f(x):
            rest[pos] = x
            return info.op(*rest, **sample.kwargs)

        for layout, arr in {"C": xs, "F": np.asfortranarray(xs),
                            "transposed": _layouts(xs)["transposed"]}.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # SciPy's warnings on NaN and size-0 samples
                try:
                    want = [f(e) for e in arr]
                except Exception:  # noqa: BLE001  (SciPy raises: the sweep compares errors)
                    break
                got = bt.vmap(f)(arr)
            for g, w in zip(*(x if isinstance(x, (tuple, list)) else (x,)
                              for x in (got, want[0]))):
                w = np.asarray(w)
                if w.ndim == 0 or np.shares_memory(w, arr):
                    continue  # a view of the input (overwrite_x): vmap's result is a copy
                for i in range(len(arr)):
                    assert (g[i].flags.c_contiguous, g[i].flags.f_contiguous) == (
                        w.flags.c_contiguous, w.flags.f_contiguous), (sample.name, layout, i)


def test_a_rerun_after_scipy_wrote_into_an_input_starts_from_the_callers_values():
    """fft(overwrite_x=True) may transform a complex input in place: the whole-function rerun
    puts the input's values back first, so the examples see what the loop's see."""
    xs = np.random.default_rng(10).normal(size=(3, 8)) + 0j

    def f(x):
        fft.fft(x, overwrite_x=True)
        return np.abs(x).sum() * round(float(x.real[0]), 6)  # a Python float rounded: a rerun

    a, b = xs.copy(), xs.copy()
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        got = bt.vmap(f)(a)
    assert_same(got, loop_vmap(f)(b))
    np.testing.assert_array_equal(a, b)  # the input as the loop leaves it
    # (no write: rerun as usual)
    g = lambda x: round(float(np.abs(fft.fft(x)).sum()), 6) * 2  # noqa: E731
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        assert_same(bt.vmap(g)(xs), loop_vmap(g)(xs))


def test_the_docs_examples_run():
    """docs/foreign.md's Python blocks, in order, in one namespace (a subprocess: they
    register rules)."""
    import re

    doc = Path(ROOT) / "docs" / "foreign.md"
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(), re.S)
    assert len(blocks) >= 4
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        blocks = [b for b in blocks if "bt.onnx" not in b]
    _python("import warnings\nwarnings.simplefilter('error', Warning)\n" + "\n".join(blocks))


def test_a_rule_for_another_scipy_signature_is_left_out_with_a_warning(lib):
    from batchtensor.rules._scipy import scipy_rule

    with pytest.warns(RuntimeWarning, match="no batch rule for fakelib.smooth with this SciPy"):
        scipy_rule(lib.smooth)(lambda x, x_bdim, window=3: (x, x_bdim))
    assert lib.smooth not in REGISTRY


def test_the_bench_workloads_match_the_loop():
    """bench/foreign.py's workloads (first examples only; nothing timed here)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_foreign",
                                                  Path(ROOT) / "bench" / "foreign.py")
    bench = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(Path(ROOT) / "bench"))
    try:
        spec.loader.exec_module(bench)
    finally:
        sys.path.remove(str(Path(ROOT) / "bench"))
    for name, (f, xs) in bench.workloads(np.random.default_rng(0)).items():
        with bt.config(fallback="error"):
            assert_same(bt.vmap(f)(xs[:4]), loop_vmap(f)(xs[:4]))


def test_primitive_decorator_with_arguments():
    def rule(x, x_bdim):
        return doubled(x), x_bdim

    @bt.primitive(rule=rule)
    def doubled(x):
        return np.asarray(x) * 2

    try:
        xs = np.arange(6.0).reshape(2, 3)
        with bt.config(fallback="error"):
            assert_same(bt.vmap(doubled)(xs), xs * 2)
        assert type(doubled) is bt.Primitive and doubled.__name__ == "doubled"
        assert bt.primitive(doubled) is doubled
    finally:
        foreign.forget(doubled.original)


# A name bound at import (``from scipy.ndimage import uniform_filter``), as libraries do.
smooth_by_name = ndimage.uniform_filter


def _smooth_then_scale(x):
    return smooth_by_name(x, size=3) * 2.0


def test_a_foreign_callable_bound_by_name_in_the_functions_module_is_intercepted():
    xs = np.random.default_rng(12).normal(size=(3, 6, 7))
    with record_paths() as paths:
        got = bt.vmap(_smooth_then_scale, fallback="error")(xs)
    assert_same(got, loop_vmap(_smooth_then_scale)(xs))
    assert any(op is ndimage.uniform_filter for op, _ in paths)
    assert smooth_by_name is ndimage.uniform_filter  # the module's name is put back


def test_scikit_image_filters_that_import_scipy_by_name_stay_vectorised():
    filters = pytest.importorskip("skimage.filters", reason="scikit-image is a test extra")
    xs = np.random.default_rng(13).normal(size=(3, 8, 9))
    for fn in (filters.roberts, filters.laplace, filters.farid_h):
        assert_same(bt.vmap(fn, fallback="error")(xs), loop_vmap(fn)(xs))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_scipy_linalg_norm_as_blas_nrm2_gives_it(dtype):
    """SciPy's 2-norm of a 1-d example is BLAS nrm2: scaled (no overflow at 1e200), in the
    example's precision, returned as a Python float (the loop stacks float64)."""
    rng = np.random.default_rng(14)
    xs = rng.normal(size=(4, 7)).astype(dtype)
    if dtype is np.float64:
        xs[1] *= 1e200
        xs[2] = 0.0
    with bt.config(fallback="error"):
        got = bt.vmap(linalg.norm)(xs)
    assert_same(got, np.stack([linalg.norm(x) for x in xs]),
                rtol=1e-6 if dtype is np.float32 else 1e-12)
    assert got.dtype == np.float64 and np.isfinite(got).all()
    bad = xs.copy()
    bad[3, 0] = np.nan
    with pytest.raises(ValueError, match="infs or NaNs"):
        bt.vmap(linalg.norm)(bad)


def test_scipy_spatial_distances_through_linalg_norm_stay_vectorised():
    u, v = np.random.default_rng(15).normal(size=(2, 5, 6)).astype(np.float32)
    for fn in (distance.euclidean, distance.minkowski):
        with bt.config(fallback="error"):
            got = bt.vmap(fn)(u, v)
        assert_same(got, np.stack([fn(a, b) for a, b in zip(u, v)]), rtol=1e-6)
