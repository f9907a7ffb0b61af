"""The common vmap call's shortcuts (``api.VmapFunction._one_pass``): the settings every thread
shares read in place, NumPy's replacements installed by a precomputed plan, a lean pass inside
another that keeps the outer one's replacements, and read-only views of the unmapped arrays
only. Each shortcut must give what the general path gives."""

from __future__ import annotations

import threading
import types

import numpy as np
import pytest
from loop_reference import assert_same, loop_vmap

import batchtensor as bt
from batchtensor import conversions
from batchtensor.levels import active_levels

RNG = np.random.default_rng(7)


def numpy_is_pristine() -> bool:
    return all(getattr(np, name) is fn for name, fn in conversions.ORIGINALS.items()) and \
        type(np.random) is types.ModuleType


def test_the_settings_every_thread_shares_follow_setters_and_blocks():
    config = bt.config
    assert config.lean_everywhere is True and config.intercept_everywhere is True
    with config(fallback="silent"):  # a thread with settings of its own: ask per thread
        assert config.lean_everywhere is None and config.intercept_everywhere is None
    assert config.lean_everywhere is True
    config.fallback = "error"
    try:
        assert config.lean_everywhere is False
    finally:
        config.fallback = "warn"
    config.intercept_numpy = False
    try:
        assert config.intercept_everywhere is False and config.lean_everywhere is True
    finally:
        config.intercept_numpy = True
    config.lean_passes = False
    try:
        assert config.lean_everywhere is False
    finally:
        config.lean_passes = True
    assert config.lean_everywhere is True and config.intercept_everywhere is True


def test_a_block_on_another_thread_leaves_this_threads_calls_as_they_were():
    """While another thread holds ``bt.config(fallback="error")``, a call here reruns (and
    warns) as ever, and the same call there raises: each asks its own thread's setting."""
    def f(x):
        return x * 2 if x.sum() > 0 else -x  # the examples disagree: a rerun, or the error

    xs = np.array([[1.0, 2.0], [-3.0, -4.0], [5.0, 6.0]])
    entered, release, seen = threading.Event(), threading.Event(), []

    def hold():
        with bt.config(fallback="error"):
            entered.set()
            try:
                bt.vmap(f)(xs)
            except bt.BatchingError as e:
                seen.append(e)
            release.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    try:
        assert entered.wait(10)
        assert bt.config.lean_everywhere is None
        with pytest.warns(bt.PerformanceWarning):
            got = bt.vmap(f)(xs)
        assert_same(got, loop_vmap(f)(xs))
    finally:
        release.set()
        t.join()
    assert len(seen) == 1
    assert bt.config.lean_everywhere is True


def test_a_second_name_of_an_intercepted_module_is_installed_with_the_first():
    """A module intercepted for one name has a plan of one ``setitem`` each way; a second name
    makes a new plan, and both go in and come out."""
    module = types.ModuleType("some_library")
    module.scale = lambda x: x * 2
    module.shift = lambda x: x + 1
    scale, shift = module.scale, module.shift
    x = RNG.normal(size=(4, 3))
    conversions.intercept(module, "scale", lambda v: v * 3)
    try:
        np.testing.assert_array_equal(bt.vmap(lambda v: module.scale(v))(x), x * 3)
        conversions.intercept(module, "shift", lambda v: v + 5)
        got = bt.vmap(lambda v: module.shift(module.scale(v)))(x)
        np.testing.assert_array_equal(got, x * 3 + 5)
        assert module.scale is scale and module.shift is shift
        conversions.release(module, "shift")
        np.testing.assert_array_equal(bt.vmap(lambda v: module.shift(module.scale(v)))(x),
                                      x * 3 + 1)
    finally:
        conversions.release(module, "scale")
        conversions.release(module, "shift")
    assert module.scale is scale and module.shift is shift and numpy_is_pristine()


@pytest.mark.parametrize("draw", ["np.random.normal", "default_rng", "RandomState"])
def test_numpy_randomness_inside_a_nested_lean_pass_draws_per_example(draw):
    """The inner pass enters nothing (the outer lean pass holds the replacements): its plain
    NumPy draws still differ per example, at both levels, and NumPy is pristine after."""
    def noise(v):
        if draw == "np.random.normal":
            return v + np.random.normal()
        if draw == "default_rng":
            return v + np.random.default_rng().normal()
        return v + np.random.mtrand._rand.normal()  # (what check_random_state(None) gives)

    inner = bt.vmap(noise, randomness="different")
    out = bt.vmap(inner, randomness="different")(np.zeros((4, 5)))
    assert out.shape == (4, 5) and len(np.unique(out)) == out.size
    assert numpy_is_pristine() and active_levels() == ()
    with pytest.raises(bt.BatchingError, match="randomness=.error."):
        bt.vmap(bt.vmap(noise))(np.zeros((2, 3)))
    assert numpy_is_pristine() and active_levels() == ()


