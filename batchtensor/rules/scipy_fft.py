"""scipy.fft: every transform works along given axes, so the batch axis rides along first and
the example's axes are mapped past it (normalised against the example's rank).

``overwrite_x``, ``workers`` and ``plan`` are passed on: with ``overwrite_x=True`` SciPy
transforms a complex (or, for dct / dst, a real) input in place and returns it, per example as
for the batch, so the result is a view of the input in both (and the write is noted for the
rerun's guard). Loaded by ``batchtensor.foreign`` once ``scipy.fft`` is imported.
"""

from __future__ import annotations

import numpy as np
from scipy import fft

from ..scalars import ARRAY_0D, Array0d
from ._helpers import batch_outermost, dry_run, logical_rank, logical_shape, require
from ._scipy import call, front, front_axes, front_axis, scipy_rule, writes_into

ONE_AXIS = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
TWO_AXES = ("fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2")
N_AXES = ("fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn")
REAL_ONE_AXIS = ("dct", "idct", "dst", "idst")
REAL_N_AXES = ("dctn", "idctn", "dstn", "idstn")


def _axes(x, x_bdim, s, axes, per_example) -> tuple:
    """The physical axes of an n-d transform: ``axes`` of the example, or its last ``len(s)``
    axes, or all of them. More sizes than the example has axes: SciPy's own error, from
    ``per_example`` run on a zero example."""
    nd = logical_rank(x, x_bdim)
    if axes is None and s is not None:
        if len(s) > nd:
            dry_run(per_example, logical_shape(x, x_bdim), x.dtype)
            require(False, "s is longer than the example's rank")
        axes = range(nd - len(s), nd)
    try:
        return front_axes(axes, nd)
    except np.exceptions.AxisError:  # SciPy checks other things first (a complex input)
        dry_run(per_example, logical_shape(x, x_bdim), x.dtype)
        raise


def _axis(x, x_bdim, axis, per_example) -> int:
    """The physical axis of a one-axis transform; out of range: SciPy's own error first."""
    try:
        return front_axis(axis, logical_rank(x, x_bdim))
    except np.exceptions.AxisError:
        dry_run(per_example, logical_shape(x, x_bdim), x.dtype)
        raise


def _zero_d(x, per_example) -> None:
    """0-d examples have no axis to transform: SciPy's own error, from one zero example (the
    loop's), else the per-example loop."""
    dry_run(per_example, (), x.dtype)
    require(False, "0-d examples")


def _one_axis(name: str):
    fn = call(fft, name)

    @scipy_rule(getattr(fft, name))
    def rule(x, x_bdim, n=None, axis=-1, norm=None, overwrite_x=False, *args, **kwargs):
        if not logical_rank(x, x_bdim):
            _zero_d(x, lambda e: fn(e, n, axis, norm, False, *args, **kwargs))
        ax = _axis(x, x_bdim, axis, lambda e: fn(e, n, axis, norm, False, *args, **kwargs))
        if overwrite_x:
            writes_into(x)
        return fn(front(x, x_bdim, None), n, ax, norm, overwrite_x, *args, **kwargs), 0

    rule.__name__ = f"{name}_rule"


def _n_axes(name: str, default_axes):
    fn = call(fft, name)

    @scipy_rule(getattr(fft, name))
    def rule(x, x_bdim, s=None, axes=default_axes, norm=None, overwrite_x=False, *args,
             **kwargs):
        phys = _axes(x, x_bdim, s, axes, lambda e: fn(e, s, axes, norm, False, *args, **kwargs))
        if overwrite_x:
            writes_into(x)
        return fn(front(x, x_bdim, None), s, phys, norm, overwrite_x, *args, **kwargs), 0

    rule.__name__ = f"{name}_rule"
    ARRAY_0D[getattr(fft, name)] = Array0d.ALWAYS


def _real_one_axis(name: str):
    fn = call(fft, name)

    @scipy_rule(getattr(fft, name))
    def rule(x, x_bdim, type=2, n=None, axis=-1, norm=None, overwrite_x=False, *args,
             **kwargs):
        if not logical_rank(x, x_bdim):
            _zero_d(x, lambda e: fn(e, type, n, axis, norm, False, *args, **kwargs))
        ax = _axis(x, x_bdim, axis, lambda e: fn(e, type, n, axis, norm, False, *args, **kwargs))
        if overwrite_x:
            writes_into(x)
        return fn(front(x, x_bdim, None), type, n, ax, norm, overwrite_x, *args, **kwargs), 0

    rule.__name__ = f"{name}_rule"


def _real_n_axes(name: str):
    fn = call(fft, name)

    @scipy_rule(getattr(fft, name))
    def rule(x, x_bdim, type=2, s=None, axes=None, norm=None, overwrite_x=False, *args,
             **kwargs):
        phys = _axes(x, x_bdim, s, axes,
                     lambda e: fn(e, type, s, axes, norm, False, *args, **kwargs))
        if overwrite_x:
            writes_into(x)
        return fn(front(x, x_bdim, None), type, s, phys, norm, overwrite_x, *args,
                  **kwargs), 0

    rule.__name__ = f"{name}_rule"
    ARRAY_0D[getattr(fft, name)] = Array0d.ALWAYS


def _shift(name: str):
    fn = call(fft, name)

    @scipy_rule(getattr(fft, name))
    def rule(x, x_bdim, axes=None):
        nd = logical_rank(x, x_bdim)
        if nd == 0:  # NumPy's roll fails on a 0-d array: its own error
            dry_run(fn, (), x.dtype, axes)
        # np.roll's result is laid out as its input: each example as the example is
        return fn(batch_outermost(x, x_bdim), front_axes(axes, nd)), 0

    rule.__name__ = f"{name}_rule"
    ARRAY_0D[getattr(fft, name)] = Array0d.ALWAYS


for _name in ONE_AXIS:
    _one_axis(_name)
for _name in TWO_AXES:
    _n_axes(_name, (-2, -1))
for _name in N_AXES:
    _n_axes(_name, None)
for _name in REAL_ONE_AXIS:
    _real_one_axis(_name)
for _name in REAL_N_AXES:
    _real_n_axes(_name)
for _name in ("fftshift", "ifftshift"):
    _shift(_name)
