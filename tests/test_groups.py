"""Examples that take different branches run in groups that agree, each group vectorised.

Where a Python ``if`` / ``while`` meets examples that disagree, vmap runs the function again on
each group of examples that agree (splitting a group again where it disagrees further on) and
puts the results back in order, as the loop's ``np.stack`` would. Every case is compared with
the per-example loop; where groups cannot give the loop's result, the per-example rerun does.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from loop_reference import LAYOUTS, assert_same, laid_out, loop_vmap

import batchtensor as bt


@pytest.fixture(autouse=True)
def _full_passes():
    """The passes counted here are full ones. A lean first pass (tests/test_rerun.py) meets
    the examples' disagreement and gives way to a full pass, once per code: ``counted``'s
    wrapper is one code for every test, so which test paid that extra pass would depend on
    the order the tests ran in."""
    with bt.config(lean_passes=False):
        yield


RNG = np.random.default_rng(21)
SIGNS = np.array([[1.0], [-3.0], [2.0], [-1.0], [4.0], [-2.0]])
GROUPS = "each group of examples"
PER_EXAMPLE = "reruns once per example"


def branchy(x):
    if x.sum() > 0:
        return x * 2
    return -x


def newton_sqrt(a):
    """Iterates until converged: the examples need different numbers of steps."""
    x = a
    while np.abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
    return x


def int_or_float(x):
    if x[0] > 0:
        return np.arange(3)  # int64 in these examples
    return x[:3] * 0.5       # float64 in those: the loop's np.stack makes all float64


def two_outputs(x):
    if x.sum() > 0:
        return {"y": x * 2, "n": x.sum()}
    return {"y": -x, "n": -x.sum()}


def nested_ifs(x):
    if x[0] > 0:
        if x[1] > 0:
            return x + 1
        return x - 1
    return x * 0


def writes_then_branches(x):
    x += 1.0  # reaches the caller's array, once per example as in the loop
    return branchy(x)


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        return fn(*args, **kw)


def truth(x):
    return bool(x.sum() > 0)  # a Python bool per example: the loop stacks them


@pytest.mark.parametrize("f", [branchy, int_or_float, nested_ifs, truth],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("size", [2, 6])
def test_groups_give_the_loops_result(f, size):
    xs = np.abs(RNG.normal(size=(size, 4))) * SIGNS[:size]
    # two examples that disagree are two groups of one: that is the per-example rerun
    with pytest.warns(bt.PerformanceWarning, match=GROUPS if size > 2 else PER_EXAMPLE):
        got = bt.vmap(f)(xs)
    assert_same(got, loop_vmap(f)(xs))


def test_a_while_loop_with_a_different_number_of_steps_per_example():
    a = np.array([4.0, 2.0, 9.0, 2.0, 0.25, 4.0])
    with pytest.warns(bt.PerformanceWarning, match=GROUPS):
        got = bt.vmap(newton_sqrt)(a)
    assert_same(got, loop_vmap(newton_sqrt)(a))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_groups_over_every_layout_and_a_middle_axis(layout):
    xs, ax = laid_out(np.abs(RNG.normal(size=(6, 4))) * SIGNS, layout)
    assert_same(_quiet(bt.vmap(branchy, in_axes=ax), xs), loop_vmap(branchy, ax)(xs))
    assert_same(_quiet(bt.vmap(branchy, in_axes=ax, out_axes=1), xs),
                loop_vmap(branchy, ax, 1)(xs))


def test_pytree_outputs_out_axes_and_unmapped_arguments():
    xs = np.abs(RNG.normal(size=(6, 4))) * SIGNS
    w = RNG.normal(size=4)

    def f(x, w):
        out = two_outputs(x)
        out["w"] = w  # the same for every example
        return out

    axes = {"y": 1, "n": 0, "w": None}
    got = _quiet(bt.vmap(f, in_axes=(0, None), out_axes=axes), xs, w)
    assert_same(got, loop_vmap(f, (0, None), axes)(xs, w))


def test_writes_into_mapped_arguments_rerun_per_example_and_reach_the_caller_once():
    """Each group gets copies of its examples, where the loop's are views of the caller's
    arrays (with their layout, which decides what is a view): a group that writes into them
    gives way to the per-example rerun."""
    xs = np.abs(RNG.normal(size=(6, 3))) * SIGNS
    ys = xs.copy()
    with pytest.warns(bt.PerformanceWarning, match=PER_EXAMPLE):
        got = bt.vmap(writes_then_branches)(xs)
    want = loop_vmap(writes_then_branches)(ys)
    assert_same(got, want)
    np.testing.assert_array_equal(xs, ys)


def test_chunks_and_nested_vmaps():
    xs = np.abs(RNG.normal(size=(6, 4))) * SIGNS
    assert_same(_quiet(bt.vmap(branchy, chunk_size=4), xs), loop_vmap(branchy)(xs))
    grid = np.abs(RNG.normal(size=(3, 6, 4))) * SIGNS
    assert_same(_quiet(bt.vmap(bt.vmap(branchy)), grid), loop_vmap(loop_vmap(branchy))(grid))


def count_down(n):
    steps = 0
    while n > 0:
        n = n - 1
        steps += 1
    return steps


def test_more_groups_than_worth_it_rerun_per_example():
    """Every example its own number of steps: past a few groups the loop is cheaper."""
    n = np.arange(30)
    with pytest.warns(bt.PerformanceWarning, match=PER_EXAMPLE):
        got = bt.vmap(count_down)(n)
    assert_same(got, loop_vmap(count_down)(n))


def test_randomness_keyed_by_example_reruns_per_example():
    xs = np.abs(RNG.normal(size=(6, 4))) * SIGNS
    with pytest.warns(bt.PerformanceWarning, match=PER_EXAMPLE):
        got = bt.vmap(branchy, randomness="same")(xs)
    assert_same(got, loop_vmap(branchy)(xs))


def test_a_write_into_an_unmapped_argument_in_a_group_runs_per_example():
    xs = np.abs(RNG.normal(size=(6, 3))) * SIGNS
    w, w_loop = np.zeros(3), np.zeros(3)

    def f(x, w):
        if x.sum() > 0:
            w += 1.0  # the loop adds once per example that takes this branch, in order
            return x + w
        return x - w

    got = _quiet(bt.vmap(f, in_axes=(0, None)), xs, w)
    assert_same(got, loop_vmap(f, (0, None))(xs, w_loop))
    np.testing.assert_array_equal(w, w_loop)


def test_groups_whose_results_differ_in_shape_fail_as_the_loop_does():
    def f(x):
        if x.sum() > 0:
            return x[:2]
        return x

    xs = np.abs(RNG.normal(size=(6, 4))) * SIGNS
    with pytest.raises(ValueError):
        loop_vmap(f)(xs)
    with pytest.raises((ValueError, bt.BatchingError)):
        _quiet(bt.vmap(f), xs)


def test_fallback_error_still_raises_where_the_examples_disagree():
    xs = np.abs(RNG.normal(size=(6, 4))) * SIGNS
    with pytest.raises(bt.BatchingError, match=r"np\.where"):
        bt.vmap(branchy, fallback="error")(xs)


def test_fallback_silent_says_nothing():
    xs = np.abs(RNG.normal(size=(6, 4))) * SIGNS
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = bt.vmap(branchy, fallback="silent")(xs)
    assert_same(got, loop_vmap(branchy)(xs))


def test_a_write_into_a_read_only_argument_fails_as_in_the_loop():
    def f(x):
        if x.sum() > 0:
            x[0] = 1.0
        return x * 2

    xs = np.abs(RNG.normal(size=(6, 3))) * SIGNS
    xs.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        loop_vmap(f)(xs)
    with pytest.raises(ValueError, match="read-only"):
        _quiet(bt.vmap(f), xs)


def counted(f):
    """``f`` and a list that gets one entry per call (first pass, groups, examples alone)."""
    calls = []

    def wrapper(*args):
        calls.append(1)
        return f(*args)

    wrapper.__name__ = f.__name__
    return wrapper, calls


def test_examples_alone_in_their_path_run_one_by_one_beside_the_groups():
    """60 examples take one of two paths, four take paths of their own: the two groups run
    vectorised and the four once each, not every example once."""
    n = np.concatenate([np.zeros(30), np.ones(30), [5.0, 7.0, 9.0, 11.0]])
    RNG.shuffle(n)
    f, calls = counted(count_down)
    with pytest.warns(bt.PerformanceWarning, match=GROUPS):
        got = bt.vmap(f)(n)
    assert_same(got, loop_vmap(count_down)(n))
    assert len(calls) < 20  # 1 first pass, a few group passes, 4 examples alone; not 64


def test_every_example_on_its_own_path_gives_up_splitting_early():
    """No group finishes in the first passes: once they took a twentieth of the loop's time
    (at most max(8, 200 // 16) of them) the rest runs per example on the caller's arrays, as
    the plain rerun, not one pass per example's path."""
    n = np.arange(200.0)
    f, calls = counted(count_down)
    with pytest.warns(bt.PerformanceWarning, match=PER_EXAMPLE):
        got = bt.vmap(f)(n)
    assert_same(got, loop_vmap(count_down)(n))
    # the first pass, 16 examples timed alone, at most max(8, 200 // 16) passes that split,
    # every example
    assert len(calls) <= 1 + 16 + 12 + 200


def test_an_example_alone_that_writes_into_its_argument_reruns_every_example():
    """The examples that run one by one get copies: one that writes into it gives way to the
    per-example rerun on the caller's array, which the write then reaches once."""
    def f(n):
        steps = count_down(n[0])
        if steps > 4:
            n[1] = -1.0  # only the examples with a long count write
        return n * steps

    n = np.stack([np.concatenate([np.zeros(10), np.ones(10), [6.0]]), np.zeros(21)], 1)
    ref = n.copy()
    got = _quiet(bt.vmap(f), n)
    assert_same(got, loop_vmap(f)(ref))
    np.testing.assert_array_equal(n, ref)


def test_an_example_alone_that_raises_raises_the_loops_error():
    def f(n):
        steps = count_down(n)
        if steps > 4:
            raise ZeroDivisionError(f"example with {steps} steps")
        return steps

    n = np.concatenate([np.zeros(10), np.ones(10), [6.0, 8.0]])
    with pytest.raises(ZeroDivisionError, match="6 steps"):
        loop_vmap(f)(n)
    with pytest.raises(ZeroDivisionError, match="6 steps"):
        _quiet(bt.vmap(f), n)


def converts_on_one_side(x):
    """The examples with ``x[0] < 0`` agree on a vectorised path; on the other side each
    converts a value of its own to a Python float, which only a run per example can do.
    (That side answers True: the pass of the other side runs first, as a ``while``'s exit
    does, and pays for the rest.)"""
    if x[0] > 0:
        return x * float(np.floor(x[1]))
    return x * 2.0


def _one_side_converts(size, n_converting):
    xs = -1.0 - np.abs(RNG.normal(size=(size, 3)))
    some = RNG.permutation(size)[:n_converting]
    xs[some, 0] *= -1.0
    xs[some, 1] = 3.0 + np.arange(len(some))  # a different float per example
    return xs


@pytest.mark.parametrize("size,n_converting", [(64, 8), (64, 40), (3, 2), (20, 0), (1, 1)])
def test_a_group_that_needs_a_run_per_example_runs_alone_beside_the_groups(size, n_converting):
    """A group's pass that stops at a conversion (as the first pass would rerun there): that
    group's examples run one by one, the other groups vectorised, not every example again."""
    xs = _one_side_converts(size, n_converting)
    f, calls = counted(converts_on_one_side)
    got = _quiet(bt.vmap(f), xs)
    assert_same(got, loop_vmap(converts_on_one_side)(xs))
    if 2 <= n_converting <= size - 2:
        # the first pass, the examples timed alone, one pass per side, that side's examples
        # alone; not every example once more
        assert len(calls) <= 1 + 8 + 2 + n_converting < 1 + size


def test_a_group_that_needs_a_run_per_example_warns_groups():
    xs = _one_side_converts(64, 8)
    with pytest.warns(bt.PerformanceWarning, match=GROUPS):
        bt.vmap(converts_on_one_side)(xs)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_group_that_needs_a_run_per_example_over_every_layout(layout):
    xs, ax = laid_out(_one_side_converts(12, 5), layout)
    assert_same(_quiet(bt.vmap(converts_on_one_side, in_axes=ax), xs),
                loop_vmap(converts_on_one_side, ax)(xs))


def test_a_group_whose_examples_alone_raise_raises_the_loops_error():
    def f(x):
        if x[0] < 0:
            return x * 2.0
        if float(x[1]) > 5.5:
            raise ZeroDivisionError("the loop's error")
        return x

    xs = _one_side_converts(12, 4)
    with pytest.raises(ZeroDivisionError, match="the loop's error"):
        loop_vmap(f)(xs)
    with pytest.raises(ZeroDivisionError, match="the loop's error"):
        _quiet(bt.vmap(f), xs)


def test_a_group_that_writes_into_shared_state_reruns_every_example():
    """A write into an array the caller shares with every example, met in a group's pass: not
    examples run alone beside the groups, but the per-example rerun, which writes as the loop."""
    def make():
        shared = np.zeros(3)

        def f(x):
            if x[0] < 0:
                return x * 2.0
            np.copyto(shared, x)
            return x
        return f, shared

    xs = _one_side_converts(64, 8)
    f, shared = make()
    with pytest.warns(bt.PerformanceWarning, match=PER_EXAMPLE):
        got = bt.vmap(f)(xs)
    g, want_shared = make()
    assert_same(got, loop_vmap(g)(xs))
    np.testing.assert_array_equal(shared, want_shared)


def test_nested_a_group_of_cells_that_needs_a_run_per_example():
    """Inside another vmap: the cells whose pass converts run once per example of the inner
    vmap (still batched over the outer one), the other group vectorised."""
    grid = np.stack([_one_side_converts(6, 2) for _ in range(3)])
    got = _quiet(bt.vmap(bt.vmap(converts_on_one_side)), grid)
    assert_same(got, loop_vmap(loop_vmap(converts_on_one_side))(grid))
    got = _quiet(bt.vmap(bt.vmap(converts_on_one_side), in_axes=1), np.swapaxes(grid, 0, 1))
    assert_same(got, loop_vmap(loop_vmap(converts_on_one_side), 1)(np.swapaxes(grid, 0, 1)))


# ---- a group's pass goes on with one side (GroupPass) -------------------------------------------
def test_a_group_pass_goes_on_with_the_larger_side_and_each_left_group_runs_once():
    """Where a group's examples disagree, its pass goes on with the side more of them took;
    the others each get one pass of their own: six step counts cost six passes, where
    starting every group over would cost two per step count (fewer than eight passes: no
    time is measured against the loop's)."""
    n = RNG.permutation(np.arange(200.0) % 6)
    f, calls = counted(count_down)
    with pytest.warns(bt.PerformanceWarning, match=GROUPS):
        got = bt.vmap(f)(n)
    assert_same(got, loop_vmap(count_down)(n))
    # the first pass, 16 examples timed alone, the examples that stop at once, the pass
    # that goes on, 4 groups left behind
    assert len(calls) <= 1 + 16 + 1 + 1 + 4


def split_first(x):
    """A first ``if`` that splits the batch by the sign of the last element: the groups'
    passes then meet the next disagreement, where they go on (the first pass stops at it)."""
    if x.flat[-1] > 0:
        return x + 0.0
    return x * 1.0


def log_batch(signs):
    """Examples of 3 elements about 1, the last one's sign given per example (``signs[i][1]``)
    and the first two times -2 where ``signs[i][0]`` is ``-`` (their sum is then negative)."""
    xs = 1.0 + 0.1 * np.abs(RNG.normal(size=(len(signs), 3)))
    xs[:, -1] *= [-1.0 if s[1] == "-" else 1.0 for s in signs]
    xs[:, :2] *= np.array([[-2.0 if s[0] == "-" else 1.0] for s in signs])
    return xs


#: per example: the sign of its first two elements, then of its last; each group of the
#: first split has more examples whose sum is positive
SIGNS_TWICE = ["++", "++", "-+", "++", "-+", "++", "+-", "+-", "--", "+-", "+-", "--"]


@pytest.mark.parametrize("mode", ["warn", "raise", "ignore"])
def test_floating_point_errors_of_the_examples_left_behind_stay_unseen(mode):
    """After the split the pass computes ``np.log`` of the sums of the examples that went the
    other way too; NumPy's floating-point error for those is noted, not shown, and the pass not used:
    the groups run again on their own, as the loop would, warning for none of them."""
    def f(x):
        x = split_first(x)
        if x.sum() > 0:
            return np.log(x.sum())
        return x.sum()

    xs = log_batch(SIGNS_TWICE)  # some go the other way and would meet log of a negative
    before = np.geterr(), np.geterrcall()
    with np.errstate(all=mode), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = bt.vmap(f, fallback="silent")(xs)
        assert (np.geterr(), np.geterrcall()) == (
            {"divide": mode, "over": mode, "under": mode, "invalid": mode}, before[1])
    assert not seen
    assert (np.geterr(), np.geterrcall()) == before
    assert_same(got, loop_vmap(f)(xs))


def test_a_floating_point_error_of_an_example_followed_still_warns():
    def f(x):
        x = split_first(x)
        if x.sum() >= 0:
            return np.log(x.sum())
        return x.sum()

    xs = log_batch(SIGNS_TWICE)
    xs[9] = [1.0, 1.0, -2.0]  # log(0): the loop warns for this example
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        got = _quiet(bt.vmap(f), xs)
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        assert_same(got, loop_vmap(f)(xs))
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        _quiet(bt.vmap(f), xs)


def test_an_error_of_an_example_left_behind_does_not_stop_the_others():
    """The examples left behind are singular: NumPy's inv raises for the whole batch, so
    the groups run again on their own, and the loop's inverses come back."""
    def f(m):
        m = split_first(m)
        if m[0, 0] > 0:
            return np.linalg.inv(m)
        return m * 0.0

    ms = RNG.normal(size=(12, 2, 2)) * 0.1 + 3.0 * np.eye(2)
    ms[6:, 1, 1] *= -1.0
    ms[[2, 5, 7, 11]] = [[-1.0, 0.0], [0.0, 0.0]]
    ms[[7, 11], 1, 1] = -1.0
    assert_same(_quiet(bt.vmap(f), ms), loop_vmap(f)(ms))


def newton_sqrt_rows(a):
    """newton_sqrt of a vector until all of it converged."""
    x = a
    while (np.abs(x * x - a) > 1e-12 * a).any():
        x = 0.5 * (x + a / x)
    return x


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_solver_over_every_layout_partial_and_nested(layout):
    a, ax = laid_out(10.0 ** RNG.uniform(-3, 3, size=(40, 3)), layout)
    assert_same(_quiet(bt.vmap(newton_sqrt_rows, in_axes=ax), a),
                loop_vmap(newton_sqrt_rows, ax)(a))
    scale = np.array([1.0, 4.0, 9.0])

    def scaled(a, s):
        return newton_sqrt_rows(a * s)

    assert_same(_quiet(bt.vmap(scaled, in_axes=(ax, None)), a, scale),
                loop_vmap(scaled, (ax, None))(a, scale))
    grid = 10.0 ** RNG.uniform(-3, 3, size=(4, 12))
    assert_same(_quiet(bt.vmap(bt.vmap(newton_sqrt)), grid),
                loop_vmap(loop_vmap(newton_sqrt))(grid))


def test_solvers_on_eight_threads():
    from loop_reference import on_threads

    data = [10.0 ** RNG.uniform(-4, 4, size=300) for _ in range(8)]
    before = np.geterr()

    def run(i):
        with np.errstate(invalid="raise"):
            assert_same(_quiet(bt.vmap(newton_sqrt), data[i]), loop_vmap(newton_sqrt)(data[i]))
            assert np.geterr()["invalid"] == "raise"

    on_threads(run)
    assert np.geterr() == before


def probes_truth(x):
    """Asks ``bool()`` inside a ``try``, as array-api-compat's ``is_lazy_array`` does, and
    takes another path where it raises."""
    x = split_first(x)
    try:
        lazy = not bool(x[0] > 0) and False
    except Exception:  # noqa: BLE001
        lazy = True
    return x * 2.0 if lazy else x + x


def test_a_truth_value_asked_inside_a_try_reruns_the_examples():
    """A ``bool()`` whose examples disagree inside the function's own ``try``: its ``except``
    goes on along a path no example of the loop takes (here by construction with the same
    values, in general not), so no pass that met it is used: the examples rerun one by one."""
    xs = log_batch(SIGNS_TWICE)
    f, calls = counted(probes_truth)
    with pytest.warns(bt.PerformanceWarning, match=PER_EXAMPLE):
        got = bt.vmap(f)(xs)
    assert_same(got, loop_vmap(probes_truth)(xs))


def _caught_disagreement(x):
    try:
        if x[0] > 0.5:
            return x * 2.0
        return x
    except Exception:  # noqa: BLE001  (a path no example takes: its values differ)
        return x + 100.0


def _caught_conversion(x):
    try:
        scale = float(x[0])
    except TypeError:
        scale = -1.0
    return x * scale


@pytest.mark.parametrize("f", [_caught_disagreement, _caught_conversion])
@pytest.mark.parametrize("nested", [False, True])
def test_an_error_the_function_catches_never_gives_its_result(f, nested):
    """Where the function's own ``except`` catches a batched value's refusal, the pass went
    on along a path no example takes: before this was noticed, both gave the except path's
    values (x + 100, x * -1) for every example."""
    xs = np.array([[0.0, 1.0], [1.0, 2.0], [3.0, 0.0], [0.2, 0.1]])
    g, want = f, loop_vmap(f)(xs)
    if nested:
        xs, g, want = np.stack([xs, xs[::-1]]), bt.vmap(f), np.stack([want, want[::-1]])
    with pytest.warns(bt.PerformanceWarning, match="own try/except caught the error"):
        got = bt.vmap(g)(xs)
    assert_same(got, want)
    with pytest.raises(TypeError, match="own try/except caught the error"):
        bt.vmap(g, fallback="error")(xs)


@pytest.mark.parametrize("block", ["with", "finally", "except in the body"])
def test_with_and_finally_blocks_pass_the_disagreement_on(block):
    """A ``with`` block's ``__exit__`` and a ``finally`` pass an exception on: a group's pass
    follows one side there."""
    def f(x):
        x = split_first(x)
        if block == "with":
            with np.errstate(over="ignore"):
                if x.sum() > 0:
                    return x.sum() * 2.0
        elif block == "finally":
            try:
                if x.sum() > 0:
                    return x.sum() * 2.0
            finally:
                pass
        else:
            try:
                raise KeyError(block)
            except KeyError:
                if x.sum() > 0:
                    return x.sum() * 2.0
        return x.sum()

    xs = log_batch(SIGNS_TWICE)
    g, calls = counted(f)
    got = _quiet(bt.vmap(g), xs)
    assert_same(got, loop_vmap(f)(xs))
    # the first pass, one example alone, two groups that each go on at the second `if`, and
    # the examples they left, two groups
    assert len(calls) == 1 + 1 + 2 + 2


def test_a_group_pass_follows_the_larger_side_while_it_holds_a_sixteenth_of_its_examples():
    from batchtensor.levels import GroupPass

    p = GroupPass()
    try:
        truth = np.arange(64) < 40
        assert p.agreed(truth) is None
        assert p.follow(truth) is True  # 40 of 64 said yes
        np.testing.assert_array_equal(p.active, np.arange(40))
        np.testing.assert_array_equal(p.left[0], np.arange(40, 64))
        assert p.agreed(np.arange(64) < 50) is True  # the 40 followed agree
        assert p.follow(np.arange(64) < 5) is False  # 5 say yes, 35 no (of those 40)
        np.testing.assert_array_equal(p.active, np.arange(5, 40))
        np.testing.assert_array_equal(p.left[1], np.arange(5))
        p.active = np.arange(5)  # say five were left
        # 3 against 2: following 3 of the pass's 64 examples does not pay; nothing changes
        assert p.follow(np.arange(64) >= 2) is None
        np.testing.assert_array_equal(p.active, np.arange(5))
        assert len(p.left) == 2
    finally:
        p.close()


def test_floating_point_settings_the_function_sets_last_beyond_it():
    """``np.seterr`` inside ``f`` (not a ``with`` block) lasts after it, as in the loop: a
    group's pass puts the caller's settings back only where ``f`` left its own in place."""
    def f(x):
        x = split_first(x)
        if x.sum() > 0:
            np.seterr(under="warn")
            return x.sum()
        return -x.sum()

    xs = log_batch(["--"] + SIGNS_TWICE[1:])  # (example 0, run alone first, sets nothing)
    with np.errstate(all="ignore"):
        loop_vmap(f)(xs)
        want = np.geterr()
    with np.errstate(all="ignore"):
        got = _quiet(bt.vmap(f), xs)
        assert np.geterr() == want == {**want, "under": "warn"}
    assert_same(got, loop_vmap(f)(xs))


def keyed_by_branch(x):
    """A dict whose keys the two branches insert in other orders: the loop reads them by key."""
    if x.sum() > 0:
        return {"a": x, "b": -x}
    return {"b": 10 * x, "a": x}


@pytest.mark.parametrize("size", [2, 6])
def test_dicts_built_in_other_key_orders_stack_by_key(size):
    xs = (np.abs(RNG.normal(size=(6, 3))) * SIGNS)[:size]
    want = loop_vmap(keyed_by_branch)(xs)
    got = _quiet(bt.vmap(keyed_by_branch), xs)
    assert_same(got, want)
    assert list(got) == list(want) == ["a", "b"]  # the first example's order, as the loop's
    chunked = _quiet(bt.vmap(keyed_by_branch, chunk_size=1), xs)  # chunks joined by key
    assert_same(chunked, want)
    assert list(chunked) == ["a", "b"]


def test_tuple_outputs_run_in_groups():
    """Results of other structures than one array are merged by their structure (equal
    structures compare equal), so the groups serve them instead of a rerun per example."""
    xs = np.abs(RNG.normal(size=(6, 4))) * SIGNS

    def f(x):
        if x.sum() > 0:
            return x * 2, x.sum()
        return -x, x.max()

    with pytest.warns(bt.PerformanceWarning, match=GROUPS):
        got = bt.vmap(f)(xs)
    assert_same(got, loop_vmap(f)(xs))


def test_dict_subclasses_in_and_out_keep_their_type():
    import collections

    xs = RNG.normal(size=(3, 2))

    def f(d):
        out = collections.defaultdict(list)
        out["y"] = d["x"] * 2
        return out

    arg = collections.defaultdict(list, x=xs)
    got = bt.vmap(f)(arg)
    assert type(got) is collections.defaultdict and got.default_factory is list
    np.testing.assert_array_equal(got["y"], xs * 2)
    od = bt.vmap(lambda d: collections.OrderedDict(b=d["b"], a=d["a"]))(
        collections.OrderedDict(a=xs, b=-xs))
    assert type(od) is collections.OrderedDict and list(od) == ["b", "a"]


# ---- nested vmaps: only the level whose examples disagree splits --------------------------------
def rows_and_columns(n_outer, n_inner, inner_signs=None, outer_signs=None):
    """A grid of examples of 4 values about 1, whose sum's sign is the product of a sign per
    inner example (the same in every row) and a sign per outer example."""
    grid = 1.0 + 0.1 * np.abs(RNG.normal(size=(n_outer, n_inner, 4)))
    if inner_signs is not None:
        grid *= np.reshape(inner_signs, (1, n_inner, 1))
    if outer_signs is not None:
        grid *= np.reshape(outer_signs, (n_outer, 1, 1))
    return grid


def mapped(grid, in_axes):
    """The grid of examples with both batch axes at ``in_axes`` (outer first)."""
    return grid if in_axes == 0 else np.moveaxis(grid, (0, 1), (-1, -2))


def test_nested_only_the_inner_level_disagrees_splits_the_inner_vmap():
    """Every outer example agrees, the inner ones do not: the outer function runs once, the
    inner vmap runs each of its two groups for every outer example at once."""
    grid = rows_and_columns(3, 6, inner_signs=[1, -1, 1, 1, -1, 1])
    f, calls = counted(branchy)
    outer, outer_calls = counted(bt.vmap(f))
    with pytest.warns(bt.PerformanceWarning, match=GROUPS):
        got = bt.vmap(outer)(grid)
    assert_same(got, loop_vmap(loop_vmap(branchy))(grid))
    assert len(outer_calls) == 1
    assert len(calls) == 1 + 2  # the first pass, then one pass per group


def test_nested_only_the_outer_level_disagrees_splits_the_outer_vmap():
    """A value of the outer level only, asked inside the inner vmap: the outer vmap splits its
    examples into groups, and the inner one runs vectorised in each."""
    def outer(x, ys):
        def inner(y):
            return y * 2.0 if x.sum() > 0 else -y
        return bt.vmap(inner)(ys)

    def outer_loop(x, ys):
        return loop_vmap(lambda y: y * 2.0 if x.sum() > 0 else -y)(ys)

    xs = rows_and_columns(6, 1, outer_signs=[1, -1, -1, 1, 1, -1])[:, 0]
    ys = RNG.normal(size=(6, 5, 3))
    g, calls = counted(outer)
    with pytest.warns(bt.PerformanceWarning, match=r"vmap\(outer\).*" + GROUPS):
        got = bt.vmap(g)(xs, ys)
    assert_same(got, loop_vmap(outer_loop)(xs, ys))
    assert len(calls) == 1 + 2


def sqrt_of_abs(x):
    return newton_sqrt_rows(np.abs(x) ** 7)  # the step count varies with the example


@pytest.mark.parametrize("in_axes", [0, -1])
@pytest.mark.parametrize("f", [branchy, nested_ifs, sqrt_of_abs, two_outputs],
                         ids=lambda f: f.__name__)
def test_nested_both_levels_disagree(f, in_axes):
    """Examples disagree along both levels (no two rows alike): the inner vmap runs each
    group of cells (one example of each level) for every outer example, only those cells
    followed, and puts the results back cell by cell; the outer function runs once."""
    grid = rows_and_columns(4, 5)
    grid *= np.where(RNG.random(size=(4, 5, 1)) < 0.5, -1.0, 1.0)
    grid[..., 1] *= np.where(RNG.random(size=(4, 5)) < 0.5, -1.0, 1.0)
    xs = mapped(grid, in_axes)
    outer, outer_calls = counted(bt.vmap(f, in_axes=in_axes))
    with pytest.warns(bt.PerformanceWarning, match=GROUPS):
        got = bt.vmap(outer, in_axes=in_axes)(xs)
    assert_same(got, loop_vmap(loop_vmap(f, in_axes), in_axes)(xs))
    assert len(outer_calls) == 1


@pytest.mark.parametrize("shape", [(1, 6), (6, 1), (1, 1), (2, 3)])
def test_nested_batches_of_one_and_a_few(shape):
    grid = rows_and_columns(*shape)
    grid *= np.where(RNG.random(size=shape + (1,)) < 0.5, -1.0, 1.0)
    got = _quiet(bt.vmap(bt.vmap(nested_ifs)), grid)
    assert_same(got, loop_vmap(loop_vmap(nested_ifs))(grid))


@pytest.mark.parametrize("shape", [(0, 3, 4), (3, 0, 4)])
def test_nested_batch_of_zero_raises_the_clear_error(shape):
    """No example at some level: there is no truth value to take, and the loop's np.stack of
    no results fails too."""
    with pytest.raises(bt.BatchingError, match="batch size 0"):
        _quiet(bt.vmap(bt.vmap(branchy)), np.zeros(shape))


def test_nested_three_levels_and_out_axes():
    grid = RNG.normal(size=(2, 3, 4, 3))

    def f(x):  # the second result is the same for every example of a branch
        if x.sum() > 0:
            return x * 2.0, 1.0
        return -x, 2.0

    got = _quiet(bt.vmap(bt.vmap(bt.vmap(f, out_axes=(1, None))), out_axes=1), grid)
    assert_same(got, loop_vmap(loop_vmap(loop_vmap(f, 0, (1, None))), 0, 1)(grid))


def test_nested_partial_and_a_value_of_the_outer_level_in_the_inner_function():
    """Unmapped arguments at each level, and a closure over an outer value that decides the
    branch together with the inner example."""
    w = RNG.normal(size=4)
    xs = RNG.normal(size=(5, 4))
    grid = RNG.normal(size=(5, 6, 4))

    def outer(x, ys, w):
        def inner(y, w):
            return nested_ifs(y + x * w)
        return bt.vmap(inner, in_axes=(0, None))(ys, w)

    def outer_loop(x, ys, w):
        return loop_vmap(lambda y, w: nested_ifs(y + x * w), (0, None))(ys, w)

    got = _quiet(bt.vmap(outer, in_axes=(0, 0, None)), xs, grid, w)
    assert_same(got, loop_vmap(outer_loop, (0, 0, None))(xs, grid, w))


def test_nested_fallback_error_raises_the_original_error():
    grid = rows_and_columns(3, 4, inner_signs=[1, -1, 1, -1])
    with pytest.raises(bt.BatchingError, match=r"np\.where"):
        bt.vmap(bt.vmap(branchy), fallback="error")(grid)


def test_nested_writes_into_the_arguments_reach_them_once():
    grid = rows_and_columns(3, 4, inner_signs=[1, -1, 1, -1])
    ref = grid.copy()
    got = _quiet(bt.vmap(bt.vmap(writes_then_branches)), grid)
    assert_same(got, loop_vmap(loop_vmap(writes_then_branches))(ref))
    np.testing.assert_array_equal(grid, ref)


def test_nested_floating_point_errors_of_cells_not_followed_stay_unseen():
    """A pass of some cells computes the others too, on a path they do not take (log of a
    negative sum): NumPy's error for those is noted, not raised."""
    def f(x):
        s = x.sum()
        if s > 0:
            return np.log(s)
        return s

    grid = rows_and_columns(4, 5)
    grid *= np.where(RNG.random(size=(4, 5, 1)) < 0.5, -1.0, 1.0)
    with np.errstate(all="raise"):
        got = _quiet(bt.vmap(bt.vmap(f)), grid)
        assert_same(got, loop_vmap(loop_vmap(f))(grid))


def test_nested_an_example_that_raises_raises_the_loops_error():
    def f(x):
        if x[0] > 1.05:
            raise ZeroDivisionError("the loop's error")
        return branchy(x)

    grid = rows_and_columns(3, 4)
    grid[1, 2, 0] = 2.0
    with pytest.raises(ZeroDivisionError, match="the loop's error"):
        _quiet(bt.vmap(bt.vmap(f)), grid)


def test_nested_randomness_draws_what_the_loop_draws():
    """Draws keyed by each example's index: no groups; every example draws its own numbers
    whichever branch it takes, as without the branch."""
    def f(x):
        noise = bt.random.default_rng(4).random(3)
        if x.sum() > 0:
            return noise + 1.0
        return noise - 1.0

    grid = rows_and_columns(3, 4, inner_signs=[1, -1, 1, -1], outer_signs=[1, 1, -1])
    got = _quiet(bt.vmap(bt.vmap(f, randomness="different"), randomness="different"), grid)
    noise = bt.vmap(bt.vmap(lambda x: bt.random.default_rng(4).random(3),
                            randomness="different"), randomness="different")(grid)
    np.testing.assert_array_equal(got, noise + np.sign(grid.sum(-1))[..., None])


def test_nested_explain_shows_the_groups():
    grid = rows_and_columns(3, 6, inner_signs=[1, -1, 1, 1, -1, 1])
    report = bt.explain(bt.vmap(branchy), grid)
    assert report.whole_function.startswith("vmap(branchy) ran on 2 groups")
    assert_same(report.result, loop_vmap(loop_vmap(branchy))(grid))


def test_nested_solvers_on_eight_threads():
    from loop_reference import on_threads

    data = [10.0 ** RNG.uniform(-4, 4, size=(6, 40)) for _ in range(8)]

    def run(i):
        assert_same(_quiet(bt.vmap(bt.vmap(newton_sqrt)), data[i]),
                    loop_vmap(loop_vmap(newton_sqrt))(data[i]))

    on_threads(run)


# ---- real library functions, nested --------------------------------------------------------------
def _library(module):
    return pytest.importorskip(module)


def _some_alike(u, v):
    """Boolean vectors, some pairs equal (yule divides by zero there: another branch)."""
    v[[0, 1, 1], [1, 0, 2]] = u[[0, 1, 1], [1, 0, 2]]
    return u, v


def _float32_table(rng):
    return ((rng.normal(size=(2, 3, 8, 3)) * 2.0
             + rng.uniform(-3, 3, size=(2, 3, 1, 3))).astype(np.float32),)


#: name -> (the library function called as written, the grids of its examples' arguments)
REAL_NESTED = {
    "scipy.stats.tvar": (
        lambda x: _library("scipy.stats").tvar(x, limits=(-1.5, 2.0)),
        lambda rng: (rng.normal(size=(2, 3, 12)),)),
    "scipy.stats.expon.logpdf": (
        lambda x, loc, scale: _library("scipy.stats").expon.logpdf(x, loc, scale),
        lambda rng: (rng.normal(size=(2, 3, 6)) + [[[3.0], [0.0], [3.0]], [[0.0], [3.0], [3.0]]],
                     rng.normal(size=(2, 3, 6)), np.abs(rng.normal(size=(2, 3, 6))) + 0.5)),
    "scipy.signal.windows.chebwin": (
        lambda at: _library("scipy.signal.windows").chebwin(51, at),
        lambda rng: (rng.uniform(40.0, 100.0, size=(2, 3)),)),
    "scipy.spatial.distance.yule": (
        lambda u, v: _library("scipy.spatial.distance").yule(u, v),
        lambda rng: _some_alike(rng.random(size=(2, 3, 8)) < 0.5,
                                rng.random(size=(2, 3, 8)) < 0.5)),
    "sklearn.preprocessing.scale": (
        lambda x: _library("sklearn.preprocessing").scale(x),
        # (float32: whether the centred data's mean is close to 0 differs per example, in
        # examples 0 and 5 of these)
        lambda rng: _float32_table(np.random.default_rng(6))),
}


@pytest.mark.parametrize("name", sorted(REAL_NESTED))
def test_nested_real_library_functions_run_in_groups(name):
    """Functions whose examples branch apart in the library's own code, under a vmap of a
    vmap: only the inner vmap splits, each group vectorised, and nothing reruns per example."""
    f, draw = REAL_NESTED[name]
    grids = draw(np.random.default_rng(5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = loop_vmap(loop_vmap(f))(*grids)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = bt.vmap(bt.vmap(f))(*grids)
    slow = [str(w.message) for w in seen if issubclass(w.category, bt.PerformanceWarning)]
    assert slow and all(GROUPS in m for m in slow), slow
    assert_same(got, want)
