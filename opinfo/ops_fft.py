"""numpy.fft: the 1-D transforms (n=, axis=), the n-D ones (s=, axes=, repeated axes, the
deprecated s= without axes=), norm= (backward / ortho / forward), fftshift / ifftshift, 0-d and
size-0 errors; fftfreq / rfftfreq with a batched ``d`` (not dispatched by NumPy)."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import OUT_LOOP, make_array, out_variant

FFT = np.fft
_TOL = dict(rtol=1e-9, atol=1e-9, rtol32=1e-4, atol32=1e-4)


def _x(rng, shape, dtype, **kw):
    return make_array(rng, shape, dtype, **kw)


def fft1_samples(rng, dtype):
    for shape in [(5,), (3, 4), (2, 3, 4)]:
        yield SampleInput((_x(rng, shape, dtype),), {}, f"{shape}")
    x = _x(rng, (3, 4), dtype)
    yield SampleInput((x,), {"axis": 0}, "axis=0")
    yield SampleInput((_x(rng, (2, 3, 4), dtype),), {"axis": -2}, "axis=-2")
    yield SampleInput((_x(rng, (3, 4), dtype),), {"n": 7}, "n= pads")
    yield SampleInput((_x(rng, (3, 6), dtype),), {"n": 3, "axis": -1}, "n= crops")
    for norm in ("backward", "ortho", "forward"):
        yield SampleInput((_x(rng, (4, 5), dtype),), {"norm": norm, "axis": 0}, f"norm={norm}")
    yield SampleInput((_x(rng, (3, 5), dtype, noncontiguous=True),), {}, "non-contiguous")
    yield SampleInput((_x(rng, (2, 0), dtype),), {"axis": 0}, "size-0 other axis")
    yield SampleInput((_x(rng, (), dtype),), {}, "0-d: no axis -1")
    yield SampleInput((_x(rng, (0,), dtype),), {}, "size-0 transformed axis")
    yield SampleInput((_x(rng, (4,), dtype),), {"n": 0}, "n=0")
    yield SampleInput((_x(rng, (3, 4), dtype),), {"axis": 2}, "axis out of range")
    yield SampleInput((_x(rng, (4,), dtype),), {"norm": "bad"}, "bad norm")


def fftn_samples(two_d: bool):
    def gen(rng, dtype):
        yield SampleInput((_x(rng, (3, 4), dtype),), {}, "(3, 4)")
        yield SampleInput((_x(rng, (2, 3, 4), dtype),), {}, "(2, 3, 4) default axes")
        yield SampleInput((_x(rng, (2, 3, 4), dtype),), {"axes": (0, 2)}, "axes=(0, 2)")
        yield SampleInput((_x(rng, (2, 3, 4), dtype),), {"axes": (-1, 0)}, "axes=(-1, 0)")
        yield SampleInput((_x(rng, (3, 4), dtype),), {"axes": (1, -1)}, "repeated axis")
        yield SampleInput((_x(rng, (3, 4), dtype),), {"s": (4, 6), "axes": (0, 1)}, "s= axes=")
        yield SampleInput((_x(rng, (3, 5), dtype),), {"s": (-1, 4), "axes": (0, 1)}, "s=-1")
        yield SampleInput((_x(rng, (2, 3, 4), dtype),), {"s": (3, 6)},
                          "s= without axes (deprecated)")
        yield SampleInput((_x(rng, (3, 4), dtype),), {"norm": "ortho"}, "norm=ortho")
        yield SampleInput((_x(rng, (3, 4), dtype),), {"norm": "forward", "axes": (0, 1)},
                          "norm=forward")
        yield SampleInput((_x(rng, (4, 6), dtype, noncontiguous=True),), {}, "non-contiguous")
        yield SampleInput((_x(rng, (5,), dtype),), {}, "1-d")
        yield SampleInput((_x(rng, (3, 4), dtype),), {"axes": (0, 2)}, "axes out of range")
        yield SampleInput((_x(rng, (3, 4), dtype),), {"s": (4,), "axes": (0, 1)},
                          "s and axes of different lengths")
        yield SampleInput((_x(rng, (0, 3), dtype),), {"axes": (0, 1)}, "size-0 axis")
        if not two_d:
            yield SampleInput((_x(rng, (2, 3, 4), dtype),), {"axes": (1,)}, "one axis")
            yield SampleInput((_x(rng, (), dtype),), {}, "0-d")
            yield SampleInput((_x(rng, (3,), dtype),), {"s": (4, 5, 6)},
                              "s longer than the rank")
        else:
            yield SampleInput((_x(rng, (), dtype),), {}, "0-d: no axes -2, -1")
    return gen


def shift_samples(rng, dtype):
    for shape in [(5,), (4,), (3, 4), (2, 3, 5)]:
        yield SampleInput((_x(rng, shape, dtype),), {}, f"{shape}")
    yield SampleInput((_x(rng, (3, 4), dtype),), {"axes": 0}, "axes=0")
    yield SampleInput((_x(rng, (2, 3, 5), dtype),), {"axes": -1}, "axes=-1")
    yield SampleInput((_x(rng, (2, 3, 5), dtype),), {"axes": (0, -1)}, "axes=(0, -1)")
    yield SampleInput((_x(rng, (3, 5), dtype),), {"axes": (1, 1)}, "repeated axis")
    yield SampleInput((_x(rng, (2, 0, 3), dtype),), {}, "size-0")
    yield SampleInput((_x(rng, (), dtype),), {}, "0-d (NumPy raises)")
    yield SampleInput((_x(rng, (3, 4), dtype),), {"axes": 2}, "axes out of range")
    yield SampleInput((_x(rng, (3, 4), dtype),), {"axes": (0, -3)}, "axes out of range (tuple)")


def freq_samples(rng, dtype):
    yield SampleInput((6, _x(rng, (), dtype, low=0.1, high=2.0)), {}, "n even, batched d")
    yield SampleInput((7, _x(rng, (), dtype, low=0.1, high=2.0)), {}, "n odd, batched d")


C = (np.complex128, np.float32)
R = (np.float64, np.float32)

OPS = [
    OpInfo("fft.fft", FFT.fft, fft1_samples, "rule", dtypes=(np.complex128, np.float32, np.int64),
           **_TOL),
    OpInfo("fft.ifft", FFT.ifft, fft1_samples, "rule", dtypes=(np.complex128, np.float64),
           **_TOL),
    OpInfo("fft.rfft", FFT.rfft, fft1_samples, "rule", dtypes=R, **_TOL),
    OpInfo("fft.irfft", FFT.irfft, fft1_samples, "rule", dtypes=C, **_TOL),
    OpInfo("fft.hfft", FFT.hfft, fft1_samples, "rule", dtypes=C, **_TOL),
    OpInfo("fft.ihfft", FFT.ihfft, fft1_samples, "rule", dtypes=(np.float64, np.complex128),
           **_TOL),
    OpInfo("fft.fftn", FFT.fftn, fftn_samples(False), "rule", dtypes=(np.complex128, np.float32),
           **_TOL),
    OpInfo("fft.ifftn", FFT.ifftn, fftn_samples(False), "rule", dtypes=(np.complex128,), **_TOL),
    OpInfo("fft.rfftn", FFT.rfftn, fftn_samples(False), "rule", dtypes=R, **_TOL),
    OpInfo("fft.irfftn", FFT.irfftn, fftn_samples(False), "rule", dtypes=(np.complex128,),
           **_TOL),
    OpInfo("fft.fft2", FFT.fft2, fftn_samples(True), "rule", dtypes=(np.complex128,), **_TOL),
    OpInfo("fft.ifft2", FFT.ifft2, fftn_samples(True), "rule", dtypes=(np.float64,), **_TOL),
    OpInfo("fft.rfft2", FFT.rfft2, fftn_samples(True), "rule", dtypes=(np.float64,), **_TOL),
    OpInfo("fft.irfft2", FFT.irfft2, fftn_samples(True), "rule", dtypes=(np.complex64,), **_TOL),
    OpInfo("fft.fftshift", FFT.fftshift, shift_samples, "rule", dtypes=(np.float64, np.int64)),
    OpInfo("fft.ifftshift", FFT.ifftshift, shift_samples, "rule",
           dtypes=(np.complex128, np.bool_)),
    # Not dispatched by NumPy: a batched `d` goes through the ufuncs fftfreq is written with,
    # so no path of fftfreq itself is recorded (the sweep checks only the values).
    OpInfo("fft.fftfreq", FFT.fftfreq, freq_samples, "decomposition", dtypes=(np.float64,),
           notes="not dispatched: works through np.multiply / np.true_divide"),
    OpInfo("fft.rfftfreq", FFT.rfftfreq, freq_samples, "decomposition", dtypes=(np.float64,),
           notes="not dispatched: works through np.multiply / np.true_divide"),
]


def _fft_out_cases(rng, dtype):
    yield (_x(rng, (3, 4), dtype),), {}, "(3, 4)"
    yield (_x(rng, (3, 4), dtype),), {"axis": 0, "norm": "ortho"}, "axis=0 ortho"
    yield (_x(rng, (2, 3, 4), dtype, noncontiguous=True),), {}, "non-contiguous"


def _fftn_out_cases(rng, dtype):
    yield (_x(rng, (3, 4), dtype),), {}, "(3, 4)"
    yield (_x(rng, (2, 3, 4), dtype),), {"axes": (0, 2)}, "axes=(0, 2)"


_OUT_DTYPES = {"rfft": np.float64, "ihfft": np.float64, "rfft2": np.float64, "rfftn": np.float64}
for _name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn", "rfftn",
              "irfftn", "fft2", "ifft2", "rfft2", "irfft2"):
    _fn = getattr(FFT, _name)
    _cases = _fft_out_cases if _name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft") \
        else _fftn_out_cases
    OPS.append(OpInfo(f"fft.{_name}.out", _fn, out_variant(_fn, _cases), "loop",
                      dtypes=(_OUT_DTYPES.get(_name, np.complex128),), inplace=1,
                      loop_reason=OUT_LOOP, **_TOL))
