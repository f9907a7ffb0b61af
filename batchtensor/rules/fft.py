"""numpy.fft: every transform works along given axes, so the batch axis just stays where it is
and the logical axes are mapped past it. Axes are normalised against the *logical* rank (a
0-d example has no axis -1, even though the physical value does).

``fftfreq`` / ``rfftfreq`` are not dispatched by NumPy (no ``__array_function__``); with a
batched ``d`` they work through the ufuncs they are written with.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import unbatched_out_error
from ..registry import batch_rule, op_name
from ._helpers import dry_run, logical_rank, physical_axis, wrap_axis

_S_WITHOUT_AXES = (
    "`axes` should not be `None` if `s` is not `None` (Deprecated in NumPy 2.0). In a future "
    "version of NumPy, this will raise an error and `s[i]` will correspond to the size along "
    "the transformed axis specified by `axes[i]`. To retain current behaviour, pass a sequence "
    "[0, ..., k-1] to `axes` for an array of dimension k.")


def _no_out(op, out) -> None:
    # A batched out= never reaches the rule (the dispatcher sends it to the loop).
    if out is not None:
        raise unbatched_out_error(op_name(op))


def _fft1(op):
    @batch_rule(op)
    def rule(a, a_bdim, n=None, axis=-1, norm=None, out=None):
        _no_out(op, out)
        ax = physical_axis(wrap_axis(axis, logical_rank(a, a_bdim)), a_bdim)
        return op(a, n, ax, norm), a_bdim

    rule.__name__ = f"{op.__name__}_rule"
    return rule


def _logical_axes(nd: int, s, axes) -> list:
    """The transformed logical axes, normalised one by one (repeats are allowed: the axis is
    transformed again), as ``numpy.fft._pocketfft._cook_nd_args`` picks them."""
    if axes is None:
        if s is not None:
            warnings.warn(_S_WITHOUT_AXES, DeprecationWarning, stacklevel=5)
            axes = range(-len(s), 0)
        else:
            axes = range(nd)
    return [wrap_axis(ax, nd) for ax in axes]


def _fftn(op, default_axes):
    @batch_rule(op)
    def rule(a, a_bdim, s=None, axes=default_axes, norm=None, out=None):
        _no_out(op, out)
        lax = _logical_axes(logical_rank(a, a_bdim), s, axes)
        return op(a, s, [physical_axis(ax, a_bdim) for ax in lax], norm), a_bdim

    rule.__name__ = f"{op.__name__}_rule"
    return rule


def _shift(op):
    @batch_rule(op)
    def rule(x, x_bdim, axes=None):
        nd = logical_rank(x, x_bdim)
        if nd == 0:
            dry_run(op, (), x.dtype, axes)  # NumPy's own error for a 0-d example
        if axes is None:
            lax = tuple(range(nd))
        elif isinstance(axes, (int, np.integer)):
            return op(x, physical_axis(wrap_axis(axes, nd), x_bdim)), x_bdim
        else:
            lax = tuple(wrap_axis(ax, nd) for ax in axes)
        return op(x, tuple(physical_axis(ax, x_bdim) for ax in lax)), x_bdim

    rule.__name__ = f"{op.__name__}_rule"
    return rule


fft_rules = [_fft1(f) for f in (np.fft.fft, np.fft.ifft, np.fft.rfft, np.fft.irfft,
                                np.fft.hfft, np.fft.ihfft)]
fftn_rules = [_fftn(f, None) for f in (np.fft.fftn, np.fft.ifftn, np.fft.rfftn, np.fft.irfftn)]
fft2_rules = [_fftn(f, (-2, -1)) for f in (np.fft.fft2, np.fft.ifft2, np.fft.rfft2,
                                           np.fft.irfft2)]
shift_rules = [_shift(f) for f in (np.fft.fftshift, np.fft.ifftshift)]
