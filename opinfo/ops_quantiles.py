"""Quantiles: quantile percentile nanquantile nanpercentile (rules:
batchtensor/rules/quantiles.py)."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import OUT_LOOP, make_array, out_variant, with_nans

METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
           "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
           "normal_unbiased", "lower", "higher", "midpoint", "nearest")

_NAN_Q_LOOP = "NumPy's nanquantile works lane by lane (different counts per lane): a batched q " \
              "runs per example"


def _quantile_samples(scale: float, nan: bool):
    def q(rng, shape):
        v = rng.random(shape)
        if shape and shape[0] >= 3:
            v[0], v[-1] = 0.0, 1.0  # the ends of the range
        return np.asarray(v * scale)

    def loop(sample):
        if nan and isinstance(sample.args[1], np.ndarray):
            sample.loop_reason = _NAN_Q_LOOP
        if nan and "weights" in sample.kwargs:
            sample.loop_reason = "NumPy's weighted nanquantile works lane by lane: per example"
        return sample

    def gen(rng, dtype):
        x = lambda shape: make_array(rng, shape, dtype)  # noqa: E731
        S = lambda *a, **k: loop(SampleInput(*a, **k))  # noqa: E731
        yield S((x((7,)), 0.3 * scale), {}, "Python float q")
        yield S((x((7,)), q(rng, ())), {}, "0-d q")
        yield S((x((3, 5)), q(rng, (4,))), {"axis": 1}, "1-d q axis=1")
        yield S((x((3, 5)), q(rng, (2, 2))), {"axis": -2}, "2-d q axis=-2")
        yield S((x((2, 3, 4)), q(rng, (3,))), {"axis": (0, 2), "keepdims": True},
                "tuple axis keepdims")
        yield S((x((2, 3, 4)), q(rng, (3,))), {"keepdims": True}, "axis=None keepdims")
        yield S((x((3, 4)), q(rng, (2, 2))), {}, "2-d q axis=None")
        yield S((x((2, 3, 4)), q(rng, (2, 3))), {"keepdims": True}, "2-d q axis=None keepdims")
        yield S((x((2, 3, 4)), q(rng, (2, 3))), {"axis": (-1, 0), "keepdims": True},
                "2-d q tuple axis keepdims",
                loop_reason="NumPy's nan-variants interleave a 2-d q's dimensions with the kept "
                            "ones over several axes: the loop's odd shape, per example"
                if nan else None)
        yield S((x(()), q(rng, (3,))), {}, "0-d a")
        yield S((x((2, 0)), q(rng, (3,))), {"axis": 0}, "size-0 kept axis",
                loop_reason="NumPy's nan-variants give odd shapes for empty lanes" if nan
                else None)
        yield S((x((0,)), q(rng, ())), {}, "size-0 reduced axis raises")
        yield S((x((4, 6)), q(rng, (5,))), {"axis": 0, "method": "linear"}, "non-contiguous")
        for m in METHODS:
            yield S((x((3, 7)), q(rng, (5,))), {"axis": -1, "method": m}, f"method={m}")
        yield S((x((3, 4)), 0.25 * scale), {"axis": 0, "method": "nearest"}, "float q nearest")
        if np.dtype(dtype).kind == "f":
            a = with_nans(rng, x((4, 5)), 0.3 if nan else 0.15)
            if nan:
                a[rng.random(4) < 0.3] = np.nan  # all-NaN rows in some examples
            yield S((a, q(rng, (3,))), {"axis": 1}, "NaN and inf")
            yield S((with_nans(rng, x((4, 5))), q(rng, (3,))), {"axis": 1, "method": "lower"},
                    "NaN and inf, lower")
        yield S((x((5,)), rng.integers(0, 2, (2,)) * int(scale)), {}, "integer q")
        yield S((x((5,)), q(rng, (2,)).astype(np.float32)), {}, "float32 q")
        w = make_array(rng, (3, 6), np.float64, low=0, high=2)
        yield S((x((3, 6)), q(rng, (2,))), {"axis": 1, "method": "inverted_cdf", "weights": w},
                "weights= same shape")
        yield S((x((3, 6)), 0.5 * scale),
                {"axis": 0, "method": "inverted_cdf", "weights": w[:, 0].copy()},
                "1-d weights=")
        yield S((x((3, 6)), q(rng, (2,))), {"axis": 1, "weights": w}, "weights with linear raises")
        yield S((x((5,)), q(rng, (2,)) + 1.5 * scale), {}, "q out of range raises")
        yield S((x((5,)), q(rng, (2, 2, 2))), {}, "3-d q raises")
        yield S((x((5,)), q(rng, (2,))), {"method": "bogus"}, "bad method raises")
        yield S((x((3, 4)), q(rng, (2,))), {"axis": 2}, "axis out of range")
        yield S((make_array(rng, (5,), np.complex128), q(rng, (2,))), {}, "complex a raises")
    return gen



_Q_TOL = dict(rtol=1e-9, atol=1e-12)

OPS = [
    OpInfo("quantile", np.quantile, _quantile_samples(1.0, False), "rule",
           dtypes=(np.float64, np.int64), **_Q_TOL),
    OpInfo("percentile", np.percentile, _quantile_samples(100.0, False), "rule",
           dtypes=(np.float32,), **_Q_TOL),
    OpInfo("nanquantile", np.nanquantile, _quantile_samples(1.0, True), "rule",
           dtypes=(np.float64,), **_Q_TOL),
    OpInfo("nanpercentile", np.nanpercentile, _quantile_samples(100.0, True), "rule",
           dtypes=(np.float64,), **_Q_TOL),
]




def _out_cases(scale: float):
    def cases(rng, dtype):
        a = make_array(rng, (4, 5), dtype)
        yield (a, 0.3 * scale), {"axis": 0}, "axis=0"
        yield (make_array(rng, (3, 4), dtype), 0.6 * scale), {"axis": 1, "keepdims": True}, \
            "keepdims"
        yield (make_array(rng, (2, 3, 4), dtype), 0.5 * scale), {"axis": (0, 2)}, "tuple axis"
    return cases


def _q_array_out_cases(scale: float):
    def cases(rng, dtype):
        yield (make_array(rng, (4, 5), dtype), np.array([0.2, 0.9]) * scale), {"axis": 0}, \
            "batched q"
    return cases


for _fn, _scale in ((np.quantile, 1.0), (np.percentile, 100.0), (np.nanquantile, 1.0),
                    (np.nanpercentile, 100.0)):
    OPS.append(OpInfo(f"{_fn.__name__}.out", _fn, out_variant(_fn, _out_cases(_scale)), "loop",
                      inplace=2, loop_reason=OUT_LOOP, **_Q_TOL))
    OPS.append(OpInfo(f"{_fn.__name__}.out.q", _fn, out_variant(_fn, _q_array_out_cases(_scale)),
                      "loop", inplace=2, loop_reason=OUT_LOOP, **_Q_TOL))
