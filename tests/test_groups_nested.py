"""Groups where the corpus's small batches end alone, and nested vmaps whose cells cannot be
run apart inside the outer pass.

A pass of groups in a nested vmap computes every cell of the examples it runs, the cells it
does not follow on a path they do not take. What that computation raises there (an index out
of bounds, a shape that depends on the data) may be theirs alone, and a cell cannot run apart
from the other cells of its inner example while the outer pass is open: the outer vmap then
splits its own examples, and where those are alone it reruns them one by one, each still a
vectorised inner vmap. Every case is compared with the per-example loop.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from loop_reference import assert_same, loop_vmap, on_threads

import batchtensor as bt

RNG = np.random.default_rng(33)
GROUPS = "each group of examples"
PER_EXAMPLE = "reruns once per example"


def _run(fn, *args):
    """``fn(*args)`` and the texts of the PerformanceWarnings it gave."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = fn(*args)
    return out, [str(w.message) for w in seen if issubclass(w.category, bt.PerformanceWarning)]


def _loop(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*args)


def three_ways(x):
    """A branch per sign of ``x[0]`` and one for small values (SciPy's ``kaiser_beta``)."""
    if x[0] > 1.0:
        return x * 2.0
    elif x[0] > -1.0:
        return x + 1.0
    return -x


def first_values(n_each):
    return np.repeat([2.0, 0.0, -2.0], n_each) + 0.1 * RNG.random(3 * n_each)


@pytest.mark.parametrize("in_axes", [0, -1])
def test_three_examples_on_three_paths_rerun_and_pairs_run_in_groups(in_axes):
    """Three examples that each take a path of their own are three groups of one: the
    per-example rerun. Two examples per path are three groups of two."""
    for n_each, expect in ((1, PER_EXAMPLE), (2, GROUPS)):
        xs = np.stack([first_values(n_each), RNG.normal(size=3 * n_each)], axis=1)
        xs = xs[RNG.permutation(len(xs))]
        xs = xs if in_axes == 0 else np.ascontiguousarray(xs.T)
        got, slow = _run(bt.vmap(three_ways, in_axes=in_axes), xs)
        assert_same(got, loop_vmap(three_ways, in_axes)(xs))
        assert slow and all(expect in m for m in slow), slow


def test_three_ways_with_an_unmapped_argument():
    w = RNG.normal(size=2)

    def f(x, w):
        return three_ways(x + 0.0 * w) * w

    xs = np.stack([first_values(2), RNG.normal(size=6)], axis=1)
    got, slow = _run(bt.vmap(f, in_axes=(0, None)), xs, w)
    assert_same(got, loop_vmap(f, (0, None))(xs, w))
    assert slow and all(GROUPS in m for m in slow), slow


def pick(x):
    """Only on the second path is ``-x[0]`` an index of ``x``: the cells a pass of the other
    group computes on that path index out of bounds (SciPy's ``mstats.friedmanchisquare``)."""
    if x[0] > 0:
        return x.sum()
    return x[(-x[0]).astype(np.intp)] * 3.0


def pick_grid(shape):
    """Examples of 4 values whose first is 10 (first path) or one of -1, -2, -3."""
    grid = RNG.normal(size=shape + (4,))
    first = np.where(RNG.random(shape) < 0.5, 10.0, -RNG.integers(1, 4, size=shape))
    grid[..., 0] = first
    return grid


def mapped(grid, in_axes):
    """The grid with both batch axes at ``in_axes`` (outer first)."""
    return grid if in_axes == 0 else np.moveaxis(grid, (0, 1), (-1, -2))


@pytest.mark.parametrize("in_axes", [0, -1])
@pytest.mark.parametrize("shape", [(2, 3), (4, 5), (1, 4), (5, 1)])
def test_nested_an_error_only_cells_not_followed_meet_gives_the_loops_result(shape, in_axes):
    grid = pick_grid(shape)
    grid[0, 0, 0] = 10.0  # (both paths in every grid of more than one example)
    grid[-1, -1, 0] = -1.0
    xs = mapped(grid, in_axes)
    got, slow = _run(bt.vmap(bt.vmap(pick, in_axes=in_axes), in_axes=in_axes), xs)
    assert_same(got, loop_vmap(loop_vmap(pick, in_axes), in_axes)(xs))
    assert slow and all(GROUPS in m or PER_EXAMPLE in m for m in slow), slow


