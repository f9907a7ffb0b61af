"""The recording physical array: ``TArray``.

The batch rules call NumPy functions on their physical values; NumPy forwards every call on a
``TArray`` to ``__array_function__`` / ``__array_ufunc__`` (as it does for CuPy), and the
recorder then

1. runs the op eagerly twice: on the values traced at the trace batch sizes (``.v``) and on a
   *shadow* run at other batch sizes (``.s``). Dimensions that differ between the two are
   batch-dependent (``SymDim``); a shadow run that fails means a rule turned the batch size into
   a literal (a leak, reported with the op and the rule's file and line);
2. folds ops whose inputs depend on no graph input to constants (their eager value);
3. otherwise lowers the op to ONNX nodes with the lowering registered for it; an op with no
   lowering raises ``UnsupportedOpError`` naming it.

In-place writes (``x[k] = v``, ``np.copyto``, ``out=``) rebind the written array to a new graph
value. Writing through a view of another recorded array is refused (ONNX values are immutable),
and a view read after its base was written raises instead of giving a stale value.
"""

from __future__ import annotations

import inspect
import math
import operator
import os
import sys
import threading
from types import FrameType
from typing import Any, Callable

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from ..foreign import ONNX_LOWERINGS
from ..registry import ALIASES, op_name, register_physical_type
from ..tensor import (BatchedTensor, ints_or_sequence, ndarray_astype, ndarray_fill,
                      ndarray_transpose)
from .errors import BatchSizeLeakError, ExportError, UnsupportedOpError
from .symdim import SymDim

__all__ = ["TArray", "Out", "LOWERINGS", "lowering", "record", "tracing", "current_graph"]

_state = threading.local()

#: physical op key (a NumPy callable, or (ufunc, method)) -> lowering function
LOWERINGS: dict = {}
#: op key -> ONNX op types it emits (for the docs)
ONNX_OPS: dict = {}
#: ops that write into their argument at this index
WRITES: dict = {operator.setitem: 0, np.copyto: 0, ndarray_fill: 0, np.put_along_axis: 0,
                np.put: 0, np.place: 0, np.putmask: 0}


def lowering(*keys: Any, onnx: tuple = ()) -> Callable:
    """Register ``fn(g, out, *args, **kwargs) -> name | [names]`` as the lowering of ``keys``.

    ``out`` is an ``Out`` (or a list of them for several results): the eager result, its dtype
    and its dims (ints and SymDims). Arguments are as the op received them (``TArray``s,
    ``SymDim``s, constants); ``g.val(x, dtype)`` gives any of them as a graph value.
    """

    def deco(fn):
        for k in keys:
            LOWERINGS[k] = fn
            ONNX_OPS[k] = tuple(onnx)
        return fn

    return deco


def current_graph():
    return getattr(_state, "graph", None)


class tracing:
    """Context manager: record into ``graph`` (one export at a time per thread)."""

    def __init__(self, graph):
        self.graph = graph

    def __enter__(self):
        if current_graph() is not None:
            raise ExportError("bt.onnx.export cannot be nested inside another export")
        _state.graph = self.graph
        return self.graph

    def __exit__(self, *exc):
        _state.graph = None
        return False


class Out:
    """One eager result of a recorded op, as lowerings see it."""

    __slots__ = ("v", "s", "_dims")

    def __init__(self, v, s):
        self.v, self.s, self._dims = v, s, None

    @property
    def dtype(self) -> np.dtype:
        return self.v.dtype

    @property
    def ndim(self) -> int:
        return self.v.ndim

    @property
    def dims(self) -> list:
        if self._dims is None:
            self._dims = current_graph().dims_of(self.v.shape, self.s.shape)
        return self._dims


_NO_CONVERSION = (
    "A recorded value cannot become a Python or NumPy value during the export: its content "
    "depends on the inputs, so the graph would bake in one trace's numbers. Typical causes: "
    "np.asarray/np.array on a value, Python control flow on values (if x > 0: use np.where), "
    "or a batch rule that inspects values (report the rule).")


_ARRAY_POWER = {(int, 2): np.square, (int, -1): np.reciprocal, (float, 0.5): np.sqrt}


