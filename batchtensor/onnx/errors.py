"""Exceptions raised by the ONNX exporter."""

from __future__ import annotations

__all__ = ["ExportError", "UnsupportedOpError", "BatchSizeLeakError", "ExportValidationError"]


class ExportError(RuntimeError):
    """The function cannot be exported as it is (the message says why and what to do)."""


class UnsupportedOpError(ExportError):
    """A physical op, an argument of it, or a dtype has no ONNX lowering that matches NumPy."""


class BatchSizeLeakError(ExportError):
    """The concrete batch size of the trace reached the graph as a literal."""


class ExportValidationError(ExportError):
    """The exported model failed validation (checker, shape inference or onnxruntime)."""
