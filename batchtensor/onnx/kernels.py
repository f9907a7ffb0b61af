"""Which (ONNX op, dtype) pairs the installed onnxruntime can run, found by trying.

onnxruntime implements only some dtypes per op (float64 ``Tan``, ``Erf``, ``Atan``... are missing;
``Where`` has no bool kernel; most ops have no int8/int16 kernel). The exporter asks
``has_kernel`` before emitting a compute node and widens exactly (small ints to int32, float16
to float32, bool to uint8) or refuses when no exact route exists. The answer comes from building
and running a one-node model, cached per process. Without onnxruntime every pair is assumed to
exist (the model is then only as portable as the ONNX schemas say).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__ = ["has_kernel", "onnx_type", "ir_version_for"]


def ir_version_for(opset: int) -> int:
    """The lowest IR version that carries ``opset`` (what every onnxruntime that knows the
    opset accepts; onnx's own default is often newer than onnxruntime supports)."""
    from onnx import helper  # noqa: PLC0415

    return helper.find_min_ir_version_for([helper.make_opsetid("", opset)])


def onnx_type(dtype) -> int:
    from onnx import helper  # noqa: PLC0415

    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


@lru_cache(maxsize=None)
def _ort():
    try:
        import onnxruntime  # noqa: PLC0415
    except ImportError:
        return None
    return onnxruntime


@lru_cache(maxsize=None)
def has_kernel(op_type: str, dtypes: tuple, opset: int, attrs: tuple = (),
               extra: tuple = (), out: str | None = None, rank: int = 1, n_out: int = 1) -> bool:
    """Can onnxruntime run ``op_type`` on inputs of ``dtypes`` (then the ``extra`` constant
    inputs, given as ``(dtype str, values tuple)``), producing ``out`` (default: the last of
    ``dtypes``)?"""
    ort = _ort()
    if ort is None:
        return True
    from onnx import helper, numpy_helper  # noqa: PLC0415

    dts = [np.dtype(d) for d in dtypes]
    n = len(dts)
    shape = (2,) * rank
    names = [f"x{i}" for i in range(n)]
    inits = []
    for i, (edt, vals) in enumerate(extra):
        arr = np.array(vals, dtype=edt)
        inits.append(numpy_helper.from_array(arr, f"e{i}"))
        names.append(f"e{i}")
    node = helper.make_node(op_type, names, ["y"] + [f"y{i}" for i in range(1, n_out)],
                            **dict(attrs))
    out_dt = np.dtype(out) if out is not None else dts[-1]
    graph = helper.make_graph(
        [node], "probe",
        [helper.make_tensor_value_info(f"x{i}", onnx_type(dt), shape) for i, dt in enumerate(dts)],
        [helper.make_tensor_value_info("y", onnx_type(out_dt), None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=ir_version_for(opset))
    try:
        opts = ort.SessionOptions()
        opts.log_severity_level = 4
        sess = ort.InferenceSession(model.SerializeToString(), opts,
                                    providers=["CPUExecutionProvider"])
        sess.run(None, {f"x{i}": np.ones(shape, dtype=dt) for i, dt in enumerate(dts)})
    except Exception:  # noqa: BLE001  (any failure means: do not emit this)
        return False
    return True