class TArray(NDArrayOperatorsMixin):
    """A physical array being recorded: eager values ``v`` (trace sizes) and ``s`` (shadow
    sizes), and ``name``, its graph value (None: a folded constant)."""

    __slots__ = ("v", "s", "name", "root", "root_version", "version")

    v: Any
    s: Any
    name: str | None
    root: TArray | None
    root_version: int
    version: int

    def __init__(self, v, s, name: str | None, root: TArray | None = None):
        self.v, self.s, self.name = v, s, name
        self.root = root
        self.root_version = root.version if root is not None else 0
        self.version = 0

    # ---- metadata ---------------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        vs, ss = self.v.shape, self.s.shape
        if vs == ss:
            return vs
        return tuple(a if a == b else self._sym(a, b, i) for i, (a, b) in enumerate(zip(vs, ss)))

    def _sym(self, a: int, b: int, i: int) -> SymDim:
        d = SymDim(a, b, ("shape", self.name, i))
        d.like = self
        return d

    @property
    def ndim(self) -> int:
        return self.v.ndim

    @property
    def dtype(self) -> np.dtype:
        return self.v.dtype

    @property
    def size(self) -> Any:
        return math.prod(self.shape)  # a SymDim for a shape with the symbolic batch size

    @property
    def itemsize(self) -> int:
        return self.v.itemsize

    @property
    def strides(self) -> tuple:
        return self.v.strides

    @property
    def is_const(self) -> bool:
        return self.name is None

    @property
    def T(self):
        return np.transpose(self)

    def __repr__(self) -> str:
        what = "constant" if self.name is None else f"graph value {self.name!r}"
        return f"TArray(shape={self.shape}, dtype={self.dtype}, {what})"

    def check_fresh(self) -> None:
        r = self.root
        if r is not None and r.version != self.root_version:
            raise ExportError(
                "a view of an array was read after that array was written in place; the "
                "exported graph cannot alias values. Take a copy (np.copy) before writing, or "
                "create the view after the write.")

    # ---- conversions that would bake values in -----------------------------------------------
    def _convert(self, what: str):
        if self.name is None:
            return getattr(self.v, what)()
        raise ExportError(f"{what}() of a recorded value. {_NO_CONVERSION}")

    def __array__(self, dtype=None, copy=None):
        if self.name is None:
            return self.v if dtype is None else self.v.astype(dtype)
        raise ExportError(f"converting a recorded value to a NumPy array. {_NO_CONVERSION}")

    def __bool__(self) -> bool:
        return self._convert("__bool__")

    def __int__(self) -> int:
        return self._convert("__int__")

    def __float__(self) -> float:
        return self._convert("__float__")

    def __index__(self) -> int:
        return self._convert("__index__")

    def item(self, *args):
        if self.name is None:
            return self.v.item(*args)
        raise ExportError(f".item() of a recorded value. {_NO_CONVERSION}")

    def tolist(self):
        if self.name is None:
            return self.v.tolist()
        raise ExportError(f".tolist() of a recorded value. {_NO_CONVERSION}")

    def __len__(self) -> int:
        if not self.v.ndim:
            raise TypeError("len() of unsized object")
        if self.v.shape[0] != self.s.shape[0]:
            raise ExportError("len() of a recorded array along a batch axis: the batch size "
                              "would become a literal")
        return self.v.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    # ---- NumPy protocols ----------------------------------------------------------------------
    def __array_function__(self, func, types, args, kwargs):
        for t in types:
            if t is not TArray and not issubclass(t, np.ndarray):
                return NotImplemented
        # NumPy's like= path looks the function up in ``numpy`` by name: while a vmap runs that
        # may be batchtensor's stand-in for it (``registry.ALIASES``), recorded as NumPy's
        func = ALIASES.get(func, func)
        meta = _META.get(func)
        if meta is not None:
            return meta(func, args, kwargs)
        args, kwargs = _out_by_name(func, args, kwargs)
        return record(func, func, args, kwargs)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        for x in inputs + tuple(kwargs.get("out", ()) or ()):
            t = type(x)
            if t is BatchedTensor or (t is not TArray and hasattr(t, "__array_ufunc__")
                                      and not isinstance(x, (np.ndarray, np.generic))):
                return NotImplemented
        if method == "__call__":
            return record(ufunc, ufunc, inputs, kwargs)
        return record(getattr(ufunc, method), (ufunc, method), inputs, kwargs)

    # ndarray's ``**`` is not quite np.power (batchtensor.tensor._array_power): a Python int 2 /
    # -1 or float 0.5 exponent of a float or complex array is np.square / reciprocal / sqrt,
    # and the result dtype is the operator's (``bool ** 2`` is int8).
    def __pow__(self, other):
        t = type(other)
        if t is not int and t is not float:
            return np.power(self, other)
        fast = _ARRAY_POWER.get((t, other)) if self.dtype.kind in "fc" else None
        if fast is not None:
            return fast(self)
        dtype = (np.ones(1, self.dtype) ** other).dtype  # raises as the operator does
        res = np.power(self, other)
        return res if res.dtype == dtype else res.astype(dtype)

    def __ipow__(self, other):
        t = type(other)
        fast = _ARRAY_POWER.get((t, other)) if (t is int or t is float) \
            and self.dtype.kind in "fc" else None
        if fast is not None:
            return fast(self, out=(self,))
        return np.power(self, other, out=(self,))

    def __getitem__(self, key):
        return record(operator.getitem, operator.getitem, (self, key), {})

    def __setitem__(self, key, value) -> None:
        record(operator.setitem, operator.setitem, (self, key, value), {})

    # ---- ndarray methods the rules (and NumPy internals) use ----------------------------------
    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        return record(ndarray_astype, ndarray_astype, (self, dtype),
                      {"order": order, "casting": casting, "copy": copy})

    def fill(self, value) -> None:
        record(ndarray_fill, ndarray_fill, (self, value), {})

    def copy(self, order="C"):
        return np.copy(self, order=order)

    def reshape(self, *shape, order="C"):
        return np.reshape(self, ints_or_sequence(shape), order=order)

    def transpose(self, *axes):
        return ndarray_transpose(self, axes)

    def ravel(self, order="C"):
        return np.ravel(self, order)

    def flatten(self, order="C"):
        return np.copy(np.ravel(self, order))

    def squeeze(self, axis=None):
        return np.squeeze(self, axis)

    def swapaxes(self, a, b):
        return np.swapaxes(self, a, b)

    def sum(self, *a, **k):
        return np.sum(self, *a, **k)

    def mean(self, *a, **k):
        return np.mean(self, *a, **k)

    def max(self, *a, **k):
        return np.max(self, *a, **k)

    def min(self, *a, **k):
        return np.min(self, *a, **k)

    def prod(self, *a, **k):
        return np.prod(self, *a, **k)

    def any(self, *a, **k):
        return np.any(self, *a, **k)

    def all(self, *a, **k):
        return np.all(self, *a, **k)

    def argmax(self, *a, **k):
        return np.argmax(self, *a, **k)

    def argmin(self, *a, **k):
        return np.argmin(self, *a, **k)

    def cumsum(self, *a, **k):
        return np.cumsum(self, *a, **k)

    def clip(self, *a, **k):
        return np.clip(self, *a, **k)

    def round(self, decimals=0):
        return np.round(self, decimals)

    def conj(self):
        return np.conjugate(self)

    def dot(self, b):
        return np.dot(self, b)

    def take(self, indices, axis=None, mode="raise"):
        return np.take(self, indices, axis=axis, mode=mode)


