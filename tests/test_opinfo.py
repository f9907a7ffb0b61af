"""The OpInfo sweep: every database entry, every dtype, every vmap variant, against the loop.

The layout / alias dimension runs ``LAYOUT_SUBSET`` of its (layout, in_axes) cases per sample
here, rotating by entry and sample (``python -m opinfo`` runs all of them)."""

from __future__ import annotations

import numpy as np
import pytest

from opinfo import DATABASE, sweep_op
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
