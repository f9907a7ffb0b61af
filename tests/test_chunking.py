"""Chunking: the memory-aware default (``chunk_size="auto"``, ``max_memory``), the joined
results, ``executor=`` and ``progress=``, each against the per-example loop."""

from __future__ import annotations

import io
import multiprocessing
import sys
import tracemalloc
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

import batchtensor as bt
from batchtensor import chunking


def loop(f, *args):
    return np.stack([f(*a) for a in zip(*args)])


def outer_sum(x):
    """Intermediates of len(x)**2 per example from an input of len(x): the memory test."""
    return np.tanh(np.outer(x, x)).sum(0)


def add_one_inplace(x):
    x += 1.0
    return x.sum()


def noisy(x):
    return x + np.random.normal(size=x.shape)


def fails_on_negative(x):
    if (x < 0).any():
        raise KeyError("negative example")
    return x * 2


@pytest.fixture(scope="module")
def threads():
    with ThreadPoolExecutor(2) as pool:
        yield pool


@pytest.fixture(scope="module")
def processes():
    # spawn: forking a process that runs threads (pytest's, the pool's) may deadlock
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield pool


def traced_peak(call):
    tracemalloc.start()
    try:
        out = call()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_parse_memory():
    assert chunking.parse_memory("2GiB") == 2 << 30
    assert chunking.parse_memory(" 1.5 kb ") == 1500
    assert chunking.parse_memory(4096) == 4096
    for bad in ("lots", "2 parsecs", 0, -5, True):
        with pytest.raises((ValueError, TypeError), match="max_memory"):
            chunking.parse_memory(bad)
    with pytest.raises(ValueError, match="max_memory"):
        bt.vmap(np.sum, max_memory="two gigabytes")


def test_default_budget_is_a_fraction_of_the_available_memory(monkeypatch):
    monkeypatch.setattr(chunking, "available_memory", lambda: 8 << 30)
    assert chunking.default_budget() == int((8 << 30) * chunking.BUDGET_FRACTION)
    monkeypatch.setattr(chunking, "available_memory", lambda: None)
    assert chunking.default_budget() > 0


def test_the_peak_stays_within_max_memory_where_one_pass_goes_far_over():
    """tracemalloc measures the peak (the user's tracing: the meter then reads it without
    resetting it). One pass holds every example's n x n intermediates at once."""
    xs = np.random.default_rng(0).normal(size=(600, 96))
    budget = 4 << 20
    whole, whole_peak = traced_peak(lambda: bt.vmap(outer_sum, chunk_size=None)(xs))
    chunked, peak = traced_peak(lambda: bt.vmap(outer_sum, max_memory=budget)(xs))
    np.testing.assert_allclose(chunked, loop(outer_sum, xs))
    np.testing.assert_array_equal(chunked, whole)
    assert whole_peak > 8 * budget
    # the chunks' share of one pass, and a constant (the measured first chunks, the results)
    assert peak <= budget * 1.5, (peak, budget, whole_peak)


def test_small_inputs_run_in_one_pass_without_measuring(monkeypatch):
    calls = []
    monkeypatch.setattr(chunking.PeakMeter, "__enter__",
                        lambda self: calls.append(1) or pytest.fail("measured"))
    xs = np.ones((50, 8))
    np.testing.assert_array_equal(bt.vmap(outer_sum)(xs), loop(outer_sum, xs))
    assert not calls


def test_a_later_call_sizes_its_chunks_from_the_first_calls_measurement(monkeypatch):
    """The memory an example takes is measured once per call signature: a later call with
    other values of the same shapes sizes its chunks from it, and stays within the budget."""
    budget = 4 << 20
    vf = bt.vmap(outer_sum, max_memory=budget)
    rng = np.random.default_rng(1)
    xs = rng.normal(size=(600, 96))
    np.testing.assert_allclose(vf(xs), loop(outer_sum, xs))
    monkeypatch.setattr(chunking.PeakMeter, "__enter__", lambda self: pytest.fail("measured"))
    ys = rng.normal(size=(600, 96))
    got, peak = traced_peak(lambda: vf(ys))
    np.testing.assert_allclose(got, loop(outer_sum, ys))
    assert peak <= budget * 1.5, (peak, budget)


def tanh_rows(x):
    return np.tanh(x).sum(-1)


def row_sums(x):
    return x.sum(-1)


@pytest.mark.parametrize("f, later", [(tanh_rows, [16] * 4), (row_sums, [64])])
def test_cache_sized_chunks_only_where_the_intermediates_fill_them(f, later):
    """8 MiB of 128 KiB examples: the first call measures a chunk of one example, then runs
    chunks sized to the cache where an example's intermediates take its inputs' bytes (tanh's
    temporary), and one chunk for the rest where they take less (a sum allocates its result
    only). Later calls reuse the measurement, unmeasured. Every call gives the loop's
    values."""
    passes = []

    def counted(x):
        passes.append(x.level.size)
        return f(x)

    vf = bt.vmap(counted)
    rng = np.random.default_rng(2)
    for _ in range(2):
        xs = rng.normal(size=(64, 16384))
        np.testing.assert_array_equal(vf(xs), loop(f, xs))
    first = [1, 16, 16, 16, 15] if f is tanh_rows else [1, 63]
    assert passes == first + later