register_physical_type(TArray)


# ---- metadata functions: answered from the trace, nothing recorded ---------------------------
def _meta_shape(func, args, kwargs):
    (a,) = args
    return a.shape if type(a) is TArray else np.shape(a)


def _meta_size(func, args, kwargs):
    a = args[0]
    axis = args[1] if len(args) > 1 else kwargs.get("axis")
    if axis is None:
        return a.size
    return a.shape[axis]


def _meta_plain(func, args, kwargs):
    return func(*_map(args, 0), **_map(kwargs, 0))


_META: dict = {np.shape: _meta_shape, np.size: _meta_size, np.ndim: _meta_plain,
               np.result_type: _meta_plain, np.iscomplexobj: _meta_plain,
               np.isrealobj: _meta_plain, np.may_share_memory: _meta_plain,
               np.shares_memory: _meta_plain, np.can_cast: _meta_plain,
               np.min_scalar_type: _meta_plain}


# ---- recording ----------------------------------------------------------------------------------
_OUT_POS: dict = {}


def _out_by_name(func, args: tuple, kwargs: dict) -> tuple:
    """``args, kwargs`` with a positional ``out`` (``np.clip(a, lo, hi, o)``, as the boxed
    rules call it) and the arguments after it passed by name, so that the recorder sees the
    write."""
    names = _OUT_POS.get(func, ())
    if names == ():
        names = None
        try:
            params = list(inspect.signature(func).parameters.values())
        except (TypeError, ValueError):
            params = []
        for i, p in enumerate(params):
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                break
            if p.name == "out":
                names = [q.name for q in params[i:]
                         if q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD)], i
                break
        _OUT_POS[func] = names
    if names is not None and len(args) > names[1]:
        rest, i = names
        kwargs = dict(kwargs)
        kwargs.update(zip(rest, args[i:]))
        args = args[:i]
    if "out" in kwargs and kwargs["out"] is None:  # (the lowerings' own ``out`` is the result)
        kwargs = {k: v for k, v in kwargs.items() if k != "out"}
    return args, kwargs


