"""Recording which dispatch path served each op (the OpInfo sweep and the demo read it)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

__all__ = ["record_paths"]

_RECORDERS: list = []


@contextmanager
def record_paths() -> Iterator[list]:
    """Collect ``(op, path)`` for every dispatched call, path in rule/boxed/decomposition/loop.

    >>> import numpy as np, batchtensor as bt
    >>> from batchtensor.dispatch import record_paths
    >>> with record_paths() as paths:
    ...     _ = bt.vmap(np.sum)(np.ones((2, 3)))
    >>> paths[0][1]
    'boxed'
    """
    log: list = []
    _RECORDERS.append(log)
    try:
        yield log
    finally:
        _RECORDERS.remove(log)


def _record(op, path: str) -> None:
    for log in _RECORDERS:
        log.append((op, path))
