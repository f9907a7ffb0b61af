"""Creation from a prototype: zeros_like, ones_like, empty_like, full_like.

``np.zeros_like(x)`` of a batched ``x`` is batched: a fresh, writable array per example (so
``out = np.zeros_like(x, shape=(3,)); out[0] = x[0]`` works per example). A batched
``fill_value`` of ``full_like`` makes the result batched even for an unbatched prototype.

``np.zeros(shape, like=x)`` and the other ``like=`` functions do not come here: nothing batched
reaches them, so ``dispatch`` creates a plain array on ``x``'s physical backend.
"""

from __future__ import annotations

import operator

import numpy as np

from ..registry import batch_rule
from ._helpers import move_bdim_to_front, pad_to_rank


def _shape_arg(shape) -> tuple:
    if isinstance(shape, (int, np.integer)):
        return (operator.index(shape),)
    return tuple(operator.index(d) for d in shape)


def _batched_like(make, a, a_bdim, n, dtype, order, subok, shape, device):
    """``make`` (an ``*_like`` function) per example: returns ``(out, out_bdim)``.

    With ``order`` K/A and no ``shape`` the physical layout (batch axis included) is kept;
    otherwise every example gets the requested order: batch axis first for C, last for F.
    """
    kw = {"dtype": dtype, "subok": subok}
    if device is not None:
        kw["device"] = device
    if a_bdim is not None and shape is None and order in ("K", "A"):
        return make(a, order=order, **kw), a_bdim
    if shape is not None:
        lshape = _shape_arg(shape)
    elif a_bdim is None:  # a plain array, a list, or a BatchedTensor of an outer level
        lshape = tuple(a.shape) if hasattr(a, "shape") else np.shape(a)
    else:  # (a.shape, not np.shape: a may be a BatchedTensor of an outer level)
        lshape = tuple(a.shape[:a_bdim]) + tuple(a.shape[a_bdim + 1:])
    if a_bdim is not None:
        a = move_bdim_to_front(a, a_bdim)
    if order == "F":
        return make(a, order="F", shape=lshape + (n,), **kw), len(lshape)
    if order not in ("C", "K", "A"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    return make(a, order="C", shape=(n,) + lshape, **kw), 0


def _like_rule(op):
    def rule(a, a_bdim, dtype=None, order="K", subok=True, shape=None, *, device=None):
        return _batched_like(op, a, a_bdim, a.shape[a_bdim], dtype, order, subok, shape, device)

    rule.__name__ = f"{op.__name__}_rule"
    return batch_rule(op)(rule)


zeros_like_rule = _like_rule(np.zeros_like)
ones_like_rule = _like_rule(np.ones_like)


@batch_rule(np.empty_like)
def empty_like_rule(prototype, prototype_bdim, dtype=None, order="K", subok=True, shape=None, *,
                    device=None):
    n = prototype.shape[prototype_bdim]
    return _batched_like(np.empty_like, prototype, prototype_bdim, n, dtype, order, subok, shape,
                         device)


@batch_rule(np.full_like)
def full_like_rule(a, a_bdim, fill_value, fill_value_bdim, dtype=None, order="K", subok=True,
                   shape=None, *, device=None):
    if fill_value_bdim is None:
        def make(x, **kw):
            return np.full_like(x, fill_value, **kw)

        return _batched_like(make, a, a_bdim, a.shape[a_bdim], dtype, order, subok, shape,
                             device)
    # A fill value per example: an empty result of a's dtype, then one copy (as NumPy does).
    n = fill_value.shape[fill_value_bdim]
    if dtype is None:
        dtype = a.dtype if hasattr(a, "dtype") else np.result_type(a)
    out, out_bdim = _batched_like(np.empty_like, a, a_bdim, n, dtype, order, subok, shape,
                                  device)
    target = move_bdim_to_front(out, out_bdim)
    fill = pad_to_rank(move_bdim_to_front(fill_value, fill_value_bdim), target.ndim - 1)
    np.copyto(target, fill, casting="unsafe")
    return out, out_bdim


__all__ = ["zeros_like_rule", "ones_like_rule", "empty_like_rule", "full_like_rule"]