def test_measurements_of_many_signatures_keep_the_latest_64():
    vf = bt.vmap(tanh_rows, max_memory="1MiB")  # (inputs from 16 KiB on are measured)
    rng = np.random.default_rng(3)
    for n in range(70):
        xs = rng.normal(size=(8, 300 + n))
        np.testing.assert_allclose(vf(xs), loop(tanh_rows, xs))
    assert len(vf._chunk_memos) == 64
    shapes = [key[0][0][3] for key in vf._chunk_memos]  # (the examples' shapes)
    assert shapes == [(300 + n,) for n in range(6, 70)]


def test_a_call_after_the_measured_one_draws_what_one_pass_draws():
    xs = np.ones((64, 16384))

    def draws(**kw):
        g = bt.random.default_rng(7)
        vf = bt.vmap(lambda x: np.tanh(x)[:4] * g.normal(size=4) + g.integers(0, 9),  # noqa: E731
                     randomness="different", **kw)
        return [vf(xs) for _ in range(3)]

    for got, want in zip(draws(), draws(chunk_size=None)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("size", [0, 1, 2, 3, 130])
def test_auto_chunks_at_any_batch_size(size):
    xs = np.random.default_rng(size).normal(size=(size, 16))
    got = bt.vmap(outer_sum, max_memory="64KiB")(xs)
    want = loop(outer_sum, xs) if size else np.zeros((0, 16))
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("kw", [dict(chunk_size=7), dict(max_memory="32KiB"),
                                dict(chunk_size=None)])
def test_random_draws_do_not_depend_on_the_chunks(kw):
    g = bt.random.default_rng(5)
    f = lambda x: x * g.normal(size=x.shape) + g.integers(0, 9)  # noqa: E731
    xs = np.ones((40, 64))
    one_pass = bt.vmap(f, chunk_size=None, randomness="different")(xs)
    g2 = bt.random.default_rng(5)
    f2 = lambda x: x * g2.normal(size=x.shape) + g2.integers(0, 9)  # noqa: E731
    np.testing.assert_array_equal(bt.vmap(f2, randomness="different", **kw)(xs), one_pass)


@pytest.mark.parametrize("out_axes", [0, 1, -1, (0, None), {"a": 1, "b": 0}])
def test_joined_results_in_every_out_axes_and_structure(out_axes):
    xs = np.random.default_rng(1).normal(size=(10, 3, 4))
    w = np.arange(4.0)

    if isinstance(out_axes, dict):
        def f(x):
            return {"a": x * w, "b": x.sum(0)}
    elif isinstance(out_axes, tuple):
        def f(x):
            return x.T @ x, w
    else:
        def f(x):
            return np.sin(x) @ w
    got = bt.vmap(f, out_axes=out_axes, chunk_size=3)(xs)
    want = bt.vmap(f, out_axes=out_axes, chunk_size=None)(xs)
    got_leaves, want_leaves = (bt.pytree.flatten(t)[0] for t in (got, want))
    for g_, w_ in zip(got_leaves, want_leaves):
        assert g_.shape == w_.shape and g_.dtype == w_.dtype
        np.testing.assert_allclose(g_, w_)


def test_chunks_whose_dtype_differs_join_as_the_loop_stacks():
    """The first chunk's results allocate float32 for the batch; a later float64 chunk
    must promote the whole result, as np.stack promotes, not be cast down into it."""
    xs = np.concatenate([-np.ones((4, 3)), np.full((4, 3), 1 / 3)])

    def f(x):
        return x.astype(np.float32) if x[0] < 0 else x

    got = bt.vmap(f, chunk_size=4, fallback="silent")(xs)
    want = loop(f, xs)
    assert got.dtype == want.dtype == np.float64
    np.testing.assert_array_equal(got, want)


def test_masked_and_0d_results_join():
    xs = np.arange(12.0).reshape(6, 2)
    got = bt.vmap(lambda x: np.ma.masked_greater(x, 6).sum(), chunk_size=4)(xs)
    want = loop(lambda x: np.ma.masked_greater(x, 6).sum(), xs)
    np.testing.assert_array_equal(np.ma.getdata(got), np.ma.getdata(want))
    np.testing.assert_array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(want))


# ---- executors -----------------------------------------------------------------------------
@pytest.mark.parametrize("pool", ["threads", "processes"])
def test_executor_gives_the_loops_result_in_order(pool, request):
    executor = request.getfixturevalue(pool)
    xs = np.random.default_rng(2).normal(size=(37, 24))
    got = bt.vmap(outer_sum, executor=executor)(xs)
    np.testing.assert_allclose(got, loop(outer_sum, xs))