def _map(obj: Any, which: int) -> Any:
    """``obj`` with every TArray replaced by its trace (0) or shadow (1) value."""
    t = type(obj)
    if t is TArray:
        obj.check_fresh()
        return obj.v if which == 0 else obj.s
    if t is SymDim:
        return int(obj) if which == 0 else obj.s
    if t is tuple or t is list:
        return t(_map(x, which) for x in obj)
    if t is dict:
        return {k: _map(x, which) for k, x in obj.items()}
    if t is slice:
        return slice(_map(obj.start, which), _map(obj.stop, which), _map(obj.step, which))
    return obj


def _tarrays(obj: Any, acc: list) -> list:
    t = type(obj)
    if t is TArray:
        acc.append(obj)
    elif t is tuple or t is list:
        for x in obj:
            _tarrays(x, acc)
    elif t is dict:
        for x in obj.values():
            _tarrays(x, acc)
    elif t is slice:
        _tarrays((obj.start, obj.stop, obj.step), acc)
    return acc


def _has_sym(obj: Any) -> bool:
    t = type(obj)
    if t is SymDim:
        return True
    if t is tuple or t is list:
        return any(_has_sym(x) for x in obj)
    if t is dict:
        return any(_has_sym(x) for x in obj.values())
    if t is slice:
        return _has_sym((obj.start, obj.stop, obj.step))
    return False


_HERE = os.path.dirname(os.path.abspath(__file__))
_NUMPY = os.path.dirname(np.__file__)


def call_site() -> str:
    """``file:line`` of the innermost caller outside the exporter and NumPy (the rule)."""
    f: FrameType | None = sys._getframe(2)
    while f is not None:
        fn = f.f_code.co_filename
        if not (fn.startswith(_HERE) or fn.startswith(_NUMPY)):
            parts = fn.replace("\\", "/").split("/")
            short = "/".join(parts[-3:]) if "batchtensor" in parts else "/".join(parts[-2:])
            return f"{short}:{f.f_lineno}"
        f = f.f_back
    return "?"


def _as_array(x):
    return np.asarray(x) if isinstance(x, np.generic) else x


