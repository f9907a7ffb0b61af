"""scipy.fft (rules: batchtensor/rules/scipy_fft.py): the complex and real transforms in one
axis (n=, axis=), in two and n axes (s=, axes=, repeated axes, s= without axes=), the real
trigonometric transforms (dct / dst, their n-d forms, every type), fftshift / ifftshift;
norm=, workers=, overwrite_x=; 0-d and size-0 inputs and SciPy's own errors. NumPy's fft
samples (opinfo/ops_fft.py) serve the transforms SciPy shares with NumPy."""

from __future__ import annotations

import numpy as np

from .core import SampleInput
from .ops_fft import fft1_samples, fftn_samples, shift_samples
from .samples import make_array

try:
    from scipy import fft
except ImportError:  # scipy is an optional extra
    fft = None

_TOL = dict(rtol=1e-9, atol=1e-9, rtol32=1e-4, atol32=1e-4)


def _x(rng, shape, dtype, **kw):
    return make_array(rng, shape, dtype, **kw)


def scipy_fft1_samples(rng, dtype):
    yield from fft1_samples(rng, dtype)
    yield SampleInput((_x(rng, (3, 8), dtype),), {"workers": 2}, "workers=2")
    yield SampleInput((_x(rng, (3, 8), dtype),), {"overwrite_x": True, "axis": 0},
                      "overwrite_x")


def scipy_fftn_samples(two_d: bool):
    base = fftn_samples(two_d)

    def gen(rng, dtype):
        yield from base(rng, dtype)
        yield SampleInput((_x(rng, (3, 4), dtype),), {"workers": -1, "axes": (0, 1)},
                          "workers=-1")
    return gen


def dct_samples(rng, dtype):
    for t in (1, 2, 3, 4):
        yield SampleInput((_x(rng, (3, 6), dtype),), {"type": t}, f"type={t}")
    yield SampleInput((_x(rng, (6, 3), dtype),), {"axis": 0, "norm": "ortho"}, "axis=0 ortho")
    yield SampleInput((_x(rng, (2, 5, 3), dtype),), {"axis": -2, "n": 7}, "n= pads")
    yield SampleInput((_x(rng, (6,), dtype),), {"norm": "ortho", "orthogonalize": False},
                      "orthogonalize=False")
    yield SampleInput((_x(rng, (3, 6), dtype, noncontiguous=True),), {}, "non-contiguous")
    yield SampleInput((_x(rng, (), dtype),), {}, "0-d")
    yield SampleInput((_x(rng, (0, 3), dtype),), {"axis": -1}, "size-0 other axis")
    yield SampleInput((_x(rng, (4,), dtype),), {"type": 5}, "bad type")


def dctn_samples(rng, dtype):
    yield SampleInput((_x(rng, (3, 6), dtype),), {}, "all axes")
    yield SampleInput((_x(rng, (2, 3, 4), dtype),), {"axes": (0, -1), "type": 1}, "axes type=1")
    yield SampleInput((_x(rng, (2, 3, 4), dtype),), {"s": (5, 6), "norm": "ortho"},
                      "s= without axes")
    yield SampleInput((_x(rng, (3, 4), dtype),), {"axes": 1}, "one axis as an int")
    yield SampleInput((_x(rng, (4,), dtype),), {"s": (4, 5)}, "s longer than the rank")
    yield SampleInput((_x(rng, (), dtype),), {}, "0-d")


OPS = []
if fft is not None:
    from .foreign import foreign_op

    C = (np.complex128, np.float32)
    R = (np.float64, np.float32)
    OPS = [
        foreign_op(fft, "fft", scipy_fft1_samples, dtypes=(np.complex128, np.float32, np.int64),
                   **_TOL),
        foreign_op(fft, "ifft", scipy_fft1_samples, dtypes=(np.complex64,), **_TOL),
        foreign_op(fft, "rfft", scipy_fft1_samples, dtypes=R, **_TOL),
        foreign_op(fft, "irfft", scipy_fft1_samples, dtypes=C, **_TOL),
        foreign_op(fft, "hfft", scipy_fft1_samples, dtypes=(np.complex128,), **_TOL),
        foreign_op(fft, "ihfft", scipy_fft1_samples, dtypes=(np.float64,), **_TOL),
        foreign_op(fft, "fftn", scipy_fftn_samples(False), dtypes=(np.complex128, np.float32),
                   **_TOL),
        foreign_op(fft, "ifftn", scipy_fftn_samples(False), dtypes=(np.complex128,), **_TOL),
        foreign_op(fft, "rfftn", scipy_fftn_samples(False), dtypes=R, **_TOL),
        foreign_op(fft, "irfftn", scipy_fftn_samples(False), dtypes=(np.complex128,), **_TOL),
        foreign_op(fft, "hfftn", scipy_fftn_samples(False), dtypes=(np.complex128,), **_TOL),
        foreign_op(fft, "ihfftn", scipy_fftn_samples(False), dtypes=(np.float64,), **_TOL),
        foreign_op(fft, "fft2", scipy_fftn_samples(True), dtypes=(np.complex128,), **_TOL),
        foreign_op(fft, "ifft2", scipy_fftn_samples(True), dtypes=(np.float64,), **_TOL),
        foreign_op(fft, "rfft2", scipy_fftn_samples(True), dtypes=(np.float32,), **_TOL),
        foreign_op(fft, "irfft2", scipy_fftn_samples(True), dtypes=(np.complex64,), **_TOL),
        foreign_op(fft, "hfft2", scipy_fftn_samples(True), dtypes=(np.complex128,), **_TOL),
        foreign_op(fft, "ihfft2", scipy_fftn_samples(True), dtypes=(np.float64,), **_TOL),
        foreign_op(fft, "dct", dct_samples, dtypes=R + (np.complex128,), **_TOL),
        foreign_op(fft, "idct", dct_samples, dtypes=(np.float64,), **_TOL),
        foreign_op(fft, "dst", dct_samples, dtypes=(np.float32,), **_TOL),
        foreign_op(fft, "idst", dct_samples, dtypes=(np.float64,), **_TOL),
        foreign_op(fft, "dctn", dctn_samples, dtypes=R, **_TOL),
        foreign_op(fft, "idctn", dctn_samples, dtypes=(np.float64,), **_TOL),
        foreign_op(fft, "dstn", dctn_samples, dtypes=(np.float64,), **_TOL),
        foreign_op(fft, "idstn", dctn_samples, dtypes=(np.float32,), **_TOL),
        foreign_op(fft, "fftshift", shift_samples, dtypes=(np.float64, np.int64)),
        foreign_op(fft, "ifftshift", shift_samples, dtypes=(np.complex128, np.bool_)),
    ]
