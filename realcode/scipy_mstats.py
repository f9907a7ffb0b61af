"""SciPy's statistics of masked data (``scipy.stats.mstats``): each function wraps its input
in a masked array (``np.ma.asarray``, ``np.ma.masked_invalid``) and computes on it."""

from __future__ import annotations

import numpy as np

from .core import Entry
from .scipy_stats import one, one_positive, two

M = "scipy.stats.mstats"
FLOATS = (np.float64, np.float32)
SIZES = (12, (12, 3))


def _m(attr, gen=one, label="", sizes=SIZES, dtypes=FLOATS, rtol=None, **kw):
    return Entry(M, attr, gen, dtypes=dtypes, sizes=sizes, kwargs=kw, label=label, rtol=rtol)


ENTRIES = [
    _m("gmean", one_positive),
    _m("hmean", one_positive),
    _m("tmean", limits=(-1.0, 1.0)),
    _m("tvar", limits=(-1.0, 1.0)),
    _m("tmin", lowerlimit=-1.0),
    _m("tmax", upperlimit=1.0),
    _m("tsem"),
    _m("trimmed_mean", limits=(0.1, 0.1)),
    _m("trimmed_std", limits=(0.1, 0.1)),
    _m("trimmed_var", limits=(0.1, 0.1)),
    _m("trimboth", proportiontocut=0.2),
    _m("winsorize", limits=(0.1, 0.1)),
    _m("skew"),
    _m("kurtosis"),
    _m("variation", one_positive),
    _m("sem"),
    _m("zscore"),
    _m("mquantiles", sizes=(12,), prob=(0.25, 0.5, 0.75)),
    _m("idealfourths", sizes=(12,)),
    _m("rankdata", sizes=(12,)),
    _m("pearsonr", two, sizes=(12,)),
    _m("spearmanr", two, sizes=(12,)),
]
