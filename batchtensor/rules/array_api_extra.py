"""array-api-extra's functions, as SciPy vendors them (``scipy._lib.array_api_extra``).

``apply_where(cond, args, f1, f2=None, /, *, fill_value=None, xp=None)`` (SciPy's
distributions: ``gamma.logsf``, ``lognorm.pdf``, ``genextreme.cdf``, ...) selects
``arr[cond]`` of every argument, calls ``f1`` / ``f2`` on the selections and writes the results
into a new array. Its own Python code runs on batched values as it is (the selections are
ragged selections, ``rules/indexing.py``), but an argument that is a plain array while ``cond``
is batched meets a batched mask in a plain array's ``[]``, which NumPy converts without asking
batchtensor. So the rule first makes each such argument (and an array ``fill_value``) a
broadcast view batched at every level ``cond`` is batched at, then runs array-api-extra's
code. Every example sees the loop's values; ``apply_where`` only reads its arguments and
returns a new array, so the views change no memory behaviour. Loaded by
``batchtensor.foreign`` once SciPy's copy is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy._lib.array_api_extra as xpx

from ..plumbing import innermost
from ..registry import batch_rule
from ..tensor import BatchedTensor
from ._helpers import batched_as, levels_of, plain_value

_apply_where = xpx.apply_where


@batch_rule(_apply_where, raw=True)
def apply_where_rule(level: Any, args: tuple, kwargs: dict) -> Any:
    cond, arrays, *rest = args
    several = type(arrays) is tuple
    values = list(arrays) if several else [arrays]
    fill = kwargs.get("fill_value")
    batched = next((v for v in (cond, *values, fill) if type(v) is BatchedTensor), None)
    if batched is None:  # (batched elsewhere: array-api-extra's code as it is)
        return _apply_where(*args, **kwargs)
    like = innermost(batched)
    levels = levels_of([cond])
    if levels:  # plain[cond] with a batched cond: NumPy would convert cond
        values = [batched_as(v, levels, like) if plain_value(v, True) else v for v in values]
    if plain_value(fill, False):  # the result starts as a copy of the fill: one per example
        # (a scalar fill is used as it is: full_like). A copy batch first, not the broadcast
        # view, whose copy NumPy would lay out with the examples interleaved.
        fill = batched_as(fill, levels_of([cond, *values]), like)
        kwargs = dict(kwargs, fill_value=np.copy(fill, order="C"))
    return _apply_where(cond, tuple(values) if several else values[0], *rest, **kwargs)


#: (module, name, op): ``batchtensor.foreign`` intercepts the op under that name there (the
#: vendored package is private, so no public module of SciPy's holds it)
CALLED_AS = [(xpx, "apply_where", _apply_where)]
