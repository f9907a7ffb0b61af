"""batchtensor: an eager, functorch-style vmap for NumPy-API code.

>>> import numpy as np, batchtensor as bt
>>> per_example = lambda x, w: np.tanh(w @ x).sum()
>>> xs, w = np.ones((8, 3)), np.full((4, 3), 0.1)
>>> bt.vmap(per_example, in_axes=(0, None))(xs, w).shape
(8,)
"""

from typing import Any as _Any

# The layers, bottom up (each imports only those below it; tests/test_architecture.py checks):
# the class, its operators and the dispatcher; the boxed fallbacks (which fill the
# dispatcher's slots); the rules and decompositions (which register themselves); the API.
from . import operators as _operators  # noqa: F401  (installs the Python operators)
from . import boxed
from . import decompositions as _decompositions  # noqa: F401  (registers)
from .rules import (creation, differences, elementwise, fft, histograms,  # noqa: F401
                    indexing, joining, linalg, memory, metadata, moments, placement, polynomial,
                    products, quantiles, reductions, selection, setops, shape, sorting, vectorize,
                    views)
from . import random
from . import undispatched as _undispatched  # noqa: F401  (numpy's undispatched arguments)
from . import numpy_random as _numpy_random  # noqa: F401  (numpy.random inside vmap)
from . import masked as _masked  # noqa: F401  (numpy.ma inside vmap)
from .api import vmap, vmap_level
from .explain import explain
from .foreign import Primitive, batch_rule, primitive
from .config import config
from .errors import (BatchingError, EscapedBatchedTensorError, PerformanceWarning,
                     SharedWriteError)
from .registry import decomposition
from .tensor import BatchedTensor

__all__ = ["vmap", "vmap_level", "explain", "BatchedTensor", "batch_rule", "primitive", "Primitive", "boxed",
           "decomposition",
           "random", "config", "PerformanceWarning", "BatchingError", "EscapedBatchedTensorError",
           "SharedWriteError"]
__version__ = "0.1.0"


def __getattr__(name: str) -> _Any:  # (Any: the attributes of the module it gives)
    # bt.onnx is imported on first use: it needs the optional onnx extra only when exporting.
    if name == "onnx":
        import importlib

        return importlib.import_module(f"{__name__}.onnx")
    raise AttributeError(f"module 'batchtensor' has no attribute {name!r}")
