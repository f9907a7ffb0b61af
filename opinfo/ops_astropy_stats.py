"""astropy.stats (rules: batchtensor/rules/astropy_stats.py): the compiled two-sample
statistic ``_stats.ks_2samp`` behind ``kuiper_two``, of sorted samples of other lengths,
ties, integer samples, empty samples, and samples of two dtypes (which it refuses)."""

from __future__ import annotations

import numpy as np

from .core import SampleInput
from .samples import make_array

try:
    from astropy.stats import _stats
except ImportError:  # astropy is an optional extra
    _stats = None


def ks_2samp_samples(rng, dtype):
    def sample(n):
        return np.sort(make_array(rng, (n,), dtype))

    yield SampleInput((sample(20), sample(15)), {}, "two samples")
    yield SampleInput((sample(1), sample(6)), {}, "one value")
    yield SampleInput((np.sort(np.round(make_array(rng, (12,), dtype))).astype(dtype),
                       np.sort(np.round(make_array(rng, (9,), dtype))).astype(dtype)), {},
                      "ties")
    yield SampleInput((sample(0), sample(4)), {}, "an empty sample")
    other = np.float32 if np.dtype(dtype) != np.float32 else np.float64
    yield SampleInput((sample(5), sample(5).astype(other)), {}, "dtypes differ (refused)")


OPS = []
if _stats is not None:
    from .foreign import foreign_op

    OPS = [foreign_op(_stats, "ks_2samp", ks_2samp_samples,
                      dtypes=(np.float64, np.float32, np.int64))]
