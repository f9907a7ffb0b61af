"""astropy.stats: the compiled two-sample statistic behind ``kuiper_two`` (``_stats.ks_2samp``,
a Cython function of two sorted 1-d samples that returns a Python float), once per example
(rules/_kernels.py): its running difference of the two empirical distributions adds ``1/n``
per step, which a formula over the batch would not repeat to the last bit. Loaded by
``batchtensor.foreign`` once ``astropy.stats`` is imported; the kernel is intercepted where
``kuiper_two`` reaches it, as an attribute of its compiled module.
"""

from __future__ import annotations

import numpy as np
from astropy.stats import _stats

from ._helpers import batch_size_of
from ._kernels import each_example, examples, stacked
from ._scipy import scipy_rule

_ks_2samp = _stats.ks_2samp


@scipy_rule(_ks_2samp)
def ks_2samp_rule(data1, data1_bdim, data2, data2_bdim):
    size = batch_size_of((data1, data2), (data1_bdim, data2_bdim))
    like = data1 if data1_bdim is not None else data2
    res = each_example(_ks_2samp, examples(data1, data1_bdim, size),
                       examples(data2, data2_bdim, size))
    return stacked(res, like, (np.float64,))[0]
