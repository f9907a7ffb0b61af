"""Shape, view, joining and splitting ops: behaviour the OpInfo sweep cannot express (errors of
data-dependent shapes, unbatched Python results, layouts, outer-level arguments)."""

from __future__ import annotations

import numpy as np
import pytest

import batchtensor as bt
from batchtensor.registry import record_paths


def _loop(f, *xs):
    return np.stack([f(*ex) for ex in zip(*xs)])


# ---- data-dependent shapes through the loop -----------------------------------------------------
def test_repeat_batched_repeats_equal_totals_stack(silent_fallback):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 3))
    reps = np.stack([rng.permutation([1, 2, 3]) for _ in range(4)])
    got = bt.vmap(np.repeat)(x, reps)
    np.testing.assert_array_equal(got, _loop(np.repeat, x, reps))


def test_repeat_batched_repeats_unequal_totals_raise(silent_fallback):
    x = np.ones((3, 4))
    reps = np.array([1, 2, 3])
    with pytest.raises(ValueError):  # the loop's np.stack of shapes (4,), (8,), (12,)
        _loop(lambda a, r: np.repeat(a, r), x, reps)
    with pytest.raises(bt.BatchingError, match="different numbers of elements"):
        bt.vmap(lambda a, r: np.repeat(a, r), fallback="error")(x, reps)
    with pytest.raises(bt.BatchingError, match="different numbers of elements"):
        bt.vmap(lambda a, r: np.repeat(a, r))(x, reps)  # the rerun's stack fails too


@pytest.mark.parametrize("op", [np.delete, lambda a, m: np.insert(a, m, 0.0)],
                         ids=["delete", "insert"])
def test_batched_mask_with_unequal_counts_raises(silent_fallback, op):
    x = np.ones((2, 4))
    mask = np.array([[True, False, False, False], [True, True, False, False]])
    with pytest.raises(bt.BatchingError, match="different shapes"):
        bt.vmap(op)(x, mask)


# ---- shape queries ------------------------------------------------------------------------------
def test_shape_queries_answer_for_one_example_with_python_values():
    seen = {}

    def f(x):
        seen.update(ndim=np.ndim(x), shape=np.shape(x), size=np.size(x),
                    size1=np.size(x, 1), size02=np.size(x, (0, 2)))
        return x

    with record_paths() as paths:
        bt.vmap(f, in_axes=1)(np.zeros((2, 5, 3, 4)))
    assert seen == {"ndim": 3, "shape": (2, 3, 4), "size": 24, "size1": 3, "size02": 8}
    assert all(type(v) is int for k, v in seen.items() if k != "shape")
    assert {p for _, p in paths} == {"rule"}


def test_linalg_matrix_transpose_is_registered_separately():
    assert np.linalg.matrix_transpose is not np.matrix_transpose
    x = np.arange(24.0).reshape(2, 3, 4)
    with record_paths() as paths:
        got = bt.vmap(np.linalg.matrix_transpose)(x)
    np.testing.assert_array_equal(got, np.swapaxes(x, -1, -2))
    assert paths == [(np.linalg.matrix_transpose, "rule")]


# ---- layouts ------------------------------------------------------------------------------------
def test_reshape_copy_false_that_needs_a_copy_of_the_batch_layout_raises():
    # Each example (3, 4) is a slice with the batch axis in the middle: merging its axes
    # cannot be a view of the batched array, so copy=False must raise rather than copy.
    x = np.zeros((3, 5, 4))
    with pytest.raises(ValueError, match="copy=None"):
        bt.vmap(lambda a: np.reshape(a, (12,), copy=False), in_axes=1)(x)


def test_reshape_copy_false_is_a_view():
    x = np.zeros((5, 12))

    def f(a):
        r = np.reshape(a, (3, 4), copy=False)  # a view per example: the write reaches a
        r[0, 0] = 7.0
        return a

    np.testing.assert_array_equal(bt.vmap(f)(x.copy()), np.stack([f(a) for a in x.copy()]))
    out = bt.vmap(lambda a: np.reshape(a, (3, 4), copy=False))(x)
    assert not np.shares_memory(out, x)  # an output is a new array, as np.stack makes


@pytest.mark.parametrize("in_axes", [0, 1, 2])
def test_ravel_order_a_and_k_follow_each_examples_layout(in_axes):
    # The loop's examples of an input are views of it (with in_axes=1, phys[:, i] is strided,
    # so its .T is neither C nor F contiguous and 'A' is C order); a value computed from one
    # is stored on its own in every example (its .T is F contiguous: 'A' is F order), even
    # where the batch holds those examples interleaved.
    rng = np.random.default_rng(1)
    xs = rng.normal(size=(4, 3, 5))
    phys = np.moveaxis(xs, 0, in_axes).copy()
    examples = np.moveaxis(phys, in_axes, 0)
    for order in ("A", "K"):
        for f in (lambda a: np.ravel(a.T, order), lambda a: np.ravel((a * 1.0).T, order)):
            want = np.stack([f(x) for x in examples])
            np.testing.assert_array_equal(bt.vmap(f, in_axes=in_axes)(phys), want)


