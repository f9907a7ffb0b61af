"""Dask arrays in, lazy dask arrays out (``batchtensor.dask_arrays``): the per-example loop's
results, computed only at ``.compute()``, on the synchronous scheduler and on a
``distributed.LocalCluster`` of two workers (threads, and processes)."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="the dask tests need the dask extra (dask[array])")
dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed",
                                  reason="the dask tests need the dask extra (distributed)")

import batchtensor as bt  # noqa: E402
from batchtensor.api import VmapFunction  # noqa: E402
from batchtensor.dask_arrays import is_dask_array, vmap_dask  # noqa: E402
from loop_reference import assert_same, loop_vmap  # noqa: E402

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"


@pytest.fixture(autouse=True, scope="module")
def dask_hook():
    """``VmapFunction.__call__`` sends dask arrays to ``vmap_dask``; where it does not yet, the
    same hook is installed for these tests."""
    if is_dask_array(bt.vmap(lambda v: v)(da.ones(2, chunks=1))):
        yield
        return
    original = VmapFunction.__call__

    def call(self, *args, **kwargs):
        out = vmap_dask(self, args, kwargs)
        return original(self, *args, **kwargs) if out is NotImplemented else out

    VmapFunction.__call__ = call
    try:
        yield
    finally:
        VmapFunction.__call__ = original


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def _data(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def model(x, w, b):
    """One example: a small layer, a nested vmap over its rows, a pytree out."""
    h = np.tanh(x @ w + b)
    rows = bt.vmap(lambda r: (r ** 2).sum())(h)
    return {"h": h, "stats": (rows, h.mean())}


def test_matches_the_loop_and_stays_lazy():
    x, w, b = _data(10, 4, 3), _data(3, 5, seed=1), _data(5, seed=2)
    dx = da.from_array(x, chunks=(3, 2, 3))
    out = bt.vmap(model, in_axes=(0, None, None))(dx, w, b)
    assert is_dask_array(out["h"]) and is_dask_array(out["stats"][0])
    assert out["h"].chunks == ((3, 3, 3, 1), (4,), (5,))  # one block per batch chunk
    assert out["stats"][1].shape == (10,) and out["h"].dtype == np.float64
    got = dask.compute(out)[0]
    assert_same(got, loop_vmap(model, in_axes=(0, None, None))(x, w, b))


def test_nothing_runs_before_compute():
    calls, upstream = [], []

    def source(block):
        upstream.append(len(block))
        return block

    def f(x):
        calls.append(1)
        return x * 2

    dx = da.from_array(np.arange(12.0).reshape(6, 2), chunks=(2, 2)).map_blocks(source)
    upstream.clear()  # (map_blocks tried source on tiny arrays for its metadata)
    y = bt.vmap(f)(dx)
    assert upstream == [] and calls == [1]  # one pass over no example: the output's metadata
    assert_same(y.compute(), np.arange(12.0).reshape(6, 2) * 2)
    assert len(upstream) == 3 and len(calls) == 4  # one pass per block


def test_the_outputs_together_run_the_blocks_once():
    calls = []

    def f(x):
        calls.append(1)
        return x.sum(), x * 2

    a, b = bt.vmap(f)(da.ones((6, 2), chunks=(2, 2)))
    dask.compute(a, b)
    assert len(calls) == 1 + 3


def test_negative_in_axes_out_axes_and_chunks_across_the_other_axes():
    x = _data(3, 4, 9)
    dx = da.from_array(x, chunks=(2, 3, 4))  # rechunked: the batch axis (last) keeps its chunks
    f = lambda v: (v.sum(0), v[1:].T)  # noqa: E731
    out = bt.vmap(f, in_axes=-1, out_axes=(0, -1))(dx)
    assert out[0].chunks[0] == (4, 4, 1)
    assert_same(dask.compute(out)[0], loop_vmap(f, in_axes=-1, out_axes=(0, -1))(x))


def test_numpy_and_dask_mapped_side_by_side_and_keyword_arguments():
    x, y, z = _data(7, 3), _data(3, 7, seed=1), _data(3, seed=3)
    dx, dz = da.from_array(x, chunks=(2, 3)), da.from_array(z, chunks=2)
    f = lambda a, b, c, scale=1.0: a * b * scale + c  # noqa: E731
    out = bt.vmap(f, in_axes=(0, 1, None))(dx, y, dz, scale=dz[0])
    assert out.chunks[0] == (2, 2, 2, 1)
    want = loop_vmap(lambda a, b, c: f(a, b, c, z[0]), in_axes=(0, 1, None))(x, y, z)
    assert_same(out.compute(), want)


def test_chunk_size_gives_the_blocks_and_pytree_in_axes():
    x, y = _data(9, 2), _data(9, seed=1)
    f = lambda d: d["x"].sum() * d["y"]  # noqa: E731
    out = bt.vmap(f, in_axes=({"x": 0, "y": 0},), chunk_size=4)(
        {"x": da.from_array(x, chunks=(3, 2)), "y": y})
    assert out.chunks == ((4, 4, 1),)
    assert_same(out.compute(), loop_vmap(f)({"x": x, "y": y}))


def test_an_unbatched_output_with_out_axes_none():
    f = lambda v: (v * 2, np.arange(3.0))  # noqa: E731
    a, b = bt.vmap(f, out_axes=(0, None))(da.ones((5, 2), chunks=2))
    assert b.shape == (3,)
    assert_same(dask.compute(a, b), (np.full((5, 2), 2.0), np.arange(3.0)))


def _noisy(rng):
    return lambda v: {"noise": v + rng.normal(size=v.shape), "u": rng.random()}


@pytest.mark.parametrize("chunks", [1, 4, 10])
def test_bt_random_draws_what_the_in_process_call_draws(chunks):
    x = _data(10, 3)
    want = bt.vmap(_noisy(bt.random.default_rng(5)), randomness="different")(x)
    f = _noisy(bt.random.default_rng(5))
    got = bt.vmap(f, randomness="different")(da.from_array(x, chunks=(chunks, 3)))
    assert_same(dask.compute(got)[0], want)


def test_control_flow_on_values_and_writes_into_the_examples():
    x = _data(8, 3)

    def f(v):
        v -= 1.0  # writes into its example: the block runs on a copy
        return v * 2 if v.sum() > -3 else -v

    dx = da.from_array(x, chunks=(3, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(f)(dx).compute()
    assert_same(got, loop_vmap(f)(x.copy()))
    assert_same(dx.compute(), x)  # dask's inputs never change


def test_a_write_into_an_unmapped_argument_is_a_clear_error():
    def f(v, acc):
        acc[0] = 1.0
        return v + acc

    with pytest.raises(ValueError, match="read-only") as info:  # (at the first pass)
        bt.vmap(f, in_axes=(0, None))(da.ones((4, 2), chunks=2), np.zeros(2))
    assert any("not mapped are read-only" in n for n in info.value.__notes__)


def test_an_error_in_a_block_names_its_examples():
    def f(v):
        if (v > 6).any():  # examples 7 and 8
            raise KeyError("too large")
        return v

    y = bt.vmap(f, fallback="silent")(da.arange(9, chunks=3))
    with pytest.raises(KeyError, match="too large") as info:
        y.compute()
    assert any("block of examples 6 to 8 of 9" in n for n in info.value.__notes__)


def test_a_shape_that_depends_on_the_data_is_refused_at_compute():
    x = np.array([[1.0, -1.0], [1.0, -1.0], [1.0, 1.0]])
    f = lambda v: v[v > 0]  # noqa: E731
    y = bt.vmap(f, fallback="silent")(da.from_array(x, chunks=(2, 2)))
    assert y.shape == (3, 1)  # from the first example
    with pytest.raises(ValueError, match="depends on the data") as info:
        y.compute()
    assert any("block of examples 2 to 2" in n for n in info.value.__notes__)


def test_numpy_streams_are_refused():
    f = lambda v: v + np.random.normal()  # noqa: E731
    with pytest.raises(bt.BatchingError, match="bt.random.default_rng"):
        bt.vmap(f, randomness="different")(da.ones((4, 2), chunks=2))


def test_argument_errors():
    with pytest.raises(ValueError, match="inconsistent sizes"):
        bt.vmap(lambda a, b: a + b)(da.ones((4, 2), chunks=2), np.ones((3, 2)))
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        x = da.arange(6, chunks=2)
        bt.vmap(lambda v: v)(x[x > 2])
    with pytest.raises(bt.BatchingError, match="only the outermost vmap"):
        bt.vmap(lambda v: bt.vmap(lambda r: r)(da.ones((2, 2), chunks=1)) + v)(np.ones(2))


def test_import_batchtensor_does_not_import_dask():
    code = "import sys, batchtensor; assert 'dask' not in sys.modules, 'dask imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_docs_example_runs():
    text = (DOCS / "scale.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "scale.md", "exec"), namespace)  # noqa: S102


# ---- on a LocalCluster ----------------------------------------------------------------------

@pytest.fixture(scope="module", params=[False, True], ids=["threads", "processes"])
def cluster(request):
    cloudpickle = pytest.importorskip("cloudpickle")
    module = sys.modules[__name__]
    # (the workers may not import this test module: its functions travel by value)
    cloudpickle.register_pickle_by_value(module)
    try:
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                      processes=request.param, dashboard_address=None) as lc, \
                distributed.Client(lc) as client:
            yield client
    finally:
        cloudpickle.unregister_pickle_by_value(module)


def test_on_a_cluster(cluster):
    x, w, b = _data(10, 4, 3), _data(3, 5, seed=1), _data(5, seed=2)
    dx = da.from_array(x, chunks=(3, 4, 3))

    def f(x, w, b):
        out = model(x, w, b)
        return out, rng.normal(size=2)

    rng = bt.random.default_rng(11)
    want = bt.vmap(f, in_axes=(0, None, None), randomness="different")(x, w, b)
    rng = bt.random.default_rng(11)
    out = bt.vmap(f, in_axes=(0, None, None), randomness="different", out_axes=(0, -1))(dx, w, b)
    got = dask.compute(out, scheduler=cluster)[0]
    assert_same(got[0], want[0])
    assert_same(got[1], want[1].T)

    def g(v):
        if (v > 7).any():
            raise KeyError("too large")
        return v

    with pytest.raises(KeyError, match="too large") as info:
        bt.vmap(g, fallback="silent")(da.arange(9, chunks=3)).compute(scheduler=cluster)
    assert any("block of examples 6 to 8 of 9" in n for n in info.value.__notes__)
