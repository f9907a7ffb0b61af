"""SciPy's statistics of masked data (``scipy.stats.mstats``): each function wraps its input
in a masked array (``np.ma.asarray``, ``np.ma.masked_invalid``) and computes on it."""

from __future__ import annotations

import numpy as np

from .core import Entry
from .scipy_stats import one, one_positive, three, two, two_related

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
    # one sample (1-d, or along axis 0 of a 2-d sample where the function takes an axis)
    _m("describe"),
    _m("moment", moment=3),
    _m("skewtest", sizes=(12,)),
    _m("kurtosistest", sizes=(24,)),
    _m("normaltest", sizes=(24,)),
    _m("scoreatpercentile", sizes=(12,), per=30.0),
    _m("trim", limits=(0.1, 0.2)),
    _m("trima", limits=(-1.0, 1.0)),
    _m("trimr", limits=(0.1, 0.1)),
    _m("trimtail", proportiontocut=0.2),
    _m("trimmed_stde", limits=(0.1, 0.1)),
    _m("hdmedian", sizes=(12,)),
    _m("hdquantiles", sizes=(12,), prob=(0.25, 0.5, 0.75)),
    _m("hdquantiles_sd", sizes=(12,), prob=(0.25, 0.5)),
    _m("mquantiles_cimj", sizes=(12,), prob=(0.25, 0.75)),
    _m("median_cihs", sizes=(12,)),
    _m("mjci", sizes=(12,), prob=(0.25, 0.5)),
    _m("rsh", sizes=(12,)),
    _m("msign"),
    _m("plotting_positions", sizes=(12,)),
    _m("obrientransform", sizes=(12,)),
    _m("ttest_1samp", sizes=(12,), popmean=0.2),
    _m("ttest_onesamp", sizes=(12,), popmean=0.2),
    _m("chisquare", one_positive, sizes=(12,)),
    # two or three samples
    _m("ttest_ind", two, sizes=(12,)),
    _m("ttest_rel", two_related, sizes=(12,)),
    _m("mannwhitneyu", two, sizes=(12,)),
    _m("ks_2samp", two, sizes=(12,)),
    _m("ks_twosamp", two, sizes=(12,)),
    _m("kendalltau", two, sizes=(12,)),
    _m("pointbiserialr", two, sizes=(12,)),
    _m("linregress", two_related, sizes=(12,)),
    _m("theilslopes", two_related, sizes=(12,)),
    _m("siegelslopes", two_related, sizes=(12,)),
    _m("brunnermunzel", two, sizes=(12,)),
    _m("compare_medians_ms", two, sizes=(12,)),
    _m("f_oneway", three, sizes=(12,)),
    _m("kruskal", three, sizes=(12,)),
    _m("friedmanchisquare", three, sizes=(12,)),
    _m("zmap", two, sizes=(12,)),
]
