"""OpInfo entries for foreign callables (``opinfo/ops_scipy_*.py``).

NumPy never hands a call of ``scipy.signal.lfilter`` to batchtensor: it is intercepted where
code reaches it through its module (``batchtensor.foreign``). So the entry's op calls the
function through its module, as user code does, and ``covers`` is the function itself (the
registry key whose path the sweep checks).
"""

from __future__ import annotations

from typing import Any, Callable

from .core import OpInfo

__all__ = ["through_module", "foreign_op"]


def through_module(module: Any, name: str) -> Callable:
    """``module.name(...)`` looked up at each call (the Primitive while a vmap runs)."""

    def op(*args, **kwargs):
        return getattr(module, name)(*args, **kwargs)

    op.__name__ = op.__qualname__ = name
    op.__module__ = module.__name__
    return op


def foreign_op(module: Any, name: str, samples: Callable, **kwargs: Any) -> OpInfo:
    """The OpInfo of ``module.name``, served by a rule (``path="rule"`` unless given)."""
    kwargs.setdefault("path", "rule")
    return OpInfo(f"{module.__name__}.{name}", through_module(module, name), samples,
                  covers=getattr(module, name), **kwargs)
