"""Compiled kernels called once per example inside a batch rule.

Some foreign functions are compiled code that takes one example's 1-d arrays through the
buffer protocol (Cython typed memoryviews, Pythran) and returns Python scalars: Shapiro-Wilk's
``swilk``, Kendall's ``_kendall_dis``, Siegel's repeated medians. A formula over the batch
would not repeat their arithmetic to the last bit, and the per-example loop of the whole
function they sit in reruns all its Python; so their rules call the kernel once per example
(about a microsecond each) and stack the results as the loop stacks them.

Each example reaches the kernel laid out as in the loop: a kernel that wants a C-contiguous
buffer gets a contiguous copy where the loop's example is contiguous and the batch holds it
interleaved (a value computed inside the function with the batch axis inside the examples'
memory), and the example's own view otherwise, so that it refuses what the loop's call refuses
(a strided view of a vmap input). Values batched at an outer level are dispatched again there.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..dispatch import function_call
from ..plumbing import scan_level
from ..tensor import BatchedTensor, is_plain_array
from ._helpers import logical_shape, move_bdim_to_front
from .views import example_strides, is_contiguous

__all__ = ["kernel_call", "copy_c", "loop_c_contiguous", "interleaved", "examples",
           "each_example", "stacked"]


def kernel_call(fn: Callable, *args: Any) -> Any:
    """``fn(*args)`` on one example's values; where one is batched at an outer level (a nested
    vmap), dispatched at that level, whose rule calls ``fn`` per example in turn."""
    if scan_level(args) is not None:
        return function_call(fn, args, {})
    return fn(*args)


def copy_c(x: Any) -> Any:
    """A C-ordered copy of ``x``, read-only where ``x`` is (a kernel that writes refuses it, as
    it refuses the original)."""
    out = np.empty_like(x, order="C")
    np.copyto(out, x)
    if not x.flags.writeable:
        out.flags.writeable = False
    return out


def loop_c_contiguous(x: Any, bdim: int | None) -> bool:
    """Whether the loop's example of ``x`` is C-contiguous (an array of a backend without
    strides is taken to be)."""
    if bdim is None:
        return not hasattr(x, "flags") or bool(x.flags.c_contiguous)
    strides = example_strides(x, bdim)
    return strides is None or is_contiguous(logical_shape(x, bdim), strides,
                                            x.dtype.itemsize, False)


def interleaved(x: Any, bdim: int | None) -> bool:
    """Whether the loop's example of ``x`` is C-contiguous and the batch's is not (a value
    computed inside the function, the batch axis inside the examples' memory)."""
    if bdim is None:
        return False
    front = move_bdim_to_front(x, bdim)
    if type(front) is not np.ndarray or not front.shape[0] or front[0].flags.c_contiguous:
        return False
    return loop_c_contiguous(x, bdim)


def examples(x: Any, bdim: int | None, size: int, contiguous: bool = False) -> list:
    """The ``size`` examples of ``x`` (``x`` itself for each where it is not batched) as a
    kernel receives them in the loop; ``contiguous``: the kernel takes C-contiguous buffers
    only (a copy where ``interleaved``; else the example's view, refused where the loop's
    example is refused)."""
    if bdim is None:
        if type(x) is not np.ndarray and is_plain_array(x):  # an array f made (a buffer):
            x = x[...]  # the plain array under it, which compiled code takes
        return [x] * size
    front = move_bdim_to_front(x, bdim)
    exs = [front[i] for i in range(size)]
    return [copy_c(e) for e in exs] if contiguous and interleaved(x, bdim) else exs


def each_example(fn: Callable, *columns: list) -> list:
    """``fn`` on each example's arguments (``columns``: one list of the examples' values per
    argument, as ``examples`` makes them), in the order of the loop."""
    return [kernel_call(fn, *args) for args in zip(*columns)]


def stacked(results: list, like: Any, dtypes: Sequence) -> tuple:
    """The examples' results (scalars, or tuples of scalars: one per output) as the loop
    stacks them, one batch-first array per output (``dtypes``: the outputs' dtypes, for a
    batch of no examples); each output as ``(array, 0)``."""
    outputs: list = list(zip(*results)) if results and type(results[0]) is tuple else \
        [results] if results else [[] for _ in dtypes]
    return tuple((_stack(list(col), like, dt), 0) for col, dt in zip(outputs, dtypes))


def _stack(col: list, like: Any, dtype: Any) -> Any:
    if not col:
        return np.empty((0,), dtype=dtype, like=like)
    if any(type(v) is BatchedTensor for v in col):  # each batched at an outer level
        return np.stack(col)
    return np.array(col, like=like)