def test_nested_columns_that_agree_run_in_groups_of_cells():
    """Every outer example's inner examples take the same paths (a column of cells agrees):
    no cell is computed on a path it does not take, and the inner vmap's groups run once."""
    grid = RNG.normal(size=(3, 6, 4))
    grid[..., 0] = np.array([10.0, -1.0, 10.0, -2.0, 10.0, -3.0])
    got, slow = _run(bt.vmap(bt.vmap(pick)), grid)
    assert_same(got, loop_vmap(loop_vmap(pick))(grid))
    assert slow and all(GROUPS in m for m in slow), slow


def pick_outer(x, ys):
    """A branch on a value of the outer level only, inside the inner vmap (SciPy's ``mode``
    asks whether an inner vmap's counts agree: a truth per outer example)."""
    def inner(y):
        return y * 2.0 if x.sum() > 0 else y[::-1].copy()
    return bt.vmap(inner)(ys)


def pick_outer_loop(x, ys):
    return loop_vmap(lambda y: y * 2.0 if x.sum() > 0 else y[::-1].copy())(ys)


@pytest.mark.parametrize("n_outer,expect", [(2, PER_EXAMPLE), (6, GROUPS)])
def test_nested_outer_examples_alone_rerun_each_as_one_inner_vmap(n_outer, expect):
    """Two outer examples that disagree are two groups of one: the outer vmap reruns them one
    by one, each a vectorised inner vmap; six make groups."""
    xs = RNG.normal(size=(n_outer, 3))
    xs[:, 0] = np.where(np.arange(n_outer) % 2 == 0, 5.0, -5.0)
    ys = RNG.normal(size=(n_outer, 4, 3))
    got, slow = _run(bt.vmap(pick_outer), xs, ys)
    assert_same(got, loop_vmap(pick_outer_loop)(xs, ys))
    assert slow and all(expect in m for m in slow), slow


def fill_then_count(x):
    """An array ``f`` makes, filled where ``x`` is positive, and on one path a length that
    depends on the data (``np.arange``: only a run per example makes it)."""
    out = np.zeros(x.shape)
    np.putmask(out, x > 0, x)
    if x[0] > 0:
        return out * 2.0
    return out + np.arange(np.floor(-x[0])).sum()


@pytest.mark.parametrize("shape", [(2, 3), (4, 6)])
def test_nested_cells_run_alone_write_into_arrays_they_made(shape):
    """A cell that needs a run alone runs with the other cells of its inner example (batched
    over the outer examples), where the array it made is plain: its batched fill is the
    outer vmap's to handle; the results are the loop's."""
    grid = RNG.normal(size=shape + (4,))
    grid[..., 0] = np.where(RNG.random(shape) < 0.5, 1.0, -RNG.integers(1, 6, size=shape))
    grid[0, 0, 0], grid[-1, -1, 0] = 1.0, -3.0
    got, slow = _run(bt.vmap(bt.vmap(fill_then_count)), grid)
    assert_same(got, _loop(loop_vmap(loop_vmap(fill_then_count)), grid))
    assert slow


def test_nested_partial_with_an_error_only_cells_not_followed_meet():
    w = RNG.normal(size=4)

    def f(x, w):
        return pick(x) + w.sum()

    grid = pick_grid((3, 4))
    grid[0, 0, 0], grid[0, 1, 0] = 10.0, -2.0
    inner = bt.vmap(f, in_axes=(0, None))
    got = _run(bt.vmap(inner, in_axes=(0, None)), grid, w)[0]
    assert_same(got, loop_vmap(loop_vmap(f, (0, None)), (0, None))(grid, w))


def test_nested_groups_and_reruns_on_eight_threads():
    grids = [pick_grid((3, 5)) for _ in range(8)]
    fills = [RNG.normal(size=(2, 3, 4)) for _ in range(8)]
    for g in fills:
        g[..., 0] = np.where(RNG.random((2, 3)) < 0.5, 1.0, -RNG.integers(1, 6, size=(2, 3)))

    def run(i):
        quiet = {"fallback": "silent"}
        assert_same(bt.vmap(bt.vmap(pick, **quiet), **quiet)(grids[i]),
                    loop_vmap(loop_vmap(pick))(grids[i]))
        assert_same(bt.vmap(bt.vmap(fill_then_count, **quiet), **quiet)(fills[i]),
                    _loop(loop_vmap(loop_vmap(fill_then_count)), fills[i]))

    on_threads(run)