# ---- arguments batched at an outer level only ---------------------------------------------------
def test_pad_constant_values_batched_at_the_outer_level():
    rng = np.random.default_rng(2)
    xs = rng.normal(size=(3, 2, 4))          # inner batch
    cvs = rng.normal(size=(5, 2))            # outer batch: (before, after) per outer example

    def inner(cv):
        return bt.vmap(lambda x: np.pad(x, 1, constant_values=cv))(xs)

    got = bt.vmap(inner)(cvs)
    want = np.stack([np.stack([np.pad(x, 1, constant_values=cv) for x in xs]) for cv in cvs])
    np.testing.assert_array_equal(got, want)


def test_block_with_leaves_batched_at_different_levels():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(2, 3, 2))           # outer batch
    b = rng.normal(size=(4, 3, 1))           # inner batch

    def outer(ai):
        return bt.vmap(lambda bi: np.block([[ai, bi], [np.zeros((1, 3))]]))(b)

    got = bt.vmap(outer)(a)
    want = np.stack([np.stack([np.block([[ai, bi], [np.zeros((1, 3))]]) for bi in b])
                     for ai in a])
    np.testing.assert_array_equal(got, want)


def test_insert_values_batched_at_the_outer_level():
    rng = np.random.default_rng(4)
    xs = rng.normal(size=(3, 2, 4))
    vs = rng.normal(size=(2, 2))

    def inner(v):
        return bt.vmap(lambda x: np.insert(x, [1, 3], v[:, None], axis=1))(xs)

    got = bt.vmap(inner)(vs)
    want = np.stack([np.stack([np.insert(x, [1, 3], v[:, None], axis=1) for x in xs])
                     for v in vs])
    np.testing.assert_array_equal(got, want)


def test_stack_of_one_batched_array_takes_the_loop(silent_fallback):
    x = np.arange(24.0).reshape(2, 3, 4)
    with record_paths() as paths:
        got = bt.vmap(lambda a: np.stack(a, axis=1))(x)
    np.testing.assert_array_equal(got, _loop(lambda a: np.stack(a, axis=1), x))
    assert (np.stack, "loop") in paths


@pytest.mark.parametrize("op", [np.delete, lambda a, i: np.insert(a, i, -1.0)],
                         ids=["delete", "insert"])
def test_index_batched_at_the_outer_level(silent_fallback, op):
    rng = np.random.default_rng(5)
    xs = rng.normal(size=(3, 6))
    idx = np.stack([rng.permutation(6)[:2] for _ in range(2)])

    got = bt.vmap(lambda i: bt.vmap(lambda x: op(x, i))(xs))(idx)
    want = np.stack([np.stack([op(x, i) for x in xs]) for i in idx])
    np.testing.assert_array_equal(got, want)


# ---- ravel: a view or a copy, as NumPy gives one example ----------------------------------------
# NumPy's ravel is a view only of an example contiguous in the order asked ('K': in some axis
# order); a batch of examples can often be reshaped as a view where one example cannot
# (np.diagonal(x).ravel()), and returning that view would let a later write into the base show
# through. Writing into the base after the ravel tells the two apart.
_RAVEL_VIEWS = {
    "contiguous": lambda b: b,
    "diagonal": np.diagonal,
    "column": lambda b: b[:, 0],
    "column 2-d": lambda b: b[:, :1],
    "transposed": lambda b: b.T,
    "flipped": lambda b: b[::-1],
    "every other": lambda b: b[..., ::2],
    "3-d every other": lambda b: b.reshape(2, 3, 2)[..., ::2],
}


def _ravel_then_write_base(view, order):
    def f(x):
        base = x * 1.0  # an array of its own in every example
        flat = np.ravel(_RAVEL_VIEWS[view](base), order)
        base[...] = 0.0
        return flat
    return f


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
@pytest.mark.parametrize("view", list(_RAVEL_VIEWS))
def test_ravel_is_a_view_exactly_when_numpy_gives_one(view, order):
    xs = np.random.default_rng(0).normal(size=(5, 3, 4))
    f = _ravel_then_write_base(view, order)
    want = _loop(f, xs)
    np.testing.assert_array_equal(bt.vmap(f)(xs), want)
    nested = bt.vmap(bt.vmap(f))(xs.reshape(5, 1, 3, 4))
    np.testing.assert_array_equal(nested[:, 0], want)


@pytest.mark.xfail(strict=True, reason="documented limitation (docs/semantics.md, 'View or "
                   "copy'): with the batch axis inside the examples' memory (in_axes=1), a "
                   "fresh value's examples are interleaved, so a ravel that is a view of one "
                   "example stored on its own is a copy under vmap")
def test_ravel_view_of_fresh_value_with_batch_axis_inside_memory():
    xs = np.random.default_rng(0).normal(size=(3, 5, 4))
    f = _ravel_then_write_base("contiguous", "C")
    want = np.stack([f(xs[:, i]) for i in range(5)])
    np.testing.assert_array_equal(bt.vmap(f, in_axes=1)(xs), want)
