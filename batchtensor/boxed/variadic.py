"""VARIADIC_BDIMS: ops that already accept leading batch dimensions.

Generalised ufuncs (``matmul``, ``vecdot``, ``matvec``; SciPy's gufuncs) work on trailing *core*
dimensions and broadcast the leading *loop* dimensions, so the batch axis goes to the front,
batched operands are padded to the common loop rank, and the op runs once. Functions such as
``np.linalg.inv`` are registered with ``variadic_bdims(op, core_ranks={"a": 2})``.
"""

from __future__ import annotations

import inspect
import re
from functools import lru_cache, partial
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import unbatched_out_error
from ..plumbing import scan_level, unwrap, wrap
from ..registry import (ARRAY, RECORDERS, BoxedKind, OpEntry, Path, binder_from_signature,
                        op_name, record, register, slots)
from ..rules._helpers import logical_rank, move_bdim_to_front, pad_to_rank, require
from .pointwise import call_bound

__all__ = ["variadic_bdims", "gufunc_call", "align_core", "parse_signature"]


@lru_cache(maxsize=None)
def parse_signature(signature: str) -> tuple[list, list]:
    """``'(n?,k),(k,m?)->(n?,m?)'`` -> input and output core dims as ``[(name, optional)]``."""
    ins, outs = signature.replace(" ", "").split("->")

    def groups(s):
        return [[(d.rstrip("?"), d.endswith("?")) for d in g.split(",") if d]
                for g in re.findall(r"\(([^)]*)\)", s)]

    return groups(ins), groups(outs)


def align_core(vals: Sequence, bdims: Sequence, core_ranks: Sequence[int]) -> list:
    """Batched values to the front, padded so that their loop dimensions broadcast."""
    loop = max(logical_rank(v, b) - c for v, b, c in zip(vals, bdims, core_ranks))
    out = []
    for v, b, c in zip(vals, bdims, core_ranks):
        out.append(v if b is None else pad_to_rank(move_bdim_to_front(v, b), loop + c))
    return out


def gufunc_call(ufunc, inputs: Sequence, kwargs: dict) -> Any:
    """A generalised ufunc's ``__call__`` with batched operands."""
    out = kwargs.get("out")
    level = scan_level(out, scan_level(inputs))
    if level is None:
        return ufunc(*inputs, **kwargs)
    if RECORDERS:
        record(ufunc, Path.BOXED)
    name = op_name(ufunc)
    require(not ({"axes", "keepdims"} & set(kwargs)),
            f"{name}: axes=/keepdims= of a generalised ufunc")
    core_in, core_out = parse_signature(ufunc.signature)
    pairs = [unwrap(x, level) for x in inputs]
    if "axis" in kwargs:  # one shared core dimension, at ``axis`` of each operand that has it
        kwargs = dict(kwargs)
        axis = kwargs.pop("axis")
        require(all(len(d) <= 1 for d in core_in) and not any(core_out) and out is None,
                f"{name}: axis= with outputs that have core dimensions, or out=")
        pairs = [(_core_last(v, b, axis), None if b is None else 0) if len(d) == 1 else (v, b)
                 for (v, b), d in zip(pairs, core_in)]
    for (v, b), dims in zip(pairs, core_in):
        require(logical_rank(v, b) >= len(dims), f"{name}: operand with missing core dims")
    vals = align_core([v for v, _ in pairs], [b for _, b in pairs], [len(d) for d in core_in])
    kw = dict(kwargs)
    if out is not None:
        outs = out if isinstance(out, tuple) else (out,)
        phys = []
        for o in outs:
            ov, ob = unwrap(o, level)
            if ob is None:
                raise unbatched_out_error(name)
            phys.append(move_bdim_to_front(ov, ob))
        kw["out"] = tuple(phys)
        ufunc(*vals, **kw)
        return outs[0] if ufunc.nout == 1 else outs
    res = ufunc(*vals, **kw)
    if ufunc.nout == 1:
        return wrap(res, 0, level)
    return tuple(wrap(r, 0, level) for r in res)


def _core_last(v: Any, bdim: int | None, axis: Any) -> Any:
    """``v`` with the example's ``axis`` (its core dimension) last, the batch axis first."""
    nd = logical_rank(v, bdim)
    require(isinstance(axis, int) and -nd <= axis < nd, "a gufunc's axis= out of range")
    if bdim is None:
        return np.moveaxis(v, axis, -1)
    return np.moveaxis(move_bdim_to_front(v, bdim), 1 + axis % nd, -1)


def _variadic_handler(core_ranks: Mapping[str, int], entry, level, values, extra, extra_kw):
    params = entry.binder.params
    idx = [i for i, p in enumerate(params) if p.name in core_ranks and values[i] is not None]
    pairs = [unwrap(values[i], level) for i in idx]
    for i, (v, b) in zip(idx, pairs):
        # an example without its core dims: the batch axis must not be read as a core dim
        require(logical_rank(v, b) >= core_ranks[params[i].name],
                f"{entry.name}: an example with fewer dims than {params[i].name}'s core")
    aligned = align_core([v for v, _ in pairs], [b for _, b in pairs],
                         [core_ranks[params[i].name] for i in idx])
    values = list(values)
    for i, v in zip(idx, aligned):
        values[i] = v
    res = call_bound(entry.op, entry.binder, values, extra, extra_kw)
    if isinstance(res, tuple):
        items = [wrap(r, 0, level) for r in res]
        return type(res)(*items) if hasattr(type(res), "_fields") else tuple(items)
    return wrap(res, 0, level)


def variadic_bdims(op: Any, core_ranks: Mapping[str, int], *, replace: bool = False) -> Any:
    """Register ``op`` as accepting leading batch dims; ``core_ranks`` gives, per array
    parameter, how many trailing dims one example's computation uses.

    >>> import numpy as np, batchtensor as bt
    >>> bt.boxed.variadic_bdims(np.linalg.inv, core_ranks={"a": 2})   # doctest: +SKIP
    """
    sig = inspect.signature(op)
    binder = binder_from_signature(op, sig, {name: ARRAY for name in core_ranks})
    register(OpEntry(op, Path.BOXED, partial(_variadic_handler, dict(core_ranks)), binder,
                     boxed_kind=BoxedKind.VARIADIC_BDIMS), replace=replace)
    return op


slots.gufunc_call = gufunc_call
