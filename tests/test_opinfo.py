"""The OpInfo sweep: every database entry, every dtype, every vmap variant, against the loop.

The layout / alias dimension runs ``LAYOUT_SUBSET`` of its (layout, in_axes) cases per sample
here, rotating by entry and sample (``python -m opinfo`` runs all of them)."""

from __future__ import annotations

import numpy as np
import pytest

from opinfo import DATABASE, OpInfo, SampleInput, SweepFailure, sweep_op
from opinfo.sweep import LAYOUT_SUBSET

CASES = [pytest.param(info, dt, id=f"{info.name}-{np.dtype(dt)}")
         for info in DATABASE for dt in info.dtypes]


@pytest.mark.parametrize("info, dtype", CASES)
def test_sweep(info, dtype):
    result = sweep_op(info, dtype, layouts=LAYOUT_SUBSET)
    assert result.samples > 0, f"{info.name} has no samples"
    if info.path != "loop":
        # The path assertion inside the sweep already failed if the loop served the op; here:
        # the expected path really was taken by at least one sample.
        assert info.path in result.paths or not result.paths, (info.name, result.paths)


# ---- the layout / alias dimension catches what it is for --------------------------------------
def _vector(rng, dtype):
    yield SampleInput((rng.normal(size=(3, 2)).astype(dtype),), {}, "(3, 2)")


_MISBEHAVING = {  # name -> an op that behaves as NumPy in the loop and otherwise under vmap
    "a copy where the loop views": lambda x: x if type(x) is np.ndarray else np.copy(x),
    "a view where the loop copies": lambda x: np.copy(x) if type(x) is np.ndarray else x,
    "read-only where the loop writes": lambda x: (
        np.copy(x) if type(x) is np.ndarray else np.broadcast_to(x * 1.0, x.shape)),
    "writeable where the loop is read-only": lambda x: (
        np.broadcast_to(x, x.shape) if type(x) is np.ndarray else x * 1.0),
}


@pytest.mark.parametrize("name", list(_MISBEHAVING))
def test_the_layout_dimension_catches_another_memory_behaviour(name):
    info = OpInfo(name, _MISBEHAVING[name], _vector, "rule")
    with pytest.raises(SweepFailure, match="layout C.*(writing into the outputs|array argument "
                                           "0 is (changed|unchanged) under vmap)"):
        sweep_op(info, np.float64, layouts=None)
