"""scikit-learn's metrics (``sklearn.metrics``): classification, ranking, regression and
clustering scores, called as they are."""

from __future__ import annotations

import numpy as np

from .core import Entry
from .draw import binary, labels, normal, onehot_scores, positive, probabilities

M = "sklearn.metrics"
INTS = (np.int64, np.int32)
FLOATS = (np.float64, np.float32)
CLASSES = [0, 1, 2]


def two_labels(rng, dt, n):
    return labels(rng, dt, n), labels(rng, dt, n)


def two_binary(rng, dt, n):
    return binary(rng, dt, n), binary(rng, dt, n)


def labels_and_probabilities(rng, dt, n):
    return labels(rng, np.int64, n), probabilities(rng, dt, n, 3)


def binary_and_scores(rng, dt, n):
    return binary(rng, np.int64, n), rng.uniform(0.01, 0.99, n).astype(dt)


def signed_and_decision(rng, dt, n):
    return 2 * binary(rng, np.int64, n) - 1, normal(rng, dt, n)


def multilabel(rng, dt, n):
    return onehot_scores(rng, dt, n, 4)


def relevance(rng, dt, n):
    return rng.integers(0, 4, (n, 5)).astype(dt), rng.uniform(size=(n, 5)).astype(dt)


def topk(rng, dt, n):
    return labels(rng, np.int64, n), rng.uniform(size=(n, 3)).astype(dt)


def two_normal(rng, dt, size):
    return normal(rng, dt, size), normal(rng, dt, size)


def two_positive(rng, dt, size):
    return positive(rng, dt, size), positive(rng, dt, size)


def points_and_labels(rng, dt, n):
    y = labels(rng, np.int64, n)
    return normal(rng, dt, (n, 2)) + 3.0 * y[:, None].astype(dt), y


def _cls(attr, label="", **kw):
    return Entry(M, attr, two_labels, dtypes=INTS, sizes=(12,), kwargs=kw, label=label)


def _reg(attr, label="", gen=two_normal, sizes=(10, (10, 2)), **kw):
    return Entry(M, attr, gen, dtypes=FLOATS, sizes=sizes, kwargs=kw, label=label)


ENTRIES = [
    # classification
    _cls("accuracy_score"),
    _cls("balanced_accuracy_score"),
    _cls("cohen_kappa_score"),
    _cls("confusion_matrix", labels=CLASSES),
    _cls("f1_score", average="macro"),
    _cls("fbeta_score", beta=0.5, average="weighted"),
    _cls("precision_score", average="micro"),
    _cls("recall_score", average=None, labels=CLASSES),
    _cls("jaccard_score", average="macro"),
    _cls("hamming_loss"),
    _cls("matthews_corrcoef"),
    _cls("zero_one_loss"),
    _cls("precision_recall_fscore_support", average=None, labels=CLASSES),
    _cls("multilabel_confusion_matrix", labels=CLASSES),
    Entry(M, "class_likelihood_ratios", two_binary, dtypes=INTS, sizes=(16,)),
    Entry(M, "log_loss", labels_and_probabilities, dtypes=FLOATS, sizes=(12,),
          kwargs={"labels": CLASSES}),
    Entry(M, "d2_log_loss_score", labels_and_probabilities, dtypes=FLOATS, sizes=(12,),
          kwargs={"labels": CLASSES}),
    Entry(M, "brier_score_loss", binary_and_scores, dtypes=FLOATS, sizes=(12,)),
    Entry(M, "hinge_loss", signed_and_decision, dtypes=FLOATS, sizes=(12,)),
    Entry(M, "roc_auc_score", binary_and_scores, dtypes=FLOATS, sizes=(12,)),
    Entry(M, "average_precision_score", binary_and_scores, dtypes=FLOATS, sizes=(12,)),
    Entry(M, "top_k_accuracy_score", topk, dtypes=FLOATS, sizes=(12,),
          kwargs={"k": 2, "labels": CLASSES}),
    # ranking
    Entry(M, "dcg_score", relevance, dtypes=FLOATS, sizes=(4,)),
    Entry(M, "ndcg_score", relevance, dtypes=FLOATS, sizes=(4,)),
    Entry(M, "label_ranking_average_precision_score", multilabel, dtypes=FLOATS, sizes=(6,)),
    Entry(M, "label_ranking_loss", multilabel, dtypes=FLOATS, sizes=(6,)),
    Entry(M, "coverage_error", multilabel, dtypes=FLOATS, sizes=(6,)),
    # regression
    _reg("mean_absolute_error"),
    _reg("mean_squared_error"),
    _reg("root_mean_squared_error"),
    _reg("mean_squared_log_error", gen=two_positive),
    _reg("root_mean_squared_log_error", gen=two_positive),
    _reg("median_absolute_error"),
    _reg("mean_absolute_percentage_error"),
    _reg("r2_score"),
    _reg("r2_score", label="raw_values", sizes=((10, 2),), multioutput="raw_values"),
    _reg("explained_variance_score"),
    _reg("max_error", sizes=(10,)),
    _reg("mean_pinball_loss", alpha=0.3),
    _reg("mean_poisson_deviance", gen=two_positive, sizes=(10,)),
    _reg("mean_gamma_deviance", gen=two_positive, sizes=(10,)),
    _reg("mean_tweedie_deviance", gen=two_positive, sizes=(10,), power=1.5),
    _reg("d2_tweedie_score", gen=two_positive, sizes=(10,), power=1.5),
    _reg("d2_pinball_score", alpha=0.3),
    _reg("d2_absolute_error_score"),
    # clustering
    _cls("adjusted_rand_score"),
    _cls("rand_score"),
    _cls("adjusted_mutual_info_score"),
    _cls("normalized_mutual_info_score"),
    _cls("mutual_info_score"),
    _cls("homogeneity_score"),
    _cls("completeness_score"),
    _cls("v_measure_score"),
    _cls("homogeneity_completeness_v_measure"),
    _cls("fowlkes_mallows_score"),
    _cls("cluster.pair_confusion_matrix"),
    Entry(M, "silhouette_score", points_and_labels, dtypes=FLOATS, sizes=(12,)),
    Entry(M, "silhouette_samples", points_and_labels, dtypes=FLOATS, sizes=(12,)),
    Entry(M, "calinski_harabasz_score", points_and_labels, dtypes=FLOATS, sizes=(12,)),
    Entry(M, "davies_bouldin_score", points_and_labels, dtypes=FLOATS, sizes=(12,)),
]
