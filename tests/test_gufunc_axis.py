"""A generalised ufunc's ``axis=`` (one shared core dimension, at that axis of each operand
that has it): the batch axis goes in front, each core axis last, one call; against the loop."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from loop_reference import assert_same, loop_vmap, strict_vmap

import batchtensor as bt

RNG = np.random.default_rng(8)


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
@pytest.mark.parametrize("in_axes", [0, -1, (0, None), (None, 0)])
def test_vecdot_axis(axis, in_axes):
    f = lambda a, b: np.vecdot(a, b, axis=axis)  # noqa: E731
    xs, ys = RNG.normal(size=(4, 3, 5)), RNG.normal(size=(4, 3, 5))
    if in_axes == -1:
        xs, ys = np.moveaxis(xs, 0, -1), np.moveaxis(ys, 0, -1)
    args = [xs, ys]
    if isinstance(in_axes, tuple):
        args = [a if ax is not None else a[0] for a, ax in zip(args, in_axes)]
    assert_same(strict_vmap(f, in_axes)(*args), loop_vmap(f, in_axes)(*args))


@pytest.mark.parametrize("n", [0, 1])
def test_small_batches_and_nested(n):
    f = lambda a, b: np.vecdot(a, b, axis=0)  # noqa: E731
    xs, ys = RNG.normal(size=(n, 3, 2)), RNG.normal(size=(n, 3, 2))
    got = strict_vmap(f)(xs, ys)
    assert got.shape == (n, 2)
    if n:
        assert_same(got, loop_vmap(f)(xs, ys))
    grid = RNG.normal(size=(2, 3, 4, 5))
    assert_same(strict_vmap(bt.vmap(f))(grid, grid[::-1]), loop_vmap(loop_vmap(f))(grid, grid[::-1]))


def test_axis_out_of_range_raises_numpys_error():
    xs = RNG.normal(size=(3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        with pytest.raises(np.exceptions.AxisError):
            bt.vmap(lambda a: np.vecdot(a, a, axis=1))(xs)


def test_astropy_sigma_clip_through_its_gufunc():
    """astropy's fast sigma clipping calls its own gufunc ``_sigma_clip_fast(..., axis=axis)``
    (signature ``(n),(n),(),(),(),(),()->(),()``)."""
    stats = pytest.importorskip("astropy.stats", reason="astropy is a test extra")
    xs = RNG.normal(size=(4, 6, 30))
    xs[0, 1, 3], xs[2, 5, 0] = 40.0, -25.0  # outliers in some examples only
    for f in (lambda x: stats.sigma_clip(x, axis=-1, masked=False),
              lambda x: stats.sigma_clip(x, axis=0, sigma=2.0, cenfunc="mean",
                                         masked=False),
              lambda x: np.stack(stats.sigma_clipped_stats(x, axis=1))):
        assert_same(strict_vmap(f)(xs), loop_vmap(f)(xs))
        assert_same(strict_vmap(f, -1)(np.moveaxis(xs, 0, -1)), loop_vmap(f)(xs))
