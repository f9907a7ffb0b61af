"""scikit-learn's preprocessing functions (``sklearn.preprocessing``)."""

from __future__ import annotations

import numpy as np

from .core import Entry
from .draw import labels, normal, positive

P = "sklearn.preprocessing"
FLOATS = (np.float64, np.float32)
#: (samples, features); a single feature is the edge shape
SIZES = ((8, 3), (6, 1))


def table(rng, dt, size):
    return (normal(rng, dt, size, scale=2.0) + rng.uniform(-3, 3, size[1]).astype(dt),)


def table_positive(rng, dt, size):
    return (positive(rng, dt, size, 0.2, 5.0),)


def _p(attr, gen=table, label="", sizes=SIZES, dtypes=FLOATS, **kw):
    return Entry(P, attr, gen, dtypes=dtypes, sizes=sizes, kwargs=kw, label=label)


ENTRIES = [
    _p("scale"),
    _p("scale", label="axis=1", sizes=((8, 3),), axis=1, with_std=False),
    _p("normalize"),
    _p("normalize", label="l1", norm="l1"),
    _p("normalize", label="max,axis=0", norm="max", axis=0),
    _p("minmax_scale", feature_range=(-1, 1)),
    _p("maxabs_scale"),
    _p("robust_scale"),
    _p("robust_scale", label="quantile_range", quantile_range=(10.0, 90.0), with_centering=False),
    _p("quantile_transform", n_quantiles=5, output_distribution="uniform"),
    _p("quantile_transform", label="normal", n_quantiles=5, output_distribution="normal"),
    _p("power_transform", sizes=SIZES[:1], method="yeo-johnson"),
    _p("power_transform", label="box-cox", gen=table_positive, sizes=SIZES[:1],
       method="box-cox"),
    _p("binarize", threshold=0.5),
    _p("add_dummy_feature", value=2.0),
    Entry(P, "label_binarize", lambda rng, dt, n: (labels(rng, dt, n),),
          dtypes=(np.int64, np.int32), sizes=(7,), kwargs={"classes": [0, 1, 2]}),
]
