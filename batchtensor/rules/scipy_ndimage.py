"""scipy.ndimage filters: those with ``axes=`` filter only the axes named (each per-axis
argument, ``sigma``, ``size``, ``mode``, ``origin``, ``radius``, and the ``footprint`` /
``weights`` array, is laid out over them), so the batch axis rides along first, left out of
``axes``; those with ``axis=`` filter along one axis.

``output=`` an array not batched here (``out = np.zeros(x.shape); gaussian_filter(x,
output=out)``, as scikit-image's ``threshold_local`` does): the filter runs on the batch with
``output=`` that array's dtype (each example's passes stored in it, as in the loop), the
result is written into the array through the dispatcher and the array is returned, as SciPy
returns it. An array the function made is then batched (``batchtensor.buffers``; one another
module made is learnt from the refused write for the next pass), and one the caller shares
with every example meets vmap's write checks (the clear error).

What runs per example instead (correct, slow, warned): a batched ``weights`` / ``footprint``
or any other batched argument but ``input``, and ``output=`` an array of another shape than
the example's (SciPy's error, per example). ``sobel`` and
``prewitt`` have no rule: they smooth along every axis but one, the batch axis included
(``gaussian_gradient_magnitude`` does too, and its rule gives the batch axis sigma 0).
Loaded by ``batchtensor.foreign`` once ``scipy.ndimage`` is imported.
"""

from __future__ import annotations

import inspect

import numpy as np
from scipy import ndimage

from ..dispatch import function_call
from ..scalars import ARRAY_0D, Array0d
from ..tensor import BatchedTensor
from ._helpers import dry_run, logical_rank, logical_shape, require
from ._scipy import (call, front, front_axes, front_axis, is_array, require_no_output_array,
                     scipy_rule)

#: filters with ``axes=``: each runs over the example's axes (all of them by default)
AXES_FILTERS = ("gaussian_filter", "uniform_filter", "median_filter", "maximum_filter",
                "minimum_filter", "percentile_filter", "rank_filter", "convolve", "correlate",
                "laplace", "gaussian_laplace")
#: filters along one ``axis`` (their second parameter's name: the filter's own argument)
AXIS_FILTERS = {"gaussian_filter1d": "sigma", "uniform_filter1d": "size",
                "minimum_filter1d": "size", "maximum_filter1d": "size",
                "convolve1d": "weights", "correlate1d": "weights"}


def _into_output_array(op, at: int):
    """The ``fast`` hook of ``op``'s rule (``output`` its parameter ``at``, counting
    ``input``): ``output=`` an array not batched at the call's level, of the example's shape,
    runs ``op`` with ``output=`` its dtype instead (the rule, or the per-example loop where
    another argument is batched), writes the result into the array (``np.copyto``, through
    the dispatcher) and returns the array; anything else goes on to the rule
    (NotImplemented). The per-example loop must not get such an array: it would write every
    example into the one array."""

    def fast(level, args, kwargs):
        given = "output" in kwargs
        output = kwargs["output"] if given else args[at] if len(args) > at else None
        image = args[0] if args else kwargs.get("input")
        if not is_array(output) or (type(output) is BatchedTensor and output._level is level) \
                or not hasattr(image, "shape") or tuple(output.shape) != tuple(image.shape):
            return NotImplemented
        if given:
            kwargs = {**kwargs, "output": output.dtype}
        else:
            args = (*args[:at], output.dtype, *args[at + 1:])
        np.copyto(output, function_call(op, args, kwargs))
        return output

    return fast


def _has_axes(op) -> bool:
    """SciPy's filters take ``axes=`` from 1.11 on; before, a filter has no rule here."""
    return "axes" in inspect.signature(op).parameters


def _axes_filter(name: str):
    op, fn = getattr(ndimage, name), call(ndimage, name)
    if not _has_axes(op):
        return
    at = list(inspect.signature(op).parameters).index("output") - 1

    @scipy_rule(op, fast=_into_output_array(op, at + 1))
    def rule(input, input_bdim, *args, **kwargs):
        require_no_output_array(kwargs.get("output", args[at] if len(args) > at else None),
                                name)
        given = kwargs.pop("axes", None)
        try:
            axes = front_axes(given, logical_rank(input, input_bdim))
        except np.exceptions.AxisError:  # SciPy checks other things first (a complex input)
            dry_run(fn, logical_shape(input, input_bdim), input.dtype, *args, axes=given,
                    **kwargs)
            raise
        return fn(front(input, input_bdim, None), *args, axes=axes, **kwargs), 0

    rule.__name__ = f"{name}_rule"
    ARRAY_0D[op] = Array0d.ALWAYS  # a 0-d input gives a 0-d array


def _axis_filter(name: str, first: str):
    op, fn = getattr(ndimage, name), call(ndimage, name)
    at = list(inspect.signature(op).parameters).index("output") - 3

    def run(input, input_bdim, arg, axis, args, kwargs):
        require_no_output_array(kwargs.get("output", args[at] if len(args) > at else None),
                                name)
        try:
            ax = front_axis(axis, logical_rank(input, input_bdim))
        except np.exceptions.AxisError:  # SciPy checks other things first (a complex input)
            dry_run(fn, logical_shape(input, input_bdim), input.dtype, arg, axis, *args,
                    **kwargs)
            raise
        return fn(front(input, input_bdim, None), arg, ax, *args, **kwargs), 0

    # the rule's second parameter must bear the filter's own name
    if first == "sigma":
        def rule(input, input_bdim, sigma, axis=-1, *args, **kwargs):
            return run(input, input_bdim, sigma, axis, args, kwargs)
    elif first == "size":  # (each variant names its parameter as the filter does:)
        def rule(input, input_bdim, size, axis=-1, *args, **kwargs):  # type: ignore[misc]
            return run(input, input_bdim, size, axis, args, kwargs)
    else:
        def rule(input, input_bdim, weights, axis=-1, *args, **kwargs):  # type: ignore[misc]
            return run(input, input_bdim, weights, axis, args, kwargs)

    rule.__name__ = f"{name}_rule"
    scipy_rule(op, fast=_into_output_array(op, at + 3))(rule)


def gaussian_gradient_magnitude_rule(input, input_bdim, sigma, output=None, mode="reflect",
                                     cval=0.0, *, axes=None, **kwargs):
    # Each derivative smooths along *every* axis with sigma (one per axis of the example):
    # sigma 0 leaves the batch axis alone.
    require_no_output_array(output, "gaussian_gradient_magnitude")
    require(kwargs.get("radius") is None, "a radius is given")
    nd = logical_rank(input, input_bdim)
    sigmas = [sigma] * nd if np.ndim(sigma) == 0 else list(sigma)
    return call(ndimage, "gaussian_gradient_magnitude")(
        front(input, input_bdim, None), [0.0, *sigmas], output, mode, cval,
        axes=front_axes(axes, nd), **kwargs), 0


if _has_axes(ndimage.gaussian_gradient_magnitude):
    scipy_rule(ndimage.gaussian_gradient_magnitude,
               fast=_into_output_array(ndimage.gaussian_gradient_magnitude, 2))(
        gaussian_gradient_magnitude_rule)
    ARRAY_0D[ndimage.gaussian_gradient_magnitude] = Array0d.ALWAYS

for _name in AXES_FILTERS:
    _axes_filter(_name)
for _name, _first in AXIS_FILTERS.items():
    _axis_filter(_name, _first)
