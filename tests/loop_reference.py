"""The ground truth for vmap: a plain Python loop over the examples.

``loop_vmap(f, in_axes, out_axes)`` has vmap's signature and composes the same way (nesting),
but calls ``f`` once per example on views of the inputs and stacks the results.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from batchtensor.pytree import broadcast_prefix, flatten, flatten_as, unflatten


def _select(x, ax, i):
    return x[(slice(None),) * ax + (i,)]


def loop_vmap(f: Callable, in_axes: Any = 0, out_axes: Any = 0, *,
              axis_size: int | None = None) -> Callable:
    def run(*args):
        leaves, td = flatten(args)
        if in_axes is None or isinstance(in_axes, int):
            axes = [in_axes] * len(leaves)
        else:
            axes = broadcast_prefix(tuple(in_axes), args, "in_axes", "args")
        axes = [None if a is None else a % np.ndim(x) for x, a in zip(leaves, axes)]
        sizes = {np.shape(x)[a] for x, a in zip(leaves, axes) if a is not None}
        n = sizes.pop() if sizes else axis_size
        if n is None or n == 0:
            raise ValueError("loop_vmap needs a known, non-zero batch size")
        results = []
        for i in range(n):
            ex = [x if a is None else _select(x, a, i) for x, a in zip(leaves, axes)]
            results.append(f(*unflatten(td, ex)))
        outs, otd = flatten(results[0])
        cols = [flatten_as(r, otd) for r in results]  # (a dict's values by key)
        assert all(c is not None for c in cols), "the examples return other structures"
        if out_axes is None or isinstance(out_axes, int):
            oaxes = [out_axes] * len(outs)
        else:
            oaxes = broadcast_prefix(out_axes, results[0], "out_axes", "output")
        stacked = []
        for j, ax in enumerate(oaxes):
            col = [np.asarray(c[j]) for c in cols]
            stacked.append(col[0] if ax is None else np.stack(col, axis=ax))
        return unflatten(otd, stacked)

    return run


def assert_same(got: Any, want: Any, rtol: float | None = None) -> None:
    """Same tree, shapes, dtypes; integers and booleans exact, floats to rounding, NaN where
    NaN."""
    gl, gtd = flatten(got)
    wl, wtd = flatten(want)
    assert len(gl) == len(wl), (got, want)
    for g, w in zip(gl, wl):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        if w.dtype.kind in "fc":
            tol = rtol if rtol is not None else (1e-4 if w.dtype.itemsize <= 8 and
                                                 w.dtype in (np.float32, np.complex64)
                                                 else 1e-10)
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)


LAYOUTS = ("batch last", "F-ordered", "negative stride", "read-only")


def laid_out(xs: np.ndarray, layout: str) -> tuple[np.ndarray, int]:
    """``xs`` (batch first) with the same examples in another physical layout, and its in_axes."""
    if layout == "batch last":
        return np.ascontiguousarray(xs.T), -1
    if layout == "F-ordered":
        return np.asfortranarray(xs), 0
    if layout == "negative stride":
        return xs[::-1, ::-1], 0
    xs = xs.copy()
    xs.flags.writeable = False
    return xs, 0


def vectorised(f: Callable, *args: Any, in_axes: Any = 0) -> Any:
    """``bt.vmap(f, in_axes, fallback="error")`` with no per-op loop either (its warning an
    error), checked against the loop; the result."""
    import warnings

    import batchtensor as bt

    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(f, in_axes, fallback="error")(*args)
    assert_same(got, loop_vmap(f, in_axes)(*args))
    return got


def on_threads(run: Callable[[int], None], n: int = 8) -> None:
    """``run(i)`` on ``n`` threads at once; the first exception any of them raised, re-raised."""
    import threading

    errors: list = []

    def guarded(i: int) -> None:
        try:
            run(i)
        except Exception as e:  # noqa: BLE001  (re-raised below)
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def strict_vmap(f: Callable, in_axes: Any = 0) -> Callable:
    """``bt.vmap(f, in_axes, fallback="error")`` that also turns a PerformanceWarning (a
    per-op loop, a rerun, groups) into an error: the call must run fully vectorised."""
    import warnings

    import batchtensor as bt

    def run(*args):
        with warnings.catch_warnings():
            warnings.simplefilter("error", bt.PerformanceWarning)
            return bt.vmap(f, in_axes=in_axes, fallback="error")(*args)
    return run


def assert_same_bits(got: Any, want: Any) -> None:
    """``assert_same``, and every float equal bit for bit (float arithmetic per example is
    IEEE, as Python's: the weak floats of ``batchtensor.pyfloat``)."""
    import batchtensor as bt

    assert_same(got, want)
    for g, w in zip(bt.pytree.flatten(got)[0], bt.pytree.flatten(want)[0]):
        g, w = np.asarray(g), np.asarray(w)
        if w.dtype.kind == "f":
            np.testing.assert_array_equal(g.view(f"u{w.dtype.itemsize}"),
                                          w.view(f"u{w.dtype.itemsize}"))


def no_rerun(f: Callable, *args: Any, in_axes: Any = 0) -> Any:
    """``bt.vmap(f, in_axes, fallback="error")(*args)`` with the per-op loop's warning an
    error: the result of one vectorised pass."""
    import warnings

    import batchtensor as bt

    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        return bt.vmap(f, in_axes, fallback="error")(*args)


def vectorised_bit_exact(f: Callable, *args: Any, in_axes: Any = 0) -> None:
    """``no_rerun`` of ``f`` equal to the loop's result bit for bit (``assert_same_bits``)."""
    want = loop_vmap(f, in_axes)(*args)
    assert_same_bits(no_rerun(f, *args, in_axes=in_axes), want)


def random_examples(rng: np.random.Generator, n: int, dtype: Any = np.float64,
                    k: int = 5) -> np.ndarray:
    """``n`` examples of ``k`` values of ``dtype`` from ``rng``: normal draws times 4, rounded
    for integer dtypes (a test file passes its own seeded generator)."""
    xs = rng.normal(size=(n, k)) * 4
    return xs.astype(dtype) if np.dtype(dtype).kind == "f" else np.round(xs).astype(dtype)


def nested_bit_exact(f: Callable, xs: np.ndarray) -> None:
    """``bt.vmap(bt.vmap(f))`` over the first two axes of ``xs``: one vectorised pass at each
    level (a rerun or the per-op loop raises), equal bit for bit to the nested loop's."""
    import warnings

    import batchtensor as bt

    want = loop_vmap(loop_vmap(f))(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(bt.vmap(f), fallback="error")(xs)
    assert_same_bits(got, want)
