"""Lowerings of physical NumPy ops to ONNX, one module per op family (importing registers)."""

from . import creation, elementwise, indexing, linalg, reductions, shape, sorting  # noqa: F401
