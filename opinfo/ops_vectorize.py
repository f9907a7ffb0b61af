"""``np.vectorize`` objects called on batched values (``batchtensor.rules.vectorize``): one
call of the object on the batch where ``otypes`` fixes the output types, else the per-op loop
(each example's first element decides its output type)."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import make_array

_STEP = np.vectorize(lambda a, b: a * 2.0 + b if a > 0 else -1.0, otypes="d")
_PAIR = np.vectorize(lambda a, b: (a - b, a > b), otypes="d?")
_COUNT = np.vectorize(lambda a: int(a > 0), otypes=[np.int64])
_GUESSED = np.vectorize(lambda a: a if a > 0 else 0)


def _step(a, b):
    return _STEP(a, b)


def _pair(a, b):
    return _PAIR(a, b)


def _count(a):
    return _COUNT(a)


def _guessed(a):
    return _GUESSED(a)


def binary_samples(rng, dtype):
    yield SampleInput((make_array(rng, (4,), dtype), make_array(rng, (4,), dtype)), {}, "1-d")
    yield SampleInput((make_array(rng, (2, 3), dtype), make_array(rng, (3,), dtype)), {},
                      "broadcast")
    yield SampleInput((make_array(rng, (), dtype), make_array(rng, (3,), dtype)), {}, "0-d a")
    yield SampleInput((make_array(rng, (), dtype), make_array(rng, (), dtype)), {}, "0-d")
    yield SampleInput((make_array(rng, (0, 2), dtype), make_array(rng, (2,), dtype)), {},
                      "size-0")
    yield SampleInput((make_array(rng, (5,), dtype, noncontiguous=True), 1.5), {},
                      "Python scalar b, non-contiguous a")


def unary_samples(rng, dtype):
    yield SampleInput((make_array(rng, (5,), dtype),), {}, "1-d")
    yield SampleInput((make_array(rng, (2, 3), dtype),), {}, "2-d")
    yield SampleInput((make_array(rng, (), dtype),), {}, "0-d")


def guessed_samples(rng, dtype):
    yield SampleInput((make_array(rng, (5,), dtype),), {}, "1-d",
                      loop_reason="np.vectorize without otypes: each example's first element "
                                  "decides its output type")


_CALL = np.vectorize.__call__
OPS = [
    OpInfo("vectorize.otypes", _step, binary_samples, "rule", covers=_CALL,
           dtypes=(np.float64, np.float32, np.int64)),
    OpInfo("vectorize.two_outputs", _pair, binary_samples, "rule", covers=_CALL),
    OpInfo("vectorize.int_otypes", _count, unary_samples, "rule", covers=_CALL,
           dtypes=(np.float64, np.int32)),
    OpInfo("vectorize.no_otypes", _guessed, guessed_samples, "rule", covers=_CALL),
]
