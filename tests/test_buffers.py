"""Arrays the function creates are per-example state (batchtensor/buffers.py): a batched write
makes them batched, as the loop's fresh array per example; compared with the loop."""

from __future__ import annotations

import sys
import threading
import warnings

import numpy as np
import pytest
from numpy import asarray as imported_asarray
from numpy import zeros as imported_zeros

import batchtensor as bt
from batchtensor import buffers, conversions
from loop_reference import LAYOUTS, assert_same, laid_out, loop_vmap, vectorised

RNG = np.random.default_rng(11)
X = RNG.normal(size=(5, 4))
SHARED = np.zeros(4)
BOUND_ASARRAY = np.asarray  # bound at import, before any vmap swapped anything


def vectorised(f, *args, in_axes=0):
    """vmap with no rerun and no per-op loop, against the loop; the inputs after both runs."""
    a = [np.copy(x) if isinstance(x, np.ndarray) else x for x in args]
    b = [np.copy(x) if isinstance(x, np.ndarray) else x for x in args]
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(f, in_axes, fallback="error")(*a)
    want = loop_vmap(f, in_axes)(*b)
    assert_same(got, want)
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
    return got


def rerun(f, *args, in_axes=0):
    """Only a per-example run gives the loop's result: vmap reruns (and says so), or raises
    with fallback='error'."""
    with pytest.raises((TypeError, ValueError, bt.BatchingError)):  # the first error
        bt.vmap(f, in_axes, fallback="error")(*args)
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        got = bt.vmap(f, in_axes)(*args)
    assert_same(got, loop_vmap(f, in_axes)(*args))


def module_is_pristine() -> bool:
    g = globals()
    return g["np"] is sys.modules["numpy"] and g["imported_zeros"] is np.zeros.__wrapped__ \
        if hasattr(np.zeros, "__wrapped__") else g["np"] is sys.modules["numpy"]


# ---- every kind of write into a buffer ----------------------------------------------------------
def fill_elementwise(x):
    out = np.zeros(4)
    for i in range(4):
        out[i] = x[i] ** 2
    return out


def fill_columns(x):
    res = np.empty((3, 4))
    for j in range(3):
        res[j, :] = x * j
    return res


def accumulate(x, w):
    acc = np.zeros_like(w)  # w unbatched: a buffer
    acc += x
    acc *= 2
    return acc


def recurrence(x):
    state = np.zeros((4, 2))
    state[0] = x[0]
    for i in range(1, 4):
        state[i] = state[i - 1] * 0.5 + x[i]  # reads a row (a view: gone before the write)
    return state


