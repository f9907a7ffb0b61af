"""ONNX export of vmapped functions: ``bt.onnx.export(func, *example_args, ...)``.

Runs ``bt.vmap(func)`` once on recording physical arrays (the batch rules are not written
twice) and writes every physical op as ONNX nodes, with symbolic batch axes (``"B"``; ``"B0"``,
``"B1"``, ... for nested vmap). Needs the ``onnx`` extra (``pip install 'batchtensor[onnx]'``):
``onnx`` to build the model, ``onnxruntime`` to validate it. See docs/onnx.md.
"""

from __future__ import annotations

from typing import Any, Callable

from . import lowerings as _lowerings  # noqa: F401  (registers the lowerings)
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
    from .exporter import export as _export  # noqa: PLC0415

    return _export(func, *example_args, **kwargs)


def validate(model, func: Callable, *example_args: Any, **kwargs: Any) -> None:
    _require_onnx()
    from .exporter import validate as _validate  # noqa: PLC0415

    _validate(model, func, *example_args, **kwargs)


def _doc_from(target) -> None:
    from . import exporter as _mod  # noqa: PLC0415

    target.__doc__ = getattr(_mod, target.__name__).__doc__


_doc_from(export)
_doc_from(validate)
