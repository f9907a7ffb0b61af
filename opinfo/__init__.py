"""The OpInfo database and the exhaustive sweep.

``DATABASE`` lists one or more ``OpInfo`` per supported NumPy callable; ``sweep_op`` runs one
through every vmap variant against the per-example loop. ``python -m opinfo`` prints the
coverage table.
"""

from __future__ import annotations

import importlib
import pkgutil

from .core import OpInfo, SampleInput
from .sweep import SweepFailure, SweepResult, sweep_op


def _load() -> list:
    ops = []
    for mod in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("ops_")):
        ops.extend(importlib.import_module(f"{__name__}.{mod}").OPS)
    names = [o.name for o in ops]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"duplicate OpInfo names: {dupes}")
    return ops


DATABASE: list[OpInfo] = _load()
BY_NAME = {o.name: o for o in DATABASE}

__all__ = ["OpInfo", "SampleInput", "DATABASE", "BY_NAME", "sweep_op", "SweepFailure",
           "SweepResult"]
