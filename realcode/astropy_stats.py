"""astropy's statistics (``astropy.stats``): robust and sigma-clipped estimators, circular
statistics, bin widths, confidence intervals and information criteria."""

from __future__ import annotations

import numpy as np

from .core import Entry
from .draw import normal, positive, shape_of

A = "astropy.stats"
FLOATS = (np.float64, np.float32)
SIZES = (20, (20, 3))


def data(rng, dt, size):
    """Normal data with a few outliers (so that clipping and robust weights matter)."""
    x = normal(rng, np.float64, size, loc=rng.uniform(-2, 2), scale=rng.uniform(0.5, 2))
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, 2, replace=False)] += rng.choice([-1, 1], 2) * 15
    return (x.astype(dt),)


def two(rng, dt, size):
    x = data(rng, dt, size)[0]
    return x, (0.5 * x + normal(rng, dt, size)).astype(dt)


def rows(rng, dt, size):
    return (normal(rng, dt, (2, shape_of(size)[0])),)


def angles(rng, dt, size):
    return (rng.vonmises(rng.uniform(-3, 3), 2.0, shape_of(size)).astype(dt),)


def two_angles(rng, dt, size):
    a = angles(rng, dt, size)[0]
    return a, (a + 0.3 * rng.standard_normal(a.shape)).astype(dt)


def uniform01(rng, dt, size):
    return (rng.uniform(0, 1, shape_of(size)).astype(dt),)


def two_uniform(rng, dt, size):
    return uniform01(rng, dt, size) + (rng.uniform(0, 1, 15).astype(dt),)


def successes(rng, dt, size):
    """Successes out of trials; never more than 12 successes nor fewer than 12 trials, so
    that any example's successes fit any example's trials (the partial variant)."""
    n = rng.integers(12, 30, shape_of(size))
    return rng.binomial(12, rng.uniform(0.2, 0.8), shape_of(size)).astype(dt), n.astype(dt)


def counts(rng, dt, size):
    return (rng.poisson(rng.uniform(1, 20), shape_of(size)).astype(dt),)


def scalar(low, high):
    def gen(rng, dt, size):
        return (np.asarray(rng.uniform(low, high)).astype(dt),)
    return gen


def exposure_times(rng, dt, size):
    return (positive(rng, dt, size, 1.0, 100.0),)


def _a(attr, gen=data, label="", sizes=SIZES, dtypes=FLOATS, args=(), shared=None, rtol=None,
       **kw):
    return Entry(A, attr, gen, dtypes=dtypes, sizes=sizes, args=args, kwargs=kw, label=label,
                 shared=shared, rtol=rtol)


ONE = (20,)
ENTRIES = [
    _a("sigma_clip", sigma=2.5, maxiters=3, masked=False, axis=0),
    _a("sigma_clipped_stats", sizes=ONE, sigma=2.5, maxiters=3),
    _a("sigma_clipped_stats", label="axis=0", sizes=((20, 3),), sigma=2.5, axis=0),
    _a("mad_std", axis=0),
    _a("median_absolute_deviation", axis=0),
    _a("biweight_location", axis=0),
    _a("biweight_scale", axis=0),
    _a("biweight_midvariance", axis=0),
    _a("biweight_midcovariance", rows, sizes=ONE),
    _a("biweight_midcorrelation", two, sizes=ONE),
    _a("knuth_bin_width", sizes=ONE, dtypes=(np.float64,), rtol=1e-6),
    _a("scott_bin_width", sizes=ONE),
    _a("freedman_bin_width", sizes=ONE),
    _a("calculate_bin_edges", sizes=ONE, bins=5),
    _a("histogram", sizes=ONE, bins=5),
    _a("jackknife_resampling", sizes=(8,)),
    _a("binom_conf_interval", successes, sizes=(4,), dtypes=(np.int64,), interval="wilson"),
    _a("binom_conf_interval", successes, label="jeffreys", sizes=(4,), dtypes=(np.int64,),
       interval="jeffreys"),
    _a("poisson_conf_interval", counts, sizes=(4,), dtypes=(np.int64,), interval="root-n"),
    _a("poisson_conf_interval", counts, label="frequentist", sizes=(4,),
       dtypes=(np.int64,), interval="frequentist-confidence"),
    _a("circmean", angles, axis=0),
    _a("circvar", angles, axis=0),
    _a("circstd", angles, axis=0),
    _a("circmoment", angles, axis=0, p=2.0),
    _a("circcorrcoef", two_angles, sizes=ONE),
    _a("rayleightest", angles, axis=0),
    _a("vtest", angles, sizes=ONE, mu=0.5),
    _a("vonmisesmle", angles, sizes=ONE),
    _a("kuiper", uniform01, sizes=ONE),
    _a("kuiper_two", two_uniform, sizes=ONE),
    _a("kuiper_false_positive_probability", scalar(0.05, 0.6), sizes=((),), args=(),
       N=20),
    _a("akaike_info_criterion", scalar(-50.0, -5.0), sizes=((),), n_params=3, n_samples=40),
    _a("bayesian_info_criterion", scalar(-50.0, -5.0), sizes=((),), n_params=3,
       n_samples=40),
    _a("akaike_info_criterion_lsq", scalar(1.0, 30.0), sizes=((),), n_params=3,
       n_samples=40),
    _a("bayesian_info_criterion_lsq", scalar(1.0, 30.0), sizes=((),), n_params=3,
       n_samples=40),
    _a("signal_to_noise_oir_ccd", exposure_times, sizes=(5,), source_eps=20.0, sky_eps=5.0,
       dark_eps=0.1, rd=7.0, npix=9.0),
]
