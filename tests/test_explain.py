"""``bt.explain``: the path each op took in one vmap call, and how the function ran as a
whole; its result is the vmap's, checked against the loop."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from loop_reference import assert_same, loop_vmap

import batchtensor as bt

RNG = np.random.default_rng(31)


def mlp(x, w):
    return np.tanh(w @ x).sum()


def test_a_vectorised_function_lists_each_op_once_with_its_path():
    xs, w = RNG.normal(size=(5, 3)), RNG.normal(size=(4, 3))
    report = bt.explain(mlp, xs, w, in_axes=(0, None))
    assert_same(report.result, loop_vmap(mlp, (0, None))(xs, w))
    assert report.whole_function == "vectorised in one pass"
    assert [(r.op, r.path, r.calls) for r in report.ops] == [
        ("numpy.matmul", "rule", 1), ("numpy.tanh", "boxed", 1), ("numpy.sum", "boxed", 1)]
    assert all(r.note == "" for r in report.ops)
    assert all(0.0 <= r.share <= 1.0 and r.seconds >= 0.0 for r in report.ops)
    assert sum(r.share for r in report.ops) <= 1.0 + 1e-9


def test_calls_are_counted_per_op_and_path():
    def f(x):
        for _ in range(3):
            x = np.sin(x) + 1.0
        return x

    report = bt.explain(f, RNG.normal(size=(4, 2)))
    calls = {(r.op, r.path): r.calls for r in report.ops}
    assert calls == {("numpy.sin", "boxed"): 3, ("numpy.add", "boxed"): 3}


def test_the_per_op_loop_says_why_and_how_to_add_a_rule():
    guessed = np.vectorize(lambda a: a * 2.0)  # no otypes: no rule

    def first_positive(x):
        return guessed(x)[:1]

    xs = np.array([[0.0, 1.0, -1.0], [1.0, 0.0, -1.0], [-2.0, -2.0, 3.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # explain shows no PerformanceWarning: it says it all
        report = bt.explain(first_positive, xs)
    (row,) = [r for r in report.ops if r.op == "numpy.vectorize.__call__"]
    assert row.path == "per-op loop" and row.calls == 1
    assert row.note.startswith("np.vectorize without otypes") and "bt.batch_rule" in row.note
    assert report.whole_function == "vectorised in one pass, 1 op through the per-op loop"
    assert_same(report.result, loop_vmap(first_positive)(xs))


def test_a_batched_argument_a_rule_takes_as_plain_says_so():
    def f(x):
        with np.errstate(invalid="ignore"):  # (a negative period)
            return np.unwrap(x, period=np.abs(x).sum())  # a batched period: no rule takes it

    xs = RNG.normal(size=(3, 4))
    report = bt.explain(f, xs)
    (row,) = [r for r in report.ops if r.path == "per-op loop"]
    assert row.op == "numpy.unwrap"
    assert row.note.startswith("a batched value sits in an argument that the op's rule takes")
    with np.errstate(invalid="ignore"):
        assert_same(report.result, loop_vmap(f)(xs))


def test_a_rerun_once_per_example_is_named_with_its_reason_and_line():
    def f(x):
        return np.full(2, float(x.sum()))

    xs = RNG.normal(size=(4, 3))
    report = bt.explain(f, xs)
    assert report.whole_function.startswith("vmap(f) reran once per example: ")
    assert "float()" in report.whole_function
    assert "float(x.sum())" in report.whole_function  # the user's line
    assert_same(report.result, loop_vmap(f)(xs))


def test_groups_of_examples_that_branch_alike_are_named_with_their_number():
    def newton_sqrt(a):
        x = a
        while np.abs(x * x - a) > 1e-12 * a:
            x = 0.5 * (x + a / x)
        return x

    a = np.array([4.0, 2.0, 9.0, 2.0, 0.25, 4.0, 100.0, 3.0])
    report = bt.explain(newton_sqrt, a)
    assert report.whole_function.startswith("vmap(newton_sqrt) ran on ")
    assert "groups of examples that branch alike" in report.whole_function
    assert_same(report.result, loop_vmap(newton_sqrt)(a))


def test_the_table_prints_a_header_and_a_row_per_op():
    report = bt.explain(mlp, RNG.normal(size=(2, 3)), np.ones((4, 3)), in_axes=(0, None))
    text = str(report)
    lines = text.splitlines()
    assert lines[0].startswith("vectorised in one pass (")
    assert lines[1].split() == ["op", "path", "calls", "time", "share", "note"]
    assert [line.split()[:3] for line in lines[2:]] == [
        ["numpy.matmul", "rule", "1"], ["numpy.tanh", "boxed", "1"], ["numpy.sum", "boxed", "1"]]
    assert repr(report) == text


def test_an_error_of_the_call_is_raised_and_the_log_closed():
    from batchtensor.registry import RECORDERS

    with pytest.raises(ValueError, match="sizes"):
        bt.explain(mlp, np.ones((2, 3)), np.ones((4, 3)), in_axes=(0, 0))
    assert RECORDERS == []


def test_only_the_calling_threads_calls_count():
    """Another thread's vmap runs while explain does: its calls are not in the table."""
    import threading
    import time

    started, done = threading.Event(), threading.Event()

    def busy():
        started.set()
        while not done.is_set():
            bt.vmap(lambda x: np.cos(x) * 2.0)(np.ones((3, 2)))

    def slow(x):
        for _ in range(5):
            x = np.sin(x)
            time.sleep(0.002)  # the other thread runs meanwhile
        return x

    worker = threading.Thread(target=busy)
    worker.start()
    started.wait()
    try:
        report = bt.explain(slow, RNG.normal(size=(5, 3)))
    finally:
        done.set()
        worker.join()
    assert [(r.op, r.calls) for r in report.ops] == [("numpy.sin", 5)]
