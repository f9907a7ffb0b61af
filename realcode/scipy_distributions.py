"""Methods of SciPy's distributions (``scipy.stats.<dist>.<method>``): densities, CDFs,
quantiles and moments with the data and the shape parameters mapped."""

from __future__ import annotations

import numpy as np

from .core import Entry
from .draw import shape_of

S = "scipy.stats"
FLOATS = (np.float64, np.float32)
#: several points and one (0-d) point
SIZES = (6, ())


def _draw(rng, kind: str, dt, shape):
    """One argument: ``x`` anywhere on the line, ``+`` positive, ``u`` in (0, 1), ``k``
    counts, ``s`` a (0-d) location-like scalar, ``p`` a positive scalar, ``q`` a scalar
    in (0, 1), ``n`` an integer scalar."""
    if kind == "x":
        return (rng.standard_normal(shape) * 1.5).astype(dt)
    if kind == "+":
        return rng.uniform(0.05, 4.0, shape).astype(dt)
    if kind == "u":
        return rng.uniform(0.02, 0.98, shape).astype(dt)
    if kind == "k":
        return rng.integers(0, 8, shape).astype(dt)
    if kind == "s":
        return np.asarray(rng.uniform(-1, 1)).astype(dt)
    if kind == "p":
        return np.asarray(rng.uniform(0.5, 3.0)).astype(dt)
    if kind == "q":
        return np.asarray(rng.uniform(0.1, 0.9)).astype(dt)
    if kind == "n":
        return np.asarray(rng.integers(8, 15)).astype(dt)
    raise ValueError(kind)


def args(*kinds: str):
    """A generator of one example: the first kind drawn at the case's shape, the rest 0-d."""
    def gen(rng, dt, size):
        shape = shape_of(size)
        return tuple(_draw(rng, k, dt, shape if j == 0 else ()) for j, k in enumerate(kinds))
    gen.__name__ = "args_" + "".join(kinds)
    return gen


def _d(attr, gen, label="", sizes=SIZES, dtypes=FLOATS, shared=None, rtol=None, **kw):
    return Entry(S, attr, gen, dtypes=dtypes, sizes=sizes, kwargs=kw, label=label,
                 shared=shared, rtol=rtol)


def mvn(rng, dt, size):
    n, d = size
    a = rng.standard_normal((d, d))
    return (rng.standard_normal((n, d)).astype(dt), rng.standard_normal(d).astype(dt),
            (a @ a.T + d * np.eye(d)).astype(dt))


def simplex(rng, dt, size):
    k = shape_of(size)[0]
    return rng.dirichlet(np.ones(k)).astype(dt), rng.uniform(0.5, 3.0, k).astype(dt)


def sample(rng, dt, size):
    return ((rng.standard_normal(shape_of(size)) * 2 + 1).astype(dt),)


ENTRIES = [
    # continuous
    _d("norm.pdf", args("x", "s", "p")),
    _d("norm.logpdf", args("x", "s", "p")),
    _d("norm.cdf", args("x", "s", "p")),
    _d("norm.logcdf", args("x", "s", "p")),
    _d("norm.sf", args("x", "s", "p")),
    _d("norm.ppf", args("u", "s", "p")),
    _d("norm.isf", args("u", "s", "p")),
    _d("norm.interval", args("q", "s", "p"), sizes=((),)),
    _d("norm.entropy", args("s", "p"), sizes=((),)),
    _d("norm.fit", sample, sizes=(10,)),
    _d("expon.logpdf", args("+", "s", "p")),
    _d("expon.fit", sample, sizes=(10,)),
    _d("uniform.cdf", args("x", "s", "p")),
    _d("gamma.pdf", args("+", "p")),
    _d("gamma.cdf", args("+", "p")),
    _d("gamma.logsf", args("+", "p")),
    _d("gamma.mean", args("p"), sizes=((),)),
    _d("beta.pdf", args("u", "p", "p")),
    _d("beta.ppf", args("u", "p", "p"), rtol=1e-8),
    _d("beta.var", args("p", "p"), sizes=((),)),
    _d("t.cdf", args("x", "p")),
    _d("t.ppf", args("u", "p"), rtol=1e-8),
    _d("chi2.sf", args("+", "p")),
    _d("f.sf", args("+", "p", "p")),
    _d("lognorm.pdf", args("+", "p")),
    _d("weibull_min.cdf", args("+", "p")),
    _d("laplace.pdf", args("x", "s", "p")),
    _d("cauchy.cdf", args("x", "s", "p")),
    _d("logistic.pdf", args("x", "s", "p")),
    _d("gumbel_r.logcdf", args("x", "s", "p")),
    _d("genextreme.cdf", args("x", "s")),
    _d("pareto.sf", args("+", "p")),
    _d("invgauss.pdf", args("+", "p")),
    _d("vonmises.pdf", args("x", "p")),
    _d("skewnorm.cdf", args("x", "s")),
    _d("truncnorm.pdf", args("x", "s", "p")),
    _d("rayleigh.cdf", args("+", "s", "p")),
    # discrete
    _d("poisson.pmf", args("k", "p"), dtypes=(np.float64, np.int64)),
    _d("poisson.ppf", args("u", "p"), dtypes=(np.float64,)),
    _d("binom.pmf", args("k", "n", "q"), dtypes=(np.float64,)),
    _d("binom.cdf", args("k", "n", "q"), dtypes=(np.float64,)),
    _d("nbinom.logpmf", args("k", "n", "q"), dtypes=(np.float64,)),
    _d("geom.pmf", args("k", "q"), dtypes=(np.float64,)),
    _d("bernoulli.pmf", args("k", "q"), dtypes=(np.float64,)),
    # multivariate
    _d("multivariate_normal.pdf", mvn, sizes=((5, 3), (1, 1)), dtypes=(np.float64,)),
    _d("multivariate_normal.logpdf", mvn, sizes=((5, 3),), dtypes=(np.float64,)),
    _d("dirichlet.pdf", simplex, sizes=(4,), dtypes=(np.float64,)),
    _d("dirichlet.logpdf", simplex, sizes=(4,), dtypes=(np.float64,)),
]