@pytest.mark.parametrize("pool", ["threads", "processes"])
def test_executor_with_bt_random_equals_the_in_process_run(pool, request):
    xs = np.ones((21, 5))
    here = bt.vmap(_DrawsFrom(bt.random.default_rng(11)), randomness="different",
                   chunk_size=None)(xs)
    got = bt.vmap(_DrawsFrom(bt.random.default_rng(11)), randomness="different",
                  executor=request.getfixturevalue(pool))(xs)
    np.testing.assert_array_equal(got, here)


class _DrawsFrom:
    def __init__(self, g):
        self.g = g

    def __call__(self, x):
        return x + self.g.normal(size=5)


@pytest.mark.parametrize("pool", ["threads", "processes"])
def test_executor_keeps_writes_into_the_arguments(pool, request):
    xs = np.arange(30.0).reshape(10, 3)
    ys = xs.copy()
    got = bt.vmap(add_one_inplace, executor=request.getfixturevalue(pool))(xs)
    want = loop(add_one_inplace, ys)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(xs, ys)


def test_executor_keeps_numpy_streams_in_the_loops_order(threads):
    xs = np.zeros((16, 3))
    np.random.seed(3)
    want = loop(noisy, xs)
    np.random.seed(3)
    got = bt.vmap(noisy, randomness="different", executor=threads)(xs)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("pool", ["threads", "processes"])
def test_an_error_in_a_chunk_names_its_examples_and_keeps_its_type(pool, request):
    xs = np.ones((12, 2))
    xs[9] = -1
    with pytest.raises(KeyError, match="negative example") as info:
        bt.vmap(fails_on_negative, executor=request.getfixturevalue(pool), chunk_size=3)(xs)
    assert any("examples 9 to 11 of 12" in note for note in info.value.__notes__)


def test_executor_inside_another_vmap_runs_here(threads):
    xs = np.random.default_rng(4).normal(size=(3, 8, 5))
    inner = bt.vmap(outer_sum, executor=threads)
    np.testing.assert_allclose(bt.vmap(inner)(xs), np.stack([loop(outer_sum, x) for x in xs]))


def test_executor_keeps_the_callers_fallback_setting(threads):
    """The first chunk (here) agrees at an ``if``; a later one, on a worker, does not: with
    fallback="error" set on this thread only, the worker raises too. (An ``if``, not a
    ``float()``: a float() that an earlier test of this module taught vmap to batch would
    not raise at all.)"""
    xs = np.arange(16.0).reshape(8, 2)
    xs[:2] = 1.0
    f = lambda x: x * 2.0 if x.sum() > 10 else x  # noqa: E731
    with bt.config(fallback="error"):
        with pytest.raises(bt.BatchingError, match="examples 2 to 3"):
            bt.vmap(f, executor=threads, chunk_size=2)(xs)
    np.testing.assert_array_equal(
        bt.vmap(f, executor=threads, chunk_size=2, fallback="silent")(xs), loop(f, xs))


def test_executor_must_submit():
    with pytest.raises(TypeError, match="Executor"):
        bt.vmap(np.sum, executor=object())


# ---- progress ------------------------------------------------------------------------------
@pytest.fixture
def bars(monkeypatch):
    """The progress bars vmap makes (tqdm's, which clear themselves when done)."""
    pytest.importorskip("tqdm", reason="the progress bar is tqdm's (an optional extra)")
    made = []
    make = chunking._tqdm

    def recording(total, name, required):
        bar = make(total, name, required)
        made.append(bar)
        return bar

    monkeypatch.setattr(chunking, "_tqdm", recording)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    return made


def test_progress_bar_counts_every_example(bars):
    xs = np.ones((40, 3))
    np.testing.assert_array_equal(bt.vmap(np.cumsum, progress=True)(xs), loop(np.cumsum, xs))
    assert [(b.n, b.total) for b in bars] == [(40, 40)]
    assert "vmap(cumsum)" in bars[0].desc


def test_progress_appears_on_its_own_only_for_long_calls_in_a_terminal(bars, monkeypatch):
    xs = np.ones((40, 3))
    bt.vmap(np.cumsum, chunk_size=4)(xs)
    assert bars == []  # quick, and not a terminal
    monkeypatch.setattr(chunking.ProgressBar, "AFTER_SECONDS", 0.0)
    monkeypatch.setattr(chunking, "_interactive", lambda: True)
    bt.vmap(np.cumsum, chunk_size=4)(xs)
    assert [(b.n, b.total) for b in bars] == [(40, 40)]
    bt.vmap(np.cumsum, chunk_size=4, progress=False)(xs)
    bt.vmap(np.cumsum)(xs)  # one pass: nothing to follow
    assert len(bars) == 1


def test_progress_true_without_tqdm_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    with pytest.raises(ImportError, match="pip install tqdm"):
        bt.vmap(np.cumsum, progress=True)(np.ones((4, 2)))