def test_read_only_views_only_of_the_writeable_unmapped_arrays():
    """A read-only unmapped array is passed as it is; a writeable one after it, as a read-only
    view, whose shape the function sets on the array too (as the loop does)."""
    frozen = np.arange(6.0).reshape(2, 3)
    frozen.setflags(write=False)
    seen = []

    def f(a, x, b):
        seen.append((a, b))
        b.shape = (3, 2)
        return x * a.sum() + b[0, 0]

    xs = RNG.normal(size=(5,))
    b, b_loop = np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(2, 3)
    got = bt.vmap(f, in_axes=(None, 0, None))(frozen, xs, b)
    assert_same(got, loop_vmap(f, (None, 0, None))(frozen, xs, b_loop))
    assert seen[0][0] is frozen and seen[0][1] is not b and not seen[0][1].flags.writeable
    assert b.shape == b_loop.shape == (3, 2) and b.flags.writeable


def test_a_namedtuple_output_that_is_an_input_is_copied():
    from collections import namedtuple
    Pair = namedtuple("Pair", "x y")
    xs = RNG.normal(size=(3, 2))
    got = bt.vmap(lambda x: Pair(x, x + 1))(xs)
    assert type(got) is Pair and got.x is not xs and np.shares_memory(got.x, xs) is False
    assert_same(got.x, xs)


INNER_RESULTS = {  # an inner vmap's function: what it returns of its argument
    "the argument": lambda a: a,
    "a reversed view": lambda a: a[::-1],
    "a transposed view": lambda a: a.T,
    "a row": lambda a: a[0],
    "a pair of views": lambda a: (a[0], a + 1),
}


@pytest.mark.parametrize("lean", [True, False], ids=["lean", "full passes"])
@pytest.mark.parametrize("inner_in_axes", [0, 1])
@pytest.mark.parametrize("what", list(INNER_RESULTS))
def test_a_nested_vmap_returning_a_view_of_its_input_gives_new_memory(what, inner_in_axes, lean):
    """The loop's inner ``np.stack`` makes new memory, so a write into the inner result does
    not reach the outer example (nor the caller's array); before, the inner vmap handed back
    the outer value itself, and ``y[0] = 99`` wrote into the caller's ``xs``."""
    body = INNER_RESULTS[what]

    def outer(make_inner):
        inner = make_inner(body, in_axes=inner_in_axes)

        def f(x):
            y = inner(x)
            first = y[0] if type(y) is tuple else y
            first[...] = 99.0
            return x, y
        return f

    xs = RNG.normal(size=(3, 2, 2, 2))
    xs_loop, before = xs.copy(), xs.copy()
    want = loop_vmap(outer(loop_vmap))(xs_loop)
    with bt.config(lean_passes=lean):
        got = bt.vmap(outer(bt.vmap))(xs)
    assert_same(got, want)
    assert_same(xs, before)  # the loop's xs_loop is unchanged too
    assert_same(xs_loop, before)


@pytest.mark.parametrize("out_axes", [0, 1, -1, 2, -3, 3])
@pytest.mark.parametrize("shape", [(), (2,), (2, 3)], ids=["0-d", "1-d", "2-d"])
def test_an_output_not_batched_is_broadcast_at_its_out_axis(shape, out_axes):
    """A lean pass broadcasts a plain ndarray output in place (``_broadcast_out``): the loop's
    values at every out axis, as a read-only view of the array (the design's choice over the
    loop's copy), and the out-of-range error of the general path."""
    w = RNG.normal(size=shape)
    xs = RNG.normal(size=(4, 3))
    f = bt.vmap(lambda x: w, out_axes=out_axes)
    if not -len(shape) - 1 <= out_axes <= len(shape):
        with pytest.raises(ValueError, match="out of range"):
            f(xs)
        return
    got = f(xs)
    assert_same(got, loop_vmap(lambda x: w, out_axes=out_axes)(xs))
    assert np.shares_memory(got, w) and not got.flags.writeable


def test_a_lean_level_has_every_field_a_level_has_with_the_lean_pass_values():
    from batchtensor.levels import Level, close_level, open_lean_level, open_level

    fields = [name for name in Level.__slots__ if name != "__weakref__"]

    def opened(level: Level) -> dict:
        try:
            return {name: getattr(level, name) for name in fields}  # AttributeError if unset
        finally:
            close_level(level)

    lean, _ = open_lean_level(3, "different", Level)
    assert lean is not None
    lean_fields = opened(lean)
    plain_fields = opened(open_level(3, "different"))
    differ = {name for name in fields if lean_fields[name] != plain_fields[name]}
    assert differ == {"id", "lean", "buffers", "watches_writes"}
    assert (lean_fields["lean"], lean_fields["buffers"], lean_fields["watches_writes"]) == \
        (True, False, True)
