"""scipy.special reductions (rules: batchtensor/rules/scipy_special.py): logsumexp (axis=
None / int / tuple, b= batched or not and broadcast, keepdims, return_sign, complex, inf and
NaN), softmax and log_softmax; 0-d and size-0 inputs."""

from __future__ import annotations

import numpy as np

from .core import SampleInput
from .samples import make_array, with_nans

try:
    from scipy import special
except ImportError:  # scipy is an optional extra
    special = None

_TOL = dict(rtol=1e-9, atol=1e-11, rtol32=1e-4, atol32=1e-5)


def _x(rng, shape, dtype, **kw):
    return make_array(rng, shape, dtype, **kw)


def logsumexp_samples(rng, dtype):
    yield SampleInput((_x(rng, (6,), dtype),), {}, "1-d")
    yield SampleInput((_x(rng, (3, 4), dtype),), {"axis": 0}, "axis=0")
    yield SampleInput((_x(rng, (2, 3, 4), dtype),), {"axis": (0, -1), "keepdims": True},
                      "tuple axes keepdims")
    yield SampleInput((_x(rng, (3, 4), dtype),), {"axis": -1, "b": _x(rng, (3, 4), dtype)},
                      "b= the same shape")
    yield SampleInput((_x(rng, (3, 4), dtype),), {"axis": 1, "b": _x(rng, (4,), dtype),
                                                 "return_sign": True},
                      "b= broadcast, return_sign")
    yield SampleInput((_x(rng, (4,), dtype),), {"b": _x(rng, (3, 4), dtype)},
                      "b with more axes than a", loop_reason="b has more axes than a")
    yield SampleInput((with_nans(rng, _x(rng, (3, 5), dtype)),), {"axis": 1}, "NaN and inf")
    yield SampleInput((_x(rng, (3, 5), dtype, noncontiguous=True),), {}, "non-contiguous")
    yield SampleInput((_x(rng, (), dtype),), {}, "0-d")
    yield SampleInput((_x(rng, (0,), dtype),), {}, "size-0")
    yield SampleInput((_x(rng, (3, 4), dtype),), {"axis": 2}, "axis out of range")


def softmax_samples(rng, dtype):
    yield SampleInput((_x(rng, (6,), dtype),), {}, "1-d")
    yield SampleInput((_x(rng, (3, 4), dtype),), {"axis": 0}, "axis=0")
    yield SampleInput((_x(rng, (2, 3, 4), dtype),), {"axis": (1, -1)}, "tuple axes")
    yield SampleInput((_x(rng, (3, 4), dtype),), {}, "axis=None: the whole example")
    yield SampleInput((_x(rng, (), dtype),), {}, "0-d")
    yield SampleInput((_x(rng, (0, 3), dtype),), {"axis": 1}, "size-0")


OPS = []
if special is not None:
    from .foreign import foreign_op

    OPS = [
        foreign_op(special, "logsumexp", logsumexp_samples,
                   dtypes=(np.float64, np.float32, np.complex128), **_TOL),
        foreign_op(special, "softmax", softmax_samples, dtypes=(np.float64, np.float32),
                   **_TOL),
        foreign_op(special, "log_softmax", softmax_samples, dtypes=(np.float64,), **_TOL),
    ]
