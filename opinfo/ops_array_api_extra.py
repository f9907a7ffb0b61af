"""array-api-extra as SciPy vendors it (rules: batchtensor/rules/array_api_extra.py):
``apply_where`` with every argument mapped or shared (a shared argument beside a mapped
``cond`` is the rule's case), one argument or several, ``f2`` or a scalar or array
``fill_value``, 0-d and size-0 arrays, and the error NumPy's code raises."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import make_array

try:
    import scipy._lib.array_api_extra as xpx
except ImportError:  # scipy is an optional extra
    xpx = None

FLOATS = (np.float64, np.float32)


def _scaled_log(x, p):
    return np.log(np.abs(x) + 1) * p


def _other(x, p):
    return x - p


def _double(x):
    return 2 * x


def apply_where_samples(rng, dtype):
    def draw(*shape):
        return make_array(rng, shape, dtype)

    def mask(*shape):
        return np.array(rng.random(shape) < 0.5)

    yield SampleInput((mask(4), (draw(4), draw(4)), _scaled_log), {"fill_value": np.nan},
                      "two arguments, scalar fill")
    yield SampleInput((mask(3, 4), (draw(3, 4), draw(4)), _scaled_log, _other), {},
                      "f2, broadcast argument")
    yield SampleInput((mask(2, 3), (draw(2, 3), draw()), _scaled_log), {"fill_value": 0},
                      "0-d argument, int fill")
    yield SampleInput((mask(5), draw(5), _double), {"fill_value": draw(5)}, "array fill")
    yield SampleInput((mask(3), draw(3), _double), {"fill_value": draw()}, "0-d array fill")
    yield SampleInput((mask(0), (draw(0), draw(0)), _scaled_log), {"fill_value": 1.5},
                      "size 0")
    yield SampleInput((mask(4), draw(4), _double, _double), {"fill_value": 1.0},
                      "f2 and fill_value (TypeError)")


def apply_where_0d_samples(rng, dtype):
    cond = np.array(rng.random() < 0.5)
    yield SampleInput((cond, (make_array(rng, (), dtype), make_array(rng, (), dtype)),
                       _scaled_log, _other), {}, "0-d")
    yield SampleInput((cond, make_array(rng, (), dtype), _double), {"fill_value": 2.5},
                      "0-d, one argument")


OPS = []
if xpx is not None:
    from .foreign import foreign_op, through_module

    OPS = [foreign_op(xpx, "apply_where", apply_where_samples,
                      dtypes=(*FLOATS, np.int64)),
           OpInfo(f"{xpx.__name__}.apply_where (0-d)", through_module(xpx, "apply_where"),
                  apply_where_0d_samples, "rule", covers=xpx.apply_where,
                  dtypes=(*FLOATS, np.int64),
                  skip_nested="x[m] with a 0-d mask batched at the outer level only raises "
                              "the data-dependent error (rules/indexing.py)")]
