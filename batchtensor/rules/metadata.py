"""Type and metadata queries: result_type, can_cast, min_scalar_type, common_type,
shares_memory, may_share_memory.

They answer for the logical array (one example) and return plain Python / NumPy values, never
batched ones:

- ``result_type``, ``can_cast``, ``common_type`` depend only on dtypes (NEP 50), so a batched
  value stands in by its dtype.
- ``min_scalar_type`` of an array with ndim > 0 is its dtype. Of a 0-d array it depends on the
  *value*: the answer is the examples' common answer, and a clear error when they disagree
  (what the per-example loop does with results that are not arrays).
- ``shares_memory`` / ``may_share_memory`` answer for example i of each argument. When the
  physical arrays cannot overlap at all the answer is False at once; otherwise each example
  pair is checked (a bounds / overlap check per example, no data is read) and the answers must
  agree.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..plumbing import unwrap
from ..registry import is_physical_type
from ..errors import BatchingError, DataDependentError
from ..registry import batch_rule, op_name
from ..tensor import BatchedTensor


def _by_dtype(x: Any) -> Any:
    return x.dtype if type(x) is BatchedTensor else x


@batch_rule(np.result_type, raw=True)
def result_type_rule(level, args, kwargs):
    return np.result_type(*[_by_dtype(a) for a in args], **kwargs)


@batch_rule(np.can_cast, raw=True)
def can_cast_rule(level, args, kwargs):
    return np.can_cast(*[_by_dtype(a) for a in args],
                       **{k: _by_dtype(v) for k, v in kwargs.items()})


@batch_rule(np.common_type, raw=True)
def common_type_rule(level, args, kwargs):
    # common_type reads only ``.dtype``: an empty array of the same dtype answers the same
    # (a NumPy one, also for another backend's array, which must not meet NumPy's).
    return np.common_type(*[np.empty(0, a.dtype)
                            if type(a) is BatchedTensor or is_physical_type(type(a)) else a
                            for a in args], **kwargs)


def _examples(v, bdim) -> list:
    return [v[(slice(None),) * bdim + (i,)] for i in range(v.shape[bdim])]


def _agree(op, answers: list) -> Any:
    first = answers[0]
    for i, a in enumerate(answers[1:], 1):
        if a != first:
            raise DataDependentError(
                f"{op_name(op)}: the answer depends on the values and the examples disagree "
                f"({first!r} for example 0, {a!r} for example {i}); one call cannot return "
                f"both. Ask for the array's dtype (x.dtype) or use np.result_type instead.")
    return first


@batch_rule(np.min_scalar_type)
def min_scalar_type_rule(a, a_bdim, /):
    if a.ndim > 1:
        return a.dtype, None  # ndim > 0 per example: the dtype, whatever the values
    if a.shape[a_bdim] == 0:
        raise BatchingError("numpy.min_scalar_type of a 0-d batched value with batch size 0: "
                            "the answer depends on a value and there is none")
    return _agree(np.min_scalar_type, [np.min_scalar_type(e) for e in _examples(a, a_bdim)]), None


def _overlap_rule(op):
    @batch_rule(op, raw=True)
    def rule(level, args, kwargs):
        if len(args) < 2:
            return op(*args, **kwargs)  # let NumPy raise its own TypeError
        (va, ba), (vb, bb) = unwrap(args[0], level), unwrap(args[1], level)
        if is_physical_type(type(va)) and is_physical_type(type(vb)) \
                and not np.may_share_memory(va, vb):
            return False  # the whole buffers do not overlap: no example pair can
        n = va.shape[ba] if ba is not None else vb.shape[bb]
        if n == 0:
            return False  # an empty batch holds no memory to overlap (as the check above says)
        xs = _examples(va, ba) if ba is not None else [va] * n
        ys = _examples(vb, bb) if bb is not None else [vb] * n
        return _agree(op, [op(x, y, *args[2:], **kwargs) for x, y in zip(xs, ys)])

    rule.__name__ = f"{op.__name__}_rule"
    return rule


shares_memory_rule = _overlap_rule(np.shares_memory)
may_share_memory_rule = _overlap_rule(np.may_share_memory)
