"""SciPy's statistics in pure Python (``scipy.stats``): descriptive statistics, transforms,
correlations and hypothesis tests."""

from __future__ import annotations

import numpy as np

from .core import Entry
from .draw import normal, positive, shape_of

S = "scipy.stats"
FLOATS = (np.float64, np.float32)
#: one sample, and three columns of samples along axis 0
SIZES = (12, (12, 3))


def one(rng, dt, size):
    return (normal(rng, dt, size, loc=0.3, scale=1.5),)


def one_positive(rng, dt, size):
    return (positive(rng, dt, size, 0.2, 4.0),)


def two(rng, dt, size):
    return normal(rng, dt, size), normal(rng, dt, size, loc=0.4, scale=1.3)


def two_related(rng, dt, size):
    x = normal(rng, dt, size)
    return x, (0.6 * x + normal(rng, dt, size, scale=0.8)).astype(dt)


def three(rng, dt, size):
    return (normal(rng, dt, size), normal(rng, dt, size, loc=0.5),
            normal(rng, dt, size, scale=2.0))


def ints(rng, dt, size):
    return (rng.integers(0, 4, shape_of(size)).astype(dt),)


def angles(rng, dt, size):
    return (rng.vonmises(rng.uniform(-3, 3), 2.0, shape_of(size)).astype(dt),)


def sample_and_score(rng, dt, size):
    return normal(rng, dt, size), np.asarray(rng.uniform(-1, 1)).astype(dt)


def lmbda_and_data(rng, dt, size):
    return np.asarray(rng.uniform(-1, 2)).astype(dt), positive(rng, dt, size)


def counts(rng, dt, size):
    """Observed and expected counts with one total (60), as the tests require."""
    k = shape_of(size)[0]
    f_obs = rng.multinomial(60, np.full(k, 1 / k)).astype(dt)
    return f_obs, (rng.dirichlet(np.full(k, 5.0)) * 60).astype(dt)


def probs(rng, dt, size):
    return (rng.dirichlet(np.ones(shape_of(size)[0])).astype(dt),)


def two_probs(rng, dt, size):
    return probs(rng, dt, size) + probs(rng, dt, size)


def quantile_sample(rng, dt, size):
    return normal(rng, dt, size), rng.uniform(0, 1, 4).astype(dt)


def labelled(rng, dt, size):
    x = rng.permutation(np.arange(shape_of(size)[0]) % 2).astype(bool)
    return x, (normal(rng, dt, size) + x).astype(dt)


def _s(attr, gen=one, label="", sizes=SIZES, dtypes=FLOATS, shared=None, rtol=None, **kw):
    return Entry(S, attr, gen, dtypes=dtypes, sizes=sizes, kwargs=kw, label=label,
                 shared=shared, rtol=rtol)


DESCRIPTIVE = [
    _s("describe"),
    _s("gmean", one_positive),
    _s("hmean", one_positive),
    _s("pmean", one_positive, p=1.5),
    _s("mode", ints, dtypes=(np.int64, np.float64)),
    _s("tmean", limits=(-1.0, 1.5)),
    _s("tvar", limits=(-1.5, 2.0)),
    _s("tmin", lowerlimit=-0.5),
    _s("tmax", upperlimit=1.0),
    _s("tstd", limits=(-1.5, 2.0)),
    _s("tsem", limits=(-1.5, 2.0)),
    _s("moment", order=3),
    _s("skew"),
    _s("kurtosis"),
    _s("variation"),
    _s("iqr", axis=0),
    _s("sem"),
    _s("zscore"),
    _s("zmap", two),
    _s("gzscore", one_positive),
    _s("median_abs_deviation"),
    _s("entropy", probs, sizes=(6,)),
    _s("entropy", two_probs, label="relative", sizes=(6,)),
    _s("differential_entropy", sizes=(12,)),
    _s("trim_mean", proportiontocut=0.1),
    _s("rankdata", ints, dtypes=(np.int64, np.float64), sizes=(9, (9, 2)), axis=0),
    _s("percentileofscore", sample_and_score, sizes=(12,)),
    _s("scoreatpercentile", sizes=(12,), per=30),
    _s("cumfreq", sizes=(12,), numbins=4, defaultreallimits=(-4.0, 4.0)),
    _s("relfreq", sizes=(12,), numbins=4, defaultreallimits=(-4.0, 4.0)),
    _s("tiecorrect", ints, dtypes=(np.float64,), sizes=(10,)),
    _s("kstat", sizes=(12,), n=3),
    _s("kstatvar", sizes=(12,)),
    _s("trimboth", proportiontocut=0.2),
    _s("trim1", proportiontocut=0.2),
    _s("lmoment", sizes=(12,)),
    _s("expectile", sizes=(12,), alpha=0.3),
    _s("quantile", quantile_sample, sizes=(12,)),
    _s("circmean", angles, axis=0),
    _s("circvar", angles, axis=0),
    _s("circstd", angles, axis=0),
    _s("boxcox", one_positive, sizes=(12,), lmbda=0.5),
    _s("boxcox", one_positive, label="mle", sizes=(12,), dtypes=(np.float64,), rtol=1e-6),
    _s("boxcox_llf", lmbda_and_data, shared=(1,)),
    _s("yeojohnson", sizes=(12,), lmbda=0.5),
    _s("yeojohnson_llf", lmbda_and_data, shared=(1,)),
    _s("obrientransform", two, sizes=(12,), dtypes=(np.float64,)),
    _s("binned_statistic", two, sizes=(12,), bins=4, range=(-4.0, 4.0)),
]

TESTS = [
    _s("ttest_ind", two),
    _s("ttest_1samp", sample_and_score, sizes=(12,)),
    _s("ttest_rel", two_related),
    _s("wilcoxon", two_related, sizes=(12,)),
    _s("mannwhitneyu", two),
    _s("ks_2samp", two, sizes=(12,)),
    _s("kstest", sizes=(12,), cdf="norm"),
    _s("chisquare", counts, sizes=(6,), dtypes=(np.float64,)),
    _s("power_divergence", counts, sizes=(6,), dtypes=(np.float64,),
       lambda_="log-likelihood"),
    _s("f_oneway", three),
    _s("kruskal", three),
    _s("friedmanchisquare", three, sizes=(12,)),
    _s("levene", three),
    _s("bartlett", three),
    _s("fligner", three),
    _s("shapiro", sizes=(12,)),
    _s("normaltest", sizes=(24,)),
    _s("skewtest", sizes=(12,)),
    _s("kurtosistest", sizes=(24,)),
    _s("jarque_bera", sizes=(12,)),
    _s("ansari", two, sizes=(12,)),
    _s("mood", two, sizes=(12,)),
    _s("brunnermunzel", two, sizes=(12,)),
    _s("epps_singleton_2samp", two, sizes=(12,), rtol=1e-8),
    _s("energy_distance", two, sizes=(12,)),
    _s("wasserstein_distance", two, sizes=(12,)),
    _s("pearsonr", two_related),
    _s("spearmanr", two_related, sizes=(12,)),
    _s("kendalltau", two_related, sizes=(12,)),
    _s("weightedtau", two_related, sizes=(12,)),
    _s("chatterjeexi", two_related, sizes=(12,)),
    _s("pointbiserialr", labelled, sizes=(12,), dtypes=(np.float64,)),
    _s("linregress", two_related, sizes=(12,)),
    _s("theilslopes", two_related, sizes=(12,)),
    _s("siegelslopes", two_related, sizes=(12,)),
]

ENTRIES = DESCRIPTIVE + TESTS
