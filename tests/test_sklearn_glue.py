"""scikit-learn's classification metrics called as they are, vectorised: the count of a
selection in a truth test and ``np.bincount`` of it (``multilabel_confusion_matrix``), and
``set()`` of the unique labels in a nested vmap (``unique_labels``); against the loop."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

import batchtensor as bt
from loop_reference import assert_same, loop_vmap

metrics = pytest.importorskip("sklearn.metrics", reason="scikit-learn is a test extra")

RNG = np.random.default_rng(5)
CLASSES = [0, 1, 2]

FUNCTIONS = {
    "multilabel_confusion_matrix": functools.partial(metrics.multilabel_confusion_matrix,
                                                     labels=CLASSES),
    "recall_score": functools.partial(metrics.recall_score, average=None, labels=CLASSES),
    "precision_recall_fscore_support": functools.partial(
        metrics.precision_recall_fscore_support, average=None, labels=CLASSES),
    "jaccard_score": functools.partial(metrics.jaccard_score, average="macro"),
    "accuracy_score": metrics.accuracy_score,
    "hamming_loss": metrics.hamming_loss,
}


def two_labels(batch, n=12, dtype=np.int64):
    """Every class in every example's y_true and y_pred (the labels sklearn infers agree)."""
    t = RNG.integers(0, 3, (batch, n)).astype(dtype)
    p = RNG.integers(0, 3, (batch, n)).astype(dtype)
    t[:, :3] = p[:, :3] = CLASSES
    return t, p


def run_vectorised(f, *args, in_axes=0):
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        return bt.vmap(f, in_axes, fallback="error")(*args)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_vectorised_as_the_loop(name, dtype):
    f = FUNCTIONS[name]
    t, p = two_labels(5, dtype=dtype)
    assert_same(run_vectorised(f, t, p), loop_vmap(f)(t, p))
    tt, pt = np.ascontiguousarray(t.T), np.ascontiguousarray(p.T)
    assert_same(run_vectorised(f, tt, pt, in_axes=-1), loop_vmap(f, -1)(tt, pt))
    assert_same(run_vectorised(f, t, p[0], in_axes=(0, None)), loop_vmap(f, (0, None))(t, p[0]))


@pytest.mark.parametrize("name", ["multilabel_confusion_matrix", "recall_score"])
def test_an_unbatched_y_true_indexed_by_a_batched_mask_reruns(name):
    """``y_true[tp]`` with y_true plain and tp batched: NumPy converts the index itself and
    never asks vmap, so the function runs once per example."""
    f = FUNCTIONS[name]
    t, p = two_labels(4)
    with pytest.warns(bt.PerformanceWarning, match="once per example"):
        got = bt.vmap(f, (None, 0))(t[0], p)
    assert_same(got, loop_vmap(f, (None, 0))(t[0], p))


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_nested_vmap(name):
    f = FUNCTIONS[name]
    t, p = two_labels(6)
    t, p = t.reshape(2, 3, -1), p.reshape(2, 3, -1)
    assert_same(run_vectorised(bt.vmap(f), t, p), loop_vmap(loop_vmap(f))(t, p))


@pytest.mark.parametrize("name", ["multilabel_confusion_matrix", "accuracy_score"])
def test_one_example(name):
    f = FUNCTIONS[name]
    t, p = two_labels(1)
    assert_same(run_vectorised(f, t, p), loop_vmap(f)(t, p))


def test_sample_weight_selected_with_the_true_positives():
    def f(t, p, w):
        return metrics.multilabel_confusion_matrix(t, p, sample_weight=w, labels=CLASSES)

    t, p = two_labels(4)
    w = RNG.uniform(size=t.shape)
    assert_same(run_vectorised(f, t, p, w), loop_vmap(f)(t, p, w))
    assert_same(run_vectorised(f, t[0], p[0], w, in_axes=(None, None, 0)),
                loop_vmap(f, (None, None, 0))(t[0], p[0], w))


def test_an_example_without_true_positives_runs_in_its_own_group():
    f = FUNCTIONS["multilabel_confusion_matrix"]
    t, p = two_labels(4)
    t[2], p[2] = [0, 1, 2] * 4, [1, 2, 0] * 4  # no prediction right: sklearn's other branch
    with pytest.raises(bt.BatchingError):
        bt.vmap(f, fallback="error")(t, p)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(f)(t, p)
    assert_same(got, loop_vmap(f)(t, p))