def record(op: Any, key: Any, args: tuple, kwargs: dict) -> Any:
    """Run ``op`` eagerly on the trace and shadow values and record it (module docstring)."""
    g = current_graph()
    name = op_name(op)
    if g is None:
        raise ExportError(f"{name}: a recorded array (TArray) was used outside bt.onnx.export")
    out_arg = kwargs.get("out")
    out_targets = _tarrays(out_arg, []) if out_arg is not None else []
    write_idx = WRITES.get(key)
    target = None
    if write_idx is not None:
        target = args[write_idx]
    elif out_arg is not None:
        if len(out_targets) != 1 or (isinstance(out_arg, tuple) and len(out_arg) != 1):
            raise UnsupportedOpError(f"{name}: out= must be one recorded array in an export")
        target = out_targets[0]
    tin = _tarrays((args, kwargs), [])
    depends = any(t.name is not None for t in tin) or _has_sym((args, kwargs))

    pa, pk = _map(args, 0), _map(kwargs, 0)
    sa, sk = _map(args, 1), _map(kwargs, 1)
    # The eager op writes a constant target in place: keep its old content for the lowering
    # (a masked write keeps it where the mask is False).
    before = target.v.copy() if depends and type(target) is TArray and target.name is None \
        else None
    out_v = op(*pa, **pk)  # NumPy's own errors propagate unchanged
    try:
        out_s = op(*sa, **sk)
    except Exception as e:  # noqa: BLE001
        raise BatchSizeLeakError(
            f"{name} (called at {call_site()}) fails when the batch size changes ({e}): a "
            f"batch size reached it as a literal number. Batch rules must read the batch size "
            f"from a value's shape (x.shape[bdim]) and keep it as it is, not through int(), "
            f"len(), level.size or np.broadcast_shapes.") from e

    if target is not None and type(target) is not TArray:
        if depends:
            raise UnsupportedOpError(
                f"{name}: writing a recorded value into a plain NumPy array (a constant of the "
                f"graph); create the array from a recorded one (np.zeros_like(x)) instead")
        return out_v
    if not depends:
        return _wrap_const(out_v, out_s, tin)

    fn = LOWERINGS.get(key)
    if fn is None and key in ONNX_LOWERINGS:  # a bt.primitive's own lowering
        fn = ONNX_LOWERINGS[key][0]
    if fn is None:
        raise UnsupportedOpError(
            f"{name} has no ONNX lowering (called at {call_site()}): the exported function "
            f"uses it on values that depend on the inputs. See docs/onnx.md for the ops that "
            f"export; compute it outside the exported function, or add a lowering in "
            f"batchtensor/onnx/.")
    g.op_name = name
    g.site = f"{name} at {call_site()}"
    if target is not None:
        if target.root is not None:
            raise UnsupportedOpError(
                f"{name}: an in-place write through a view of another array cannot be "
                f"exported (ONNX values are immutable). Write into an array you created "
                f"(np.zeros_like, np.copy) and that is not a view.")
        if before is not None:
            target.name = g.const(before)
        lkw = {k: v for k, v in kwargs.items() if k != "out"} if out_arg is not None else kwargs
        res_v = target.v if write_idx is not None else _first(out_v)
        res_s = target.s if write_idx is not None else _first(out_s)
        g.target = target  # the array written (its current graph value is the old content)
        try:
            new = fn(g, Out(res_v, res_s), *args, **lkw)
        finally:
            g.target = None
        if isinstance(new, (list, tuple)):
            new = new[0]
        if new is not None:
            target.name = new
            target.version += 1
        g.site = ""
        return out_v if write_idx is not None else out_arg[0] if isinstance(out_arg, tuple) \
            and not isinstance(out_v, tuple) else out_arg
    multi = isinstance(out_v, (tuple, list))
    outs: Any  # a list of Outs where multi, else one
    if multi:
        outs = [Out(_as_array(a), _as_array(b)) for a, b in zip(out_v, out_s)]
    else:
        if not isinstance(out_v, (np.ndarray, np.generic)):
            return _non_array(name, out_v, out_s)
        outs = Out(_as_array(out_v), _as_array(out_s))
    names = fn(g, outs, *args, **kwargs)
    g.site = ""
    if multi:
        res = [_wrap(o.v, o.s, n, tin) for o, n in zip(outs, names)]
        return type(out_v)(res) if type(out_v) in (tuple, list) else tuple(res)
    return _wrap(outs.v, outs.s, names, tin)


def _first(x):
    return x[0] if isinstance(x, tuple) else x


def _non_array(name, v, s):
    if v is s or (type(v) is type(s) and v == s):
        return v
    raise ExportError(f"{name} returned a Python value that depends on the inputs or on the "
                      f"batch size ({v!r}); it cannot be part of a graph")


def _view_root(r: np.ndarray, tin: list):
    for t in tin:
        if isinstance(t.v, np.ndarray) and r.size and np.shares_memory(r, t.v):
            return t.root if t.root is not None else t
    return None


def _wrap(v, s, name: str | None, tin: list) -> TArray:
    if isinstance(v, np.generic):
        v, s = np.asarray(v), np.asarray(s)
    return TArray(v, s, name, _view_root(v, tin))


def _wrap_const(out_v, out_s, tin: list) -> Any:
    if isinstance(out_v, (tuple, list)):
        return type(out_v)(_wrap_const(a, b, tin) for a, b in zip(out_v, out_s))
    if isinstance(out_v, (np.ndarray, np.generic)):
        return _wrap(out_v, out_s, None, tin)
    return out_v
