"""ONNX export of vmapped functions: ``bt.onnx.export(func, *example_args, ...)``.

Runs ``bt.vmap(func)`` once on recording physical arrays (the batch rules are not written
twice) and writes every physical op as ONNX nodes, with symbolic batch axes (``"B"``; ``"B0"``,
``"B1"``, ... for nested vmap). Needs the ``onnx`` extra (``pip install 'batchtensor[onnx]'``):
``onnx`` to build the model, ``onnxruntime`` to validate it. See docs/onnx.md.
"""

from __future__ import annotations

from typing import Any, Callable

from . import lowerings as _lowerings  # noqa: F401  (registers the lowerings)
from . import exporter
from .errors import BatchSizeLeakError, ExportError, ExportValidationError, UnsupportedOpError
from .recorder import TArray

__all__ = ["export", "validate", "ExportError", "UnsupportedOpError", "BatchSizeLeakError",
           "ExportValidationError", "TArray"]


def _require_onnx() -> None:
    try:
        import onnx  # noqa: F401, PLC0415
    except ImportError as e:
        raise ImportError(
            "bt.onnx.export needs the 'onnx' package (and onnxruntime to validate): install "
            "the extra with  pip install 'batchtensor[onnx]'") from e


def export(func: Callable, *example_args: Any, **kwargs: Any):
    _require_onnx()
    return exporter.export(func, *example_args, **kwargs)


def validate(model, func: Callable, *example_args: Any, **kwargs: Any) -> None:
    _require_onnx()
    exporter.validate(model, func, *example_args, **kwargs)


export.__doc__ = exporter.export.__doc__
validate.__doc__ = exporter.validate.__doc__