WRITES = {
    "out[i] = v": fill_elementwise,
    "res[j, :] = col": fill_columns,
    "out[mask] = v": lambda x: (lambda o: (o.__setitem__(x > 0, x[x > 0].sum()), o)[1])(
        np.zeros(4)),
    "out[batched index] = 1": lambda x: (lambda o: (o.__setitem__(np.argmax(x), 1.0), o)[1])(
        np.zeros(4)),
    "in-place operator": lambda x: (lambda o: o.__iadd__(x))(np.ones(4)),
    "ufunc out=": lambda x: (lambda o: (np.multiply(x, 3, out=o), o)[1])(np.empty(4)),
    "reduction out=": lambda x: (lambda o: (np.sum(x, out=o), o)[1])(np.zeros(())),
    "np.copyto": lambda x: (lambda o: (np.copyto(o, x), o)[1])(np.full(4, 7.0)),
    "np.copyto where": lambda x: (lambda o: (np.copyto(o, x, where=x > 0), o)[1])(
        np.ones(4)),
    "np.put": lambda x: (lambda o: (np.put(o, [0, 2], x[:2]), o)[1])(np.zeros(4)),
    "np.place": lambda x: (lambda o: (np.place(o, x > 0, x[0]), o)[1])(np.zeros(4)),
    "np.putmask": lambda x: (lambda o: (np.putmask(o, x > 0, x), o)[1])(np.zeros(4)),
    "fill": lambda x: (lambda o: (o.fill(x[0]), o)[1])(np.zeros(4)),
    "ufunc.at": lambda x: (lambda o: (np.add.at(o, [0, 0, 1], x[:3]), o)[1])(np.zeros(4)),
    "recurrence": recurrence,
    "eye": lambda x: (lambda o: (o.__setitem__((0, 1), x[0]), o)[1])(np.eye(3)),
    "identity": lambda x: (lambda o: (o.__setitem__(1, x[:3]), o)[1])(np.identity(3)),
    "ones_like of a plain array": lambda x: (lambda o: (o.__setitem__(0, x[1]), o)[1])(
        np.ones_like(SHARED)),
    "np.copy of a plain array": lambda x: (lambda o: (o.__setitem__(2, x[1]), o)[1])(
        np.copy(SHARED)),
    "np.array of Python data": lambda x: (lambda o: (o.__setitem__(0, x.sum()), o)[1])(
        np.array([0.0, 0.0, 1.0])),
    "int buffer, float value": lambda x: (lambda o: (o.__setitem__(1, x[0] * 10), o)[1])(
        np.zeros(3, dtype=np.int64)),
    "real part": lambda x: (lambda o: (setattr(o, "real", x), o)[1])(np.zeros(4, complex)),
    "np.full with a batched value": lambda x: np.full(3, x[0]),
    "from numpy import zeros": lambda x: (lambda o: (o.__setitem__(0, x[0]), o)[1])(
        imported_zeros(2)),
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_write_into_a_buffer_is_vectorised(name):
    vectorised(WRITES[name], X)
    assert module_is_pristine()


def test_buffer_from_an_unbatched_argument():
    vectorised(accumulate, X, np.arange(4.0), in_axes=(0, None))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_input_layouts(layout):
    xs, in_axes = laid_out(RNG.normal(size=(5, 4)), layout)
    for f in (fill_elementwise, fill_columns, recurrence):
        vectorised(f, xs, in_axes=in_axes)


@pytest.mark.parametrize("n", [0, 1, 2])
def test_small_batches(n):
    xs = RNG.normal(size=(n, 4))
    got = bt.vmap(fill_columns, fallback="error")(xs)
    if n:
        assert_same(got, loop_vmap(fill_columns)(xs))
    else:
        assert got.shape == (0, 3, 4)


def test_reads_before_the_write_are_plain_and_the_result_of_no_write_is_the_loops():
    seen = {}

    def f(x):
        out = np.zeros(3)
        seen["type"] = type(out + 1)  # a read: a plain array
        seen["isinstance"] = isinstance(out, np.ndarray)
        seen["asarray"] = type(np.asarray(out))
        return out + x[:3] * 0 if seen else out

    vectorised(f, X)
    assert seen == {"type": np.ndarray, "isinstance": True, "asarray": np.ndarray}
    vectorised(lambda x: np.zeros(3), X)  # never written: every example the same zeros


def test_read_with_a_batched_index():
    vectorised(lambda x: np.full(4, 2.0)[np.argmax(x)] * x, X)  # one element: a copy
    # a row: the loop's view of the buffer, which no gather can stand for (a write through
    # either would tell): the same integer in every example, else a rerun
    f = lambda x: np.eye(4)[np.argmax(x)] * x  # noqa: E731
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        assert_same(bt.vmap(f)(X), loop_vmap(f)(X))


def test_nested_vmap():
    xs = RNG.normal(size=(3, 5, 4))
    want = loop_vmap(loop_vmap(fill_columns))(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        assert_same(bt.vmap(bt.vmap(fill_columns), fallback="error")(xs), want)

    def outer_value_inner_buffer(x):  # the inner function writes a value of the outer level
        return bt.vmap(lambda y: (lambda o: (o.__setitem__(0, x[0]), o + y)[1])(np.zeros(4)))(
            np.ones((2, 4)))

    vectorised(outer_value_inner_buffer, X)


# ---- what still needs a per-example run ---------------------------------------------------------
def _view_alive_at_the_write(x):
    out = np.zeros(4)
    tail = out[2:]  # a view of the plain array: it would not see a batched write
    out[0] = x[0]
    return out + tail.sum()


def _handed_out_alive(x):
    out = np.zeros(4)
    plain = np.asarray(out)
    out[1] = x[1]
    return out * plain.size


def _method_copy(x):
    out = SHARED.copy()  # a method's result: vmap cannot see it made inside f
    out[0] = x[0]
    return out


def _into_a_generator_out(x):
    out = np.empty(4)
    np.random.default_rng(0).random(4, out=out)  # compiled code needs a real ndarray
    out[0] = x[0]
    return out


@pytest.mark.parametrize("f", [_view_alive_at_the_write, _handed_out_alive, _method_copy,
                               _into_a_generator_out])
def test_what_reruns(f):
    rerun(f, X)
    assert module_is_pristine()


def test_shared_arrays_stay_shared():
    shared = np.zeros(4)

    def f(x):
        shared[0] = x[0]  # a closure array: the loop writes it once per example, last wins
        return x

    with pytest.raises(TypeError, match="cannot write a batched value or index into 'shared'"):
        bt.vmap(f, fallback="error")(X)
    assert (shared == 0).all()


def test_compiled_code_gets_real_arrays():
    """NumPy's compiled code makes its arrays through its own reference to numpy: never a
    buffer (Generator.normal writes through the raw pointer of np.empty's result)."""
    rng = np.random.default_rng(0)
    got = bt.vmap(lambda x: x + rng.normal(size=x.shape), randomness="same")(X)
    assert got.shape == X.shape


def test_module_restored_after_returns_raises_and_threads():
    assert module_is_pristine()
    with pytest.raises(ZeroDivisionError):
        bt.vmap(lambda x: (np.zeros(3), 1 / 0))(X)
    assert module_is_pristine() and conversions.pristine()
    results, errors = [], []

    def work():
        try:
            for _ in range(20):
                results.append(bt.vmap(fill_columns, fallback="error")(X))
        except BaseException as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    np.zeros(3)  # this thread, no vmap: plain, whatever the other threads do
    for t in threads:
        t.join()
    assert not errors, errors
    want = loop_vmap(fill_columns)(X)
    for r in results:
        assert_same(r, want)
    assert module_is_pristine() and conversions.pristine()
    assert type(np.zeros(2)) is np.ndarray


def test_local_buffer_behaves_as_the_plain_array():
    kinds = []

    def f(x):
        b = np.arange(6.0).reshape(2, 3) * 0 + np.ones((2, 3))
        c = np.ones((2, 3))
        kinds.append(type(c))
        assert isinstance(c, np.ndarray)
        assert repr(c) == repr(np.ones((2, 3))) and len(c) == 2 and c.shape == (2, 3)
        assert c.sum() == 6 and float(c[0, 0]) == 1.0 and list(c[0]) == [1.0, 1.0, 1.0]
        assert (c == b).all() and (c @ np.ones(3)).tolist() == [3.0, 3.0]
        assert c.T.shape == (3, 2) and np.concatenate([c, b]).shape == (4, 3)
        return x

    with bt.config(lean_passes=False):  # (a lean pass makes plain arrays: no buffer)
        vectorised(f, X)
    assert kinds[0] is buffers.LocalBuffer and kinds[-1] is np.ndarray  # vmap, then the loop


def test_conversions_bound_at_import_in_the_function_module_are_intercepted():
    """``from numpy import asarray`` and ``asarray = np.asarray`` made at import hold NumPy's own
    function, which batchtensor.conversions cannot replace in numpy; the function's module sees
    the intercepting one during the call, so these stay vectorised, and are NumPy's after."""
    original = BOUND_ASARRAY
    vectorised(lambda x: BOUND_ASARRAY(x) * 2 + imported_asarray(x).sum(), X)
    assert globals()["BOUND_ASARRAY"] is original and imported_asarray is original
    assert conversions.pristine()


@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/=", "**=", "//=", "%="])
def test_inplace_operator_with_a_buffer_on_the_right(op):
    """``h *= w`` with ``h`` batched and ``w`` a buffer the function filled with plain values
    (a window, as scipy.signal.firwin applies it): the buffer's type answers NumPy's protocol
    first, and the write used to be dropped (``h`` unchanged, no error)."""
    code = compile(f"h {op} w", "<op>", "exec")

    def f(c):
        w = np.ones(3)
        w[0] = 2.0  # plain: it stays a buffer
        h = c * np.arange(1.0, 4.0) + 1.0
        scope = {"h": h, "w": w}
        exec(code, scope)  # noqa: S102  (the operator under test)
        return scope["h"]

    cs = np.array([0.2, 0.5, 0.7])
    got = bt.vmap(f, fallback="error")(cs)
    np.testing.assert_array_equal(got, np.stack([f(c) for c in cs]))


@pytest.mark.parametrize("name", ["sklearn.externals.array_api_compat.numpy",
                                  "scipy._lib.array_api_compat.numpy"])
def test_array_api_compat_namespaces_make_buffers(name):
    """``xp.zeros(n)`` of array-api-compat's NumPy namespace (as scikit-learn and SciPy call
    it), then filled with batched values: a buffer as ``np.zeros`` in the function's module;
    outside a vmap (and on another thread) the namespace's own function again."""
    import importlib

    try:
        xp = importlib.import_module(name)
    except ImportError:
        pytest.skip(f"{name} is not installed (scikit-learn / SciPy, test extras)")
    original = xp.zeros

    def f(x):
        out = xp.zeros(3, dtype=x.dtype, device="cpu")
        out[0] = x.sum()
        out[1:] = x[:2]
        return out

    xs = RNG.normal(size=(4, 5))
    got = bt.vmap(f, fallback="error")(xs)
    np.testing.assert_array_equal(got, np.stack([f(x) for x in xs]))
    assert xp.zeros is original


@pytest.mark.parametrize("name", ["sklearn.externals.array_api_compat",
                                  "scipy._lib.array_api_compat"])
def test_a_buffer_answers_array_api_compat_s_namespace_as_the_batched_values(name):
    """A buffer (``xp.asarray(1.0)`` of the namespace, plain until written) beside a batched
    value: array-api-compat's ``array_namespace`` sees one namespace, as for the loop's two
    NumPy arrays (scikit-learn's ``log_loss`` compares them with ``isclose``)."""
    import importlib

    try:
        compat = importlib.import_module(name)
    except ImportError:
        pytest.skip(f"{name} is not installed (scikit-learn / SciPy, test extras)")
    xp = importlib.import_module(name + ".numpy")

    def f(x):
        one = xp.asarray(1.0, dtype=x.dtype)
        ns = compat.array_namespace(x, one)
        return ns.where(x > one, x, one)

    xs = RNG.normal(size=(4, 5)) + 1.0
    got = bt.vmap(f, fallback="error")(xs)
    np.testing.assert_array_equal(got, np.stack([f(x) for x in xs]))


def test_sklearn_metrics_that_fill_an_array_api_buffer_are_vectorised():
    metrics = pytest.importorskip("sklearn.metrics", reason="scikit-learn is a test extra")
    y, p = RNG.normal(size=(4, 10)), RNG.normal(size=(4, 10))
    for fn in (metrics.r2_score, metrics.explained_variance_score):
        got = bt.vmap(fn, fallback="error")(y, p)
        np.testing.assert_allclose(got, [fn(a, b) for a, b in zip(y, p)], rtol=1e-12)


def test_a_reshaped_buffer_reads_with_a_batched_mask_and_is_never_promoted():
    """``np.broadcast_to`` / ``np.reshape`` of a buffer is a buffer too, so that a batched
    index reads it per example; being a view of the buffer's memory, a batched write into it
    is not promoted (the buffer would not see it): the function reruns, writing as the loop."""
    def reads(x):
        ranks = np.broadcast_to(np.arange(1.0, 4.0), (2, 3))
        return ranks[x > 0].sum()

    xs = RNG.normal(size=(5, 2, 3))
    got = bt.vmap(reads, fallback="error")(xs)
    np.testing.assert_array_equal(got, np.stack([reads(x) for x in xs]))

    def writes(x):
        w = np.zeros(3)
        v = np.reshape(w, (3,))
        v[0] = x[0]  # reaches w in the loop
        return w

    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        got = bt.vmap(writes)(xs[:, 0])
    np.testing.assert_array_equal(got, np.stack([writes(x) for x in xs[:, 0]]))


COMPAT = ["sklearn.externals.array_api_compat", "scipy._lib.array_api_compat"]


def _compat(name):
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        pytest.skip(f"{name} is not installed (scikit-learn / SciPy, test extras)")


@pytest.mark.parametrize("name", COMPAT)
def test_array_namespace_of_a_batched_value_is_the_one_of_its_examples(name):
    """array-api-compat tells a NumPy array by ``type(x)``: a batched value answers
    ``__array_namespace__`` with that copy's NumPy wrapper, as its examples get (NumPy itself
    where the call asks for it with ``use_compat=False``)."""
    compat = _compat(name)
    seen = []

    def f(x):
        seen.append((compat.array_namespace(x), compat.array_namespace(x, use_compat=False)))
        return x

    x = RNG.normal(size=(3, 4))
    bt.vmap(f, fallback="error")(x)
    f(x[0])
    assert seen[0] == seen[1] == (_compat(name + ".numpy"), np)


@pytest.mark.parametrize("name", COMPAT)
@pytest.mark.parametrize("bounds", [(None, 0.5), (-0.5, None), (-0.5, 0.5)])
def test_array_api_compat_clip_is_vectorised(name, bounds):
    """Its ``clip`` makes the result with the wrapper's ``empty`` and the bounds with its
    ``asarray``, then writes ``out[m] = b[m]`` with a batched ``m``: buffers both."""
    xp = _compat(name + ".numpy")

    def f(x):
        return xp.clip(x, *bounds)

    xs = RNG.normal(size=(5, 4))
    xs[1, 2] = np.nan
    vectorised(f, xs)
    vectorised(f, np.asfortranarray(xs.T), in_axes=1)


@pytest.mark.parametrize("name", COMPAT)
def test_array_api_compat_asarray_of_an_array_is_that_array(name):
    xp = _compat(name + ".numpy")

    def f(x, w):
        assert xp.asarray(w) is w  # no copy, as in the loop: not a buffer
        made = xp.asarray([1.0, 2.0, 3.0])  # new: a buffer, batched at its first batched write
        made[1] = x[0]
        return made * w

    xs, w = RNG.normal(size=(4, 3)), RNG.normal(size=3)
    vectorised(f, xs, w, in_axes=(0, None))


# ---- modules the function calls that bound NumPy's conversions at import --------------------------
def test_a_library_module_that_bound_asarray_is_learnt_and_stays_vectorised():
    """``scipy.signal.sawtooth`` converts with ``asarray`` bound at import in its own module,
    which is not the vmapped function's (a lambda here): the first pass meets the conversion,
    learns the module, and a new pass swaps its names too; the module's names are SciPy's
    again after the call."""
    waveforms = pytest.importorskip("scipy.signal._waveforms",
                                    reason="SciPy is an optional test dependency")
    f = lambda t, w: waveforms.sawtooth(t * 3.0, width=w)  # noqa: E731
    t, w = RNG.normal(size=(4, 16)), np.array([0.2, 0.5, 0.7, 1.0])
    got = vectorised(f, t, w)
    assert got.shape == (4, 16)
    assert waveforms.asarray is np.asarray and waveforms.zeros is np.zeros
    assert conversions.pristine()
    assert any(g is vars(waveforms) for g in buffers.learnt_modules(f))
    vectorised(lambda t: waveforms.sawtooth(t), t.T, in_axes=1)
    got = bt.vmap(bt.vmap(lambda t: waveforms.square(t)), fallback="error")(t.reshape(2, 2, 16))
    assert_same(got, np.stack([[waveforms.square(x) for x in r] for r in t.reshape(2, 2, 16)]))


def test_learning_runs_the_function_again_from_the_callers_values_and_draws():
    """The first pass wrote into its argument and drew numbers before it met the conversion:
    the new pass starts from the caller's values and draws the same numbers."""
    stats = pytest.importorskip("scipy.stats", reason="SciPy is an optional test dependency")

    def f(x):
        x[0] += 1.0  # a write into the argument, before the conversion
        noise = rng.normal(size=2)
        return stats.norm.pdf(x, loc=noise[0]), noise

    x = RNG.normal(size=(4, 3))
    first_x, second_x = x.copy(), x.copy()
    rng = bt.random.default_rng(5)
    first = bt.vmap(f, randomness="different", fallback="error")(first_x)
    assert any(g is vars(sys.modules["scipy.stats._distn_infrastructure"])
               for g in buffers.learnt_modules(f))
    rng = bt.random.default_rng(5)
    second = bt.vmap(f, randomness="different", fallback="error")(second_x)  # one pass
    assert_same(first, second)
    want_x = x.copy()
    want_x[:, 0] += 1.0
    np.testing.assert_array_equal(first_x, want_x)  # written once, not twice
    np.testing.assert_array_equal(second_x, want_x)


def test_a_learnt_module_keeps_numpy_itself(tmp_path, monkeypatch):
    """A learnt module's names for NumPy's functions are swapped, not its name for the
    ``numpy`` module: the stand-in is not ``numpy``, and ``xp is np`` there would change its
    answer. An array made by ``zeros`` bound by name (``scipy.signal``'s waveforms) is a
    buffer; one made with ``np.zeros`` becomes one through its call site
    (``buffers.MakerSites``, as ``scipy.linalg.companion``'s), ``np`` untouched."""
    (tmp_path / "asks_for_numpy.py").write_text(
        "import numpy as np\n"
        "from numpy import asarray, zeros\n"
        "def f(x):\n"
        "    y = asarray(x)\n"
        "    out = zeros(2)\n"
        "    out[0] = y.sum()\n"
        "    out[1] = 1.0 if y.__array_namespace__() is np else -1.0\n"
        "    return out\n"
        "def g(x):\n"
        "    c = np.zeros(3)\n"
        "    c[0] = x.sum()\n"
        "    return c\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import asks_for_numpy

    f = lambda x: asks_for_numpy.f(x) * 1.0  # noqa: E731
    got = vectorised(f, X)
    assert (got[:, 1] == 1.0).all()
    assert any(m is vars(asks_for_numpy) for m in buffers.learnt_modules(f))
    g = lambda x: asks_for_numpy.g(x) + 0.0  # noqa: E731
    vectorised(g, X)
    assert any(type(m) is buffers.MakerSites and m.code is asks_for_numpy.g.__code__
               for m in buffers.learnt_modules(g))
    assert asks_for_numpy.np is np and asks_for_numpy.zeros is np.zeros
    assert conversions.pristine()


def test_a_name_on_the_line_that_did_not_convert_costs_one_pass_and_reruns(tmp_path,
                                                                           monkeypatch):
    """The line names ``asarray`` but converts with ``float()``: the new pass fails alike,
    and the function reruns per example, as before."""
    (tmp_path / "bound_elsewhere.py").write_text(
        "from numpy import asarray\n"
        "def f(x):\n"
        "    return round(float(x.sum()), 6) + 1.0 if asarray is not None else 0.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import bound_elsewhere

    g = lambda x: bound_elsewhere.f(x) * 2.0  # noqa: E731
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        got = bt.vmap(g)(X)
    assert_same(got, loop_vmap(g)(X))
    # learnt once (the next call of g takes the new pass at once, and reruns alike)
    assert any(m is vars(bound_elsewhere) for m in buffers.learnt_modules(g))
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        assert_same(bt.vmap(g)(X), loop_vmap(g)(X))
    assert bound_elsewhere.asarray is np.asarray


def test_learnt_modules_on_threads():
    waveforms = pytest.importorskip("scipy.signal._waveforms",
                                    reason="SciPy is an optional test dependency")
    from loop_reference import on_threads

    def run(i):
        t = RNG.normal(size=(3, 8)) + i
        for _ in range(5):
            got = bt.vmap(lambda x: waveforms.sawtooth(x, 0.4), fallback="error")(t)
            assert_same(got, np.stack([waveforms.sawtooth(x, 0.4) for x in t]))

    on_threads(run)
    assert waveforms.asarray is np.asarray and conversions.pristine()


# ---- np.zeros in a module the function calls: its call sites learnt (buffers.MakerSites) ------
LIBRARY = '''
import numpy as np

TEMPLATE = np.zeros(3)  # made at import: one array for every call
_CACHE = {}


def fill(x):
    out = np.zeros(3)
    out[0] = x.sum()
    out[1:] = x[:2]
    return out


def rows(x):
    out = np.empty((3,) + x.shape)
    out[0] = x
    out[1] = x[::-1]
    out[2] = 1.0
    out[1] += x              # out[1] read, added to in place, stored
    out[2, 1:] -= x[:-1]
    out[[0, 0]] *= 2.0       # a fancy read: a copy, stored back
    return out


def _fill_into(out, x):
    out[0] = x.sum()


def made_by_the_caller(x):
    out = np.zeros(3)
    _fill_into(out, x)     # filled by the function it calls
    return out


def into_template(x):
    out = TEMPLATE
    out[0] = x.sum()
    return out.copy()


def cached(x):
    out = _CACHE.get(x.shape)
    if out is None:
        out = np.zeros(3)
        _CACHE[x.shape] = out  # kept beyond the call
    out[0] += x.sum()          # each example adds to what the ones before it left
    return out.copy()


def handed_to_a_global(x):
    global LAST
    out = np.zeros(3)
    LAST = out
    out[0] = x.sum()
    return out.copy()


def filled_copies(x, cond):
    default = np.full(x.shape, fill_value=np.nan)   # SciPy's rv_generic.stats
    output = []
    first = default.copy()
    np.place(first, cond, x * 2.0)
    output.append(first)
    second = default.copy()
    second[cond] = x[cond] + 1.0
    output.append(second)
    return output


def copy_of_a_cached(x):
    kept = _CACHE.setdefault("kept", np.zeros(3))  # kept beyond the call: shared
    out = kept.copy()
    out[0] = x.sum()
    return out
'''
_LIBRARIES = iter(range(10 ** 6))


@pytest.fixture
def library(tmp_path, monkeypatch):
    """A fresh module that makes arrays with ``np.zeros`` and fills them (learnt state is kept
    per code object: each test gets code of its own)."""
    import importlib

    name = f"fills_with_np_zeros_{next(_LIBRARIES)}"
    (tmp_path / f"{name}.py").write_text(LIBRARY)
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module(name)


def _sites(f) -> list:
    return [m for m in buffers.learnt_modules(f) if type(m) is buffers.MakerSites]


def test_np_zeros_in_a_module_the_function_calls_becomes_a_buffer(library):
    """``out = np.zeros(3)`` then ``out[0] = x.sum()`` in a library function (SciPy's
    ``companion``, ``ShortTimeFFT``, scikit-image's ``corner``): the write fails in the first
    pass, that call site is learnt, and the new pass makes a buffer there; ``np`` in that
    module stays ``numpy``."""
    f = lambda x: library.fill(x) * 1.0  # noqa: E731
    vectorised(f, X)
    assert [m.code for m in _sites(f)] == [library.fill.__code__]
    assert library.np is np and conversions.pristine() and module_is_pristine()
    vectorised(f, X)  # learnt: one pass
    for layout in LAYOUTS:  # in_axes=-1, F-ordered, negative strides, read-only
        xs, in_axes = laid_out(X, layout)
        vectorised(f, xs, in_axes=in_axes)
    vectorised(lambda x: library.rows(x), X)
    vectorised(lambda x, y: library.fill(x) + library.rows(y)[0, :3], X, X[:, ::-1])
    g = lambda x: library.made_by_the_caller(x)  # noqa: E731
    vectorised(g, X)
    assert [m.code for m in _sites(g)] == [library.made_by_the_caller.__code__]


@pytest.mark.parametrize("n", [0, 1, 2])
def test_maker_sites_with_small_batches(library, n):
    f = lambda x: library.fill(x)  # noqa: E731
    xs = RNG.normal(size=(n, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(f, fallback="error")(xs)
    if n:
        assert_same(got, loop_vmap(f)(xs))
    else:
        assert got.shape == (0, 3) and got.dtype == np.float64


def test_maker_sites_in_nested_vmaps(library):
    f = lambda x: library.rows(x)  # noqa: E731
    xs = RNG.normal(size=(3, 5, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(bt.vmap(f), fallback="error")(xs)
    assert_same(got, loop_vmap(loop_vmap(f))(xs))
    g = lambda x: bt.vmap(lambda y: library.fill(x * y))(np.ones((2, 4)))  # noqa: E731
    vectorised(g, X)


def test_arrays_made_at_import_or_kept_beyond_the_call_are_never_buffers(library):
    """An array made at import, or one the code keeps in a cache, a global or another
    variable, is shared by the calls (the loop's examples write into the same one): its call
    site is not learnt, and the write still reruns per example (the loop's writes, in order)
    or, with ``fallback="error"``, raises."""

    def reset():
        library.TEMPLATE[:] = 0.0
        library._CACHE.clear()

    for f in (lambda x: library.into_template(x), lambda x: library.cached(x),
              lambda x: library.handed_to_a_global(x)):
        reset()
        want = loop_vmap(f)(X)
        after = (library.TEMPLATE.copy(), {k: v.copy() for k, v in library._CACHE.items()})
        reset()
        with pytest.raises(TypeError, match="cannot write a batched value"):
            bt.vmap(f, fallback="error")(X)
        reset()
        with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
            got = bt.vmap(f)(X)
        assert_same(got, want)
        np.testing.assert_array_equal(library.TEMPLATE, after[0])
        assert library._CACHE.keys() == after[1].keys()
        for k, v in library._CACHE.items():
            assert type(v) is np.ndarray
            np.testing.assert_array_equal(v, after[1][k])
        assert not _sites(f)
    assert type(library.TEMPLATE) is np.ndarray and conversions.pristine()


KEPT: list = []


def _keep_a_buffer(x):
    KEPT.append(np.zeros(2))  # a buffer of this pass, kept beyond it
    return x * 1.0


def _write_into_the_kept_one(x):
    out = KEPT[-1]
    out[0] = x.sum()
    return out.copy()


def test_a_buffer_kept_from_an_earlier_pass_is_shared_state():
    """A buffer that outlives its pass is one array for every later call: a batched write
    into it in another vmap is refused (the rerun writes into it as the loop does), never a
    promotion that would change it behind the caller's back."""
    with bt.config(lean_passes=False):  # (a lean pass makes plain arrays: no buffer)
        bt.vmap(_keep_a_buffer)(X)
    with pytest.raises(TypeError, match="made by an earlier vmap pass"):
        bt.vmap(_write_into_the_kept_one, fallback="error")(X)
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        got = bt.vmap(_write_into_the_kept_one)(X)
    assert_same(got, np.stack([[x.sum(), 0.0] for x in X]))
    assert type(KEPT[-1]) is not bt.BatchedTensor
    np.testing.assert_array_equal(np.asarray(KEPT[-1]), [X[-1].sum(), 0.0])  # the loop's


def test_site_makers_leave_numpy_as_it_was(library):
    vectorised(lambda x: library.fill(x), X)
    assert not bt.vmap(lambda x: np.zeros(3) is np.zeros(3))(X[:1]).any()
    assert np.zeros is buffers._NUMPY_MAKERS["zeros"] and conversions.pristine()
    x = np.zeros(3)  # outside a vmap, NumPy's own
    assert type(x) is np.ndarray


def test_maker_sites_on_threads(library):
    from loop_reference import on_threads

    def run(i):
        xs = RNG.normal(size=(3, 4)) + i
        for _ in range(5):
            got = bt.vmap(lambda x: library.fill(x), fallback="error")(xs)
            assert_same(got, np.stack([library.fill(x) for x in xs]))

    on_threads(run)
    assert conversions.pristine()


def test_scipy_functions_that_fill_np_zeros_are_vectorised():
    signal = pytest.importorskip("scipy.signal", reason="SciPy is an optional test dependency")
    linalg = pytest.importorskip("scipy.linalg")
    a = RNG.normal(size=(4, 3)) + np.array([3.0, 0.0, 0.0])
    vectorised(lambda a: linalg.companion(a), a)
    vectorised(lambda b, a: signal.lfilter_zi(b, a), RNG.normal(size=(4, 3)), a)
    vectorised(lambda x: signal.welch(x, nperseg=8), RNG.normal(size=(3, 24)))


# ---- out[key] += v into a buffer ---------------------------------------------------------------
def _augmented(x):
    out = np.zeros((3, 4))
    out[1] += x              # a row: a view, written in place
    out[0, 1:3] *= x[:2]
    out[[2, 2]] -= x         # a fancy read is a copy: stored back once
    out[1] /= 2.0            # a plain value: the plain operator
    out[..., 0] **= 2
    return out


def test_augmented_write_into_a_buffer_is_vectorised():
    vectorised(_augmented, X)
    for layout in LAYOUTS:
        xs, in_axes = laid_out(X, layout)
        vectorised(_augmented, xs, in_axes=in_axes)
    assert_same(bt.vmap(bt.vmap(_augmented), fallback="error")(X.reshape(5, 1, 4)),
                loop_vmap(loop_vmap(_augmented))(X.reshape(5, 1, 4)))
    got = bt.vmap(_augmented, fallback="error")(X[:0])
    assert got.shape == (0, 3, 4)


def _augmented_with_a_view_alive(x):
    out = np.zeros((3, 4))
    row = out[1]             # a view that would not see the batched write
    out[1] += x
    return out, row


def test_augmented_write_with_a_view_alive_reruns():
    rerun(_augmented_with_a_view_alive, X)


# ---- ufunc.at with an index per example ---------------------------------------------------------
def _at(x, idx):
    out = np.zeros((5, 2))
    np.add.at(out, idx, x[:, None])
    np.multiply.at(out, (idx, idx % 2), 2.0)
    np.negative.at(out, idx[:2])
    return out


def test_ufunc_at_with_an_index_per_example_is_vectorised():
    idx = RNG.integers(-5, 5, size=(5, 4))
    idx[0, 0] = 4  # (the out-of-bounds case below: index 7 first, whatever the draws)
    vectorised(_at, X, idx)
    vectorised(_at, X, idx[0], in_axes=(0, None))
    vectorised(_at, X.T, idx.T, in_axes=-1)
    xs = X.copy()
    xs.flags.writeable = False
    vectorised(_at, xs, idx)
    assert_same(bt.vmap(bt.vmap(_at), fallback="error")(X.reshape(5, 1, 4), idx.reshape(5, 1, 4)),
                loop_vmap(loop_vmap(_at))(X.reshape(5, 1, 4), idx.reshape(5, 1, 4)))
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 5"):
        bt.vmap(_at, fallback="error")(X, idx + 3)


# ---- decorated functions: the function's own module is the decorated one's ----------------------
def test_a_decorated_function_makes_buffers_in_its_own_module_and_the_decorators(tmp_path,
                                                                                monkeypatch):
    """``module_of`` goes through ``functools.wraps`` to the decorated function (scikit-learn's
    ``validate_params``, SciPy's ``_axis_nan_policy``): its module's arrays are buffers, and
    the decorator's module stays swapped as well (``buffers.WholeModule``)."""
    (tmp_path / "deco_for_buffers.py").write_text(
        "import functools\n"
        "import numpy as np\n"
        "def stacked(func):\n"
        "    @functools.wraps(func)\n"
        "    def wrapper(x, *args):\n"
        "        out = np.empty((2,) + x.shape)  # the decorator's own buffer\n"
        "        out[0] = x\n"
        "        out[1] = func(x, *args)\n"
        "        return out\n"
        "    return wrapper\n")
    (tmp_path / "decorated_for_buffers.py").write_text(
        "import numpy as np\n"
        "from deco_for_buffers import stacked\n"
        "@stacked\n"
        "def counts(x, idx):\n"
        "    out = np.zeros(x.shape)\n"
        "    np.add.at(out, idx, x)\n"
        "    return out\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import deco_for_buffers
    import decorated_for_buffers as mod

    assert buffers.module_of(mod.counts) is vars(mod)
    vectorised(mod.counts, X, RNG.integers(0, 4, size=(5, 4)))
    assert any(type(m) is buffers.WholeModule and m.g is vars(deco_for_buffers)
               for m in buffers.learnt_modules(mod.counts))
    assert mod.np is np and deco_for_buffers.np is np and conversions.pristine()


def test_a_copy_of_an_array_made_inside_is_a_buffer_too(library):
    """``default = np.full(...)`` then ``out = default.copy()`` filled with ``np.place`` or a
    masked write (SciPy's ``rv_generic.stats``): the copy is a new array per example, so the
    site of ``default`` is learnt and its copies are buffers; ``default`` stays unwritten."""
    f = lambda x, c: library.filled_copies(x, c)  # noqa: E731
    xs = RNG.normal(size=(5, 4))
    cs = xs > 0
    vectorised(f, xs, cs)
    assert [m.code for m in _sites(f)] == [library.filled_copies.__code__]
    vectorised(f, xs, cs[0], in_axes=(0, None))
    vectorised(lambda x, c: library.filled_copies(x, c)[1], xs.T, cs.T, in_axes=-1)
    for n in (0, 1):
        with warnings.catch_warnings():
            warnings.simplefilter("error", bt.PerformanceWarning)
            got = bt.vmap(f, fallback="error")(xs[:n], cs[:n])
        if n:
            assert_same(got, loop_vmap(f)(xs[:n], cs[:n]))
        else:
            assert [g.shape for g in got] == [(0, 4), (0, 4)]
    # nested: two of four selected in every example, at different places
    grid = RNG.normal(size=(3, 2, 4))
    picks = np.argsort(RNG.random(size=(3, 2, 4)), axis=-1) < 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(bt.vmap(f), fallback="error")(grid, picks)
    assert_same(got, loop_vmap(loop_vmap(f))(grid, picks))
    g = lambda x: library.copy_of_a_cached(x)  # noqa: E731
    library._CACHE.clear()
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        got = bt.vmap(g)(X)
    library._CACHE.clear()
    assert_same(got, loop_vmap(g)(X))
    assert not _sites(g) and type(library._CACHE["kept"]) is np.ndarray
    assert conversions.pristine() and module_is_pristine()


def test_a_level_opened_first_with_the_replacements_off_leaves_them_on_for_other_threads():
    """The swaps are installed by whichever level opens while they are out and its thread wants
    them, not only by the first level: a thread that holds a level under
    ``bt.config(intercept_numpy=False)`` must not switch them off for another thread's vmap."""
    opened, release = threading.Event(), threading.Event()

    def hold():
        with bt.config(intercept_numpy=False), bt.vmap_level():
            opened.set()
            release.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    try:
        assert opened.wait(10)
        xs = RNG.normal(size=(3, 4))
        got = bt.vmap(lambda x: np.asarray(x) * 2, fallback="error")(xs)
        np.testing.assert_array_equal(got, xs * 2)
    finally:
        release.set()
        t.join()
    assert conversions.pristine()
