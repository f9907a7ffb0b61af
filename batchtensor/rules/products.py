"""Products: dot, vdot, inner, outer, kron, matmul (and ``@``), vecdot, matvec, vecmat,
tensordot, einsum, einsum_path, cross, convolve, correlate.

Two strategies, as in functorch's BatchRulesLinearAlgebra: when one operand is unbatched the
batch axis of the other rides along as one more free dim of NumPy's own op (one call, same
BLAS kernel); when both are batched the contraction becomes one batched ``matmul`` over
``(B, free_a, K) @ (B, K, free_b)``, which is what NumPy's ``dot`` does per example.
"""

from __future__ import annotations

import math
import string
from typing import Any

import numpy as np

from ..errors import unbatched_out_error
from ..boxed.variadic import gufunc_call, parse_signature
from ..plumbing import innermost, unwrap, wrap
from ..registry import batch_rule, op_name
from ._helpers import (align_pointwise, logical_rank, logical_shape,
                       move_bdim_to_front, pad_to_rank, require, wrap_axis)


# ---- small helpers ------------------------------------------------------------------------------
def as_operand(x, like):
    """An unbatched operand as NumPy's product functions see it: they convert their operands to
    arrays first, so a Python scalar or list is *not* weakly typed here (``np.dot(2, i32)`` is
    int64)."""
    if hasattr(x, "ndim"):
        return x
    return np.asarray(x, like=like) if hasattr(like, "ndim") else np.asarray(x)


def reshape_front(x, shape: tuple):
    """Reshape a batch-first ``x`` to ``(B,) + shape`` with ``-1`` at the batch position (the
    batch size stays symbolic for a recording backend) unless ``shape`` has size 0."""
    return np.reshape(x, ((-1,) if math.prod(shape) else (x.shape[0],)) + tuple(shape))


def raise_numpy_error(op, *args, **kwargs):
    """Call ``op`` on the given stand-ins (arrays of the logical shapes) to raise NumPy's own
    error for an argument combination the rule cannot batch; if NumPy accepts it after all, the
    per-example loop handles the call."""
    op(*args, **kwargs)
    require(False, f"{op_name(op)}: an argument combination the batch rule does not handle")


def stand_in(x, bdim):
    """A cheap array that looks like one example of ``x`` (shape and dtype, zero strides)."""
    if bdim is None:
        return x
    return np.broadcast_to(np.zeros((), dtype=x.dtype, like=x), logical_shape(x, bdim))


def contract(x, xs: tuple, free_x: list, sum_x: list, y, ys: tuple, free_y: list, sum_y: list):
    """sum over ``sum_x`` / ``sum_y`` of batch-first ``x`` and ``y`` (logical axes), result
    ``(B, free_x..., free_y...)``: one batched matmul, the batch axis shared, not summed."""
    kx = tuple(xs[i] for i in sum_x)
    ky = tuple(ys[i] for i in sum_y)
    if kx != ky:
        raise ValueError("shape-mismatch for sum")
    fx = tuple(xs[i] for i in free_x)
    fy = tuple(ys[i] for i in free_y)
    k = math.prod(kx)
    xt = np.transpose(x, [0] + [i + 1 for i in free_x] + [i + 1 for i in sum_x])
    yt = np.transpose(y, [0] + [i + 1 for i in sum_y] + [i + 1 for i in free_y])
    r = np.matmul(reshape_front(xt, (math.prod(fx), k)), reshape_front(yt, (k, math.prod(fy))))
    return reshape_front(r, fx + fy)


def _out_of(out, level, name):
    """The physical value (batch axis first) of a batched ``out=``, and the wrapper."""
    o = out[0] if isinstance(out, tuple) else out
    ov, ob = unwrap(o, level)
    if ob is None:
        raise unbatched_out_error(name)
    return move_bdim_to_front(ov, ob), o


def _vdot_nc(x, y):
    """sum(x * y) over the last axis without conjugation (vecdot conjugates x)."""
    return np.vecdot(np.conjugate(x) if x.dtype.kind == "c" else x, y)


# ---- dot, vdot, inner, outer, kron --------------------------------------------------------------
def _prepare_product(a, a_bdim, b, b_bdim):
    """Both operands on one backend and their logical ranks; with a 0-d operand, dot and inner
    are an elementwise product, returned (as ``(out, bdim)``) in the last item."""
    like = a if a_bdim is not None else b
    a, b = as_operand(a, like), as_operand(b, like)
    ra, rb = logical_rank(a, a_bdim), logical_rank(b, b_bdim)
    if ra == 0 or rb == 0:
        vals, bdim = align_pointwise([a, b], [a_bdim, b_bdim])
        return a, b, ra, rb, (np.multiply(*vals), bdim)
    return a, b, ra, rb, None


@batch_rule(np.dot)
def dot_rule(a, a_bdim, b, b_bdim, out=None):
    require(out is None, "np.dot with out= (NumPy requires a C-contiguous out of the exact "
                         "result dtype per example; the loop reproduces that)")
    a, b, ra, rb, scalar = _prepare_product(a, a_bdim, b, b_bdim)
    if scalar is not None:
        return scalar
    if b_bdim is None:
        # b's non-contracted dims are outer dims of the result: a's batch axis rides along as
        # one more leading dim of a.
        return np.dot(move_bdim_to_front(a, a_bdim), b), 0
    if a_bdim is None:
        y = np.moveaxis(b, b_bdim, -1) if rb == 1 else move_bdim_to_front(b, b_bdim)
        return np.dot(a, y), ra - 1
    x, y = move_bdim_to_front(a, a_bdim), move_bdim_to_front(b, b_bdim)
    if ra == 1 and rb == 1:
        return _vdot_nc(x, y), 0
    xs, ys = x.shape[1:], y.shape[1:]
    k = rb - 1 if rb == 1 else rb - 2
    if xs[-1] != ys[k]:
        raise ValueError(f"shapes {xs} and {ys} not aligned: {xs[-1]} (dim {ra - 1}) != "
                         f"{ys[k]} (dim {k})")
    free_y = [i for i in range(rb) if i != k]
    return contract(x, xs, list(range(ra - 1)), [ra - 1], y, ys, free_y, [k]), 0


@batch_rule(np.vdot)
def vdot_rule(a, a_bdim, b, b_bdim, /):
    like = a if a_bdim is not None else b

    def flat(v, bd):
        if bd is None:
            return np.ravel(as_operand(v, like))
        v = move_bdim_to_front(v, bd)
        return reshape_front(v, (math.prod(v.shape[1:]),))

    x, y = flat(a, a_bdim), flat(b, b_bdim)
    if x.shape[-1] != y.shape[-1]:
        raise ValueError("vectors have different lengths")
    return np.vecdot(x, y), 0  # vecdot conjugates its first argument, as vdot does


@batch_rule(np.inner)
def inner_rule(a, a_bdim, b, b_bdim, /):
    a, b, ra, rb, scalar = _prepare_product(a, a_bdim, b, b_bdim)
    if scalar is not None:
        return scalar
    if b_bdim is None:
        return np.inner(move_bdim_to_front(a, a_bdim), b), 0
    if a_bdim is None:
        return np.inner(a, move_bdim_to_front(b, b_bdim)), ra - 1
    x, y = move_bdim_to_front(a, a_bdim), move_bdim_to_front(b, b_bdim)
    if ra == 1 and rb == 1:
        return _vdot_nc(x, y), 0
    xs, ys = x.shape[1:], y.shape[1:]
    if xs[-1] != ys[-1]:
        raise ValueError(f"shapes {xs} and {ys} not aligned: {xs[-1]} (dim {ra - 1}) != "
                         f"{ys[-1]} (dim {rb - 1})")
    return contract(x, xs, list(range(ra - 1)), [ra - 1], y, ys, list(range(rb - 1)),
                    [rb - 1]), 0


def _flat_front(v, bd, like):
    """One example flattened: ``(B, n)`` for a batched value, ``(n,)`` for an unbatched one."""
    if bd is None:
        return np.ravel(as_operand(v, like))
    v = move_bdim_to_front(v, bd)
    return reshape_front(v, (math.prod(v.shape[1:]),))


@batch_rule(np.outer)
def outer_rule(a, a_bdim, b, b_bdim, out=None):
    require(out is None, "np.outer with out=")
    like = a if a_bdim is not None else b
    x, y = _flat_front(a, a_bdim, like), _flat_front(b, b_bdim, like)
    return np.multiply(np.expand_dims(x, -1), np.expand_dims(y, -2)), 0


@batch_rule(np.kron)
def kron_rule(a, a_bdim, b, b_bdim):
    like = a if a_bdim is not None else b
    a, b = as_operand(a, like), as_operand(b, like)
    sa, sb = logical_shape(a, a_bdim), logical_shape(b, b_bdim)
    nd = max(len(sa), len(sb))
    if not sa or not sb:
        # np.kron multiplies directly when either operand is 0-d
        vals, bdim = align_pointwise([a, b], [a_bdim, b_bdim])
        return np.multiply(*vals), bdim
    sa, sb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
    # Every operand batch-first with a (possibly size-1) batch axis, shape (B, d0, ..., dn).
    x = pad_to_rank(move_bdim_to_front(a, a_bdim), nd) if a_bdim is not None else \
        np.reshape(a, (1,) + sa)
    y = pad_to_rank(move_bdim_to_front(b, b_bdim), nd) if b_bdim is not None else \
        np.reshape(b, (1,) + sb)
    # Interleave: x[:, i0, None, i1, None, ...] * y[:, None, j0, None, j1, ...]
    x = np.expand_dims(x, tuple(range(2, 2 * nd + 1, 2)))
    y = np.expand_dims(y, tuple(range(1, 2 * nd, 2)))
    res = np.multiply(x, y)
    return reshape_front(res, tuple(p * q for p, q in zip(sa, sb))), 0


# ---- matmul and the generalised-ufunc products --------------------------------------------------
_GUFUNC_KW_LOOP = frozenset({"axes", "axis", "keepdims"})


@batch_rule(np.matmul, raw=True)
def matmul_rule(level, args, kwargs):
    require(not (_GUFUNC_KW_LOOP & set(kwargs)), "matmul with axes=/axis=")
    kw = dict(kwargs)
    out = kw.pop("out", None)
    if len(args) > 2:
        require(out is None and len(args) == 3, "matmul with unusual positional arguments")
        out, args = args[2], args[:2]
    (a, ab), (b, bb) = (unwrap(x, level) for x in args)
    like = a if ab is not None else b
    a, b = as_operand(a, like), as_operand(b, like)
    ra, rb = logical_rank(a, ab), logical_rank(b, bb)
    if ra == 0 or rb == 0:
        raise_numpy_error(np.matmul, stand_in(a, ab), stand_in(b, bb))
    if out is None and rb == 2 and ra == 1 and bb is None:
        # vector @ shared matrix: the batch of vectors is one matrix, one GEMM
        return wrap(np.matmul(move_bdim_to_front(a, ab), b, **kw), 0, level)
    if out is None and ra == 2 and rb == 1 and ab is None:
        # shared matrix @ vector: (B, k) @ a.T, one GEMM (the same products per element)
        return wrap(np.matmul(move_bdim_to_front(b, bb), np.swapaxes(a, -1, -2), **kw), 0, level)
    # A batched 1-D operand becomes a matrix with a size-1 axis, removed from the result.
    drop_n = ab is not None and ra == 1
    drop_m = bb is not None and rb == 1
    loop = max(ra - 2, rb - 2, 0)
    if out is not None:  # an out= with more loop dims than the operands broadcasts them
        o_rank = logical_rank(*unwrap(out[0] if isinstance(out, tuple) else out, level))
        loop = max(loop, o_rank - (ra >= 2) - (rb >= 2))
    if ab is not None:
        a = move_bdim_to_front(a, ab)
        if drop_n:
            a = np.expand_dims(a, 1)
        a = pad_to_rank(a, loop + 2)
    if bb is not None:
        b = move_bdim_to_front(b, bb)
        if drop_m:
            b = np.expand_dims(b, -1)
        b = pad_to_rank(b, loop + 2)
    if out is not None:
        ov, o = _out_of(out, level, "numpy.matmul")
        if drop_n:
            ov = np.expand_dims(ov, -1 if rb == 1 else -2)
        if drop_m:
            ov = np.expand_dims(ov, -1)
        np.matmul(a, b, out=ov, **kw)
        return o
    res = np.matmul(a, b, **kw)
    if drop_m:
        res = np.squeeze(res, -1)
    if drop_n:
        res = np.squeeze(res, -1 if rb == 1 else -2)
    return wrap(res, 0, level)


def _gufunc_rule(ufunc):
    """vecdot / matvec / vecmat: NumPy's error for an example without its core dims, the
    ``axis=`` of a one-core-dim gufunc (vecdot) moved to the end; the rest is the generic
    generalised-ufunc path (batch axes first, loop dims padded)."""
    core_in, _ = parse_signature(ufunc.signature)
    ranks = [len(d) for d in core_in]

    def rule(level, args, kwargs):
        require(len(args) == len(ranks), f"{ufunc.__name__} with out= given positionally")
        pairs = [unwrap(x, level) for x in args]
        if any(logical_rank(v, b) < r for (v, b), r in zip(pairs, ranks)):
            raise_numpy_error(ufunc, *(stand_in(v, b) for v, b in pairs), **kwargs)
        kw = dict(kwargs)
        if "axis" in kw and not ({"axes", "keepdims"} & set(kw)) and set(ranks) == {1}:
            axis = kw.pop("axis")
            moved = []
            for v, b in pairs:
                ax = wrap_axis(axis, logical_rank(v, b))
                if b is None:
                    moved.append((np.moveaxis(v, ax, -1), None))
                else:
                    moved.append((np.moveaxis(move_bdim_to_front(v, b), ax + 1, -1), 0))
            pairs = moved
        require(not (_GUFUNC_KW_LOOP & set(kw)), f"{ufunc.__name__} with axes=/keepdims=")
        ins = [wrap(v, b, level) for v, b in pairs]
        return gufunc_call(ufunc, ins, kw)

    rule.__name__ = f"{ufunc.__name__}_rule"
    return rule


for _uf in (np.vecdot, np.matvec, np.vecmat):
    batch_rule(_uf, raw=True)(_gufunc_rule(_uf))


# ---- tensordot ----------------------------------------------------------------------------------
def tensordot_axes(axes, sa: tuple, sb: tuple) -> tuple[list, list]:
    """NumPy's parsing of tensordot's ``axes`` against the logical shapes (its errors too)."""
    axes_a: Any  # a list of axes, or what the caller gave (an int, ...)
    axes_b: Any
    try:
        iter(axes)
    except Exception:  # noqa: BLE001  (NumPy's own test)
        axes_a = list(range(-axes, 0))
        axes_b = list(range(axes))
    else:
        axes_a, axes_b = axes
    try:
        na = len(axes_a)
        axes_a = list(axes_a)
    except TypeError:
        axes_a, na = [axes_a], 1
    try:
        nb = len(axes_b)
        axes_b = list(axes_b)
    except TypeError:
        axes_b, nb = [axes_b], 1
    if len(set(axes_a)) != len(axes_a) or len(set(axes_b)) != len(axes_b):
        raise ValueError("duplicate axes are not allowed in tensordot")
    if na != nb:
        raise ValueError("shape-mismatch for sum")
    for k in range(na):
        if sa[axes_a[k]] != sb[axes_b[k]]:
            raise ValueError("shape-mismatch for sum")
        if axes_a[k] < 0:
            axes_a[k] += len(sa)
        if axes_b[k] < 0:
            axes_b[k] += len(sb)
    return axes_a, axes_b


@batch_rule(np.tensordot)
def tensordot_rule(a, a_bdim, b, b_bdim, axes=2):
    like = a if a_bdim is not None else b
    a, b = as_operand(a, like), as_operand(b, like)
    sa, sb = logical_shape(a, a_bdim), logical_shape(b, b_bdim)
    axes_a, axes_b = tensordot_axes(axes, sa, sb)
    if b_bdim is None:
        x = move_bdim_to_front(a, a_bdim)
        return np.tensordot(x, b, axes=([i + 1 for i in axes_a], axes_b)), 0
    if a_bdim is None:
        y = move_bdim_to_front(b, b_bdim)
        return np.tensordot(a, y, axes=(axes_a, [i + 1 for i in axes_b])), len(sa) - len(axes_a)
    free_a = [i for i in range(len(sa)) if i not in axes_a]
    free_b = [i for i in range(len(sb)) if i not in axes_b]
    return contract(move_bdim_to_front(a, a_bdim), sa, free_a, axes_a,
                    move_bdim_to_front(b, b_bdim), sb, free_b, axes_b), 0


# ---- einsum, einsum_path ------------------------------------------------------------------------
def _letters(n: int, avoid: set) -> list:
    free = [c for c in string.ascii_letters if c not in avoid]
    return free[:n]


def _implicit_output(inputs: str) -> str:
    """NumPy's implicit einsum output: ellipsis first, then the letters used once, in code-point
    order (upper case before lower case)."""
    letters = [c for c in inputs if c.isalpha()]
    once = sorted(c for c in set(letters) if letters.count(c) == 1)
    return ("..." if "..." in inputs else "") + "".join(once)


def _sublist_subscripts(sub) -> str:
    """One operand's sublist of the interleaved form (ints 0-51, Ellipsis) as letters."""
    out = []
    for s in sub:
        if s is Ellipsis:
            out.append("...")
        else:
            require(isinstance(s, (int, np.integer)) and 0 <= s < 52,
                    "einsum sublist with a label NumPy would reject")
            out.append(string.ascii_uppercase[s] if s < 26 else string.ascii_lowercase[s - 26])
    return "".join(out)


def _einsum_string_form(args: tuple) -> tuple[str, tuple]:
    """``(subscripts, operands)`` from either calling form of einsum."""
    if len(args) and isinstance(args[0], str):
        return args[0], tuple(args[1:])
    operands = tuple(args[0::2][:len(args) // 2])
    subs = ",".join(_sublist_subscripts(s) for s in args[1::2][:len(args) // 2])
    if len(args) % 2:
        subs += "->" + _sublist_subscripts(args[-1])
    return subs, operands


@batch_rule(np.einsum, raw=True)
def einsum_rule(level, args, kwargs):
    require(len(args) > 0, "einsum without operands")
    kw = dict(kwargs)
    out = kw.pop("out", None)
    subscripts, operands = _einsum_string_form(args)
    subscripts = subscripts.replace(" ", "")
    inputs, arrow, output = subscripts.partition("->")
    if not arrow:
        output = _implicit_output(inputs)
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum(): the subscripts {subscripts!r} name {len(terms)} operands "
                         f"but {len(operands)} were given")
    free = _letters(1, set(subscripts))
    require(bool(free), "einsum that uses all 52 letters (none left for the batch axis)")
    batch = free[0]
    new_terms, vals, any_batched = [], [], False
    for term, x in zip(terms, operands):
        v, b = unwrap(x, level)
        if b is not None:
            v, term, any_batched = move_bdim_to_front(v, b), batch + term, True
        new_terms.append(term)
        vals.append(v)
    if not any_batched:  # only out= is batched: one result, written into every example
        ov, o = _out_of(out, level, "numpy.einsum")
        # into one example's out first: NumPy computes in out's dtype and checks its shape
        one = np.empty(tuple(ov.shape[1:]), dtype=ov.dtype, like=innermost(ov))
        np.einsum(subscripts, *vals, out=one, **kw)
        np.copyto(ov, one)
        return o
    spec = ",".join(new_terms) + "->" + batch + output
    if out is not None:
        ov, o = _out_of(out, level, "numpy.einsum")
        np.einsum(spec, *vals, out=ov, **kw)
        return o
    return wrap(np.einsum(spec, *vals, **kw), 0, level)


@batch_rule(np.einsum_path, raw=True)
def einsum_path_rule(level, args, kwargs):
    """The contraction order depends only on the shapes: plan it for one example."""
    def one(x):
        v, b = unwrap(x, level)
        return stand_in(v, b) if b is not None else x

    return np.einsum_path(*(one(x) for x in args), **kwargs)


# ---- cross --------------------------------------------------------------------------------------
@batch_rule(np.cross)
def cross_rule(a, a_bdim, b, b_bdim, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa = axisb = axisc = axis
    like = a if a_bdim is not None else b
    a, b = as_operand(a, like), as_operand(b, like)
    ra, rb = logical_rank(a, a_bdim), logical_rank(b, b_bdim)
    if ra < 1 or rb < 1:
        raise ValueError("At least one array has zero dimension")
    from numpy.lib.array_utils import normalize_axis_index  # noqa: PLC0415

    axisa = normalize_axis_index(axisa, ra, msg_prefix="axisa")
    axisb = normalize_axis_index(axisb, rb, msg_prefix="axisb")
    rank = max(ra, rb) - 1  # rank of the broadcast non-vector dims

    def vec_last(v, bd, ax):
        if bd is None:
            return np.moveaxis(v, ax, -1)
        v = np.moveaxis(move_bdim_to_front(v, bd), ax + 1, -1)
        # pad the non-vector dims (keep the vector axis last)
        missing = rank - (v.ndim - 2)
        return np.expand_dims(v, tuple(range(1, 1 + missing))) if missing > 0 else v

    x, y = vec_last(a, a_bdim, axisa), vec_last(b, b_bdim, axisb)
    # NumPy's own verdict on the vectors' lengths, from one pair of plain vectors of those
    # lengths: 2 or 3 (2-vectors deprecated since NumPy 2.0, warned; refused by 2.5)
    np.cross(np.zeros(x.shape[-1]), np.zeros(y.shape[-1]))
    if x.shape[-1] == 2 and y.shape[-1] == 2:
        return np.cross(x, y), 0
    axisc = normalize_axis_index(axisc, rank + 1, msg_prefix="axisc")
    return np.cross(x, y, axisc=axisc + 1), 0


# ---- convolve, correlate ------------------------------------------------------------------------
_MODES = {"valid": 0, "same": 1, "full": 2, 0: 0, 1: 1, 2: 2}


def _mode(op, mode) -> int:
    ok = isinstance(mode, (str, int, np.integer)) and not isinstance(mode, bool)
    m = _MODES.get(mode) if ok else None
    if m is None:
        raise_numpy_error(op, np.zeros(1), np.zeros(1), mode)
    return m  # type: ignore[return-value]  # (raise_numpy_error raised for None)


def _zeros_cols(x, k: int):
    """``k`` columns of zeros shaped like ``x``'s leading dims (a broadcast view)."""
    return np.broadcast_to(np.zeros((), dtype=x.dtype, like=x), tuple(x.shape[:-1]) + (k,))


def _correlate(x, y, n: int, m: int, start: int, length: int):
    """``c[k] = sum_j xpad[start + k + j] * y[j]`` for k < length, where ``xpad`` is ``x`` with
    ``m - 1`` zeros on both sides (the full correlation); leading batch axes broadcast.

    A loop over the shorter of the kernel and the output, each step one vectorised op over the
    whole batch (products of the same pairs as NumPy's, so integers and booleans are exact).
    """
    lo = max(0, m - 1 - start)  # zeros needed before x
    hi = max(0, start + length - n)  # zeros needed after x
    # (y is usually a flipped view: isfinite of a negative-stride array copies it first)
    forward = y[..., ::-1] if type(y) is np.ndarray and y.ndim and y.strides[-1] < 0 else y
    if "c" in (x.dtype.kind, y.dtype.kind):
        # NumPy's complex dot (BLAS) multiplies inf and NaN parts otherwise than the ufunc
        require(bool(np.isfinite(x).all()) and bool(np.isfinite(forward).all()),
                "complex values with inf or NaN parts")
    elif lo or hi:
        # NumPy sums only the overlapping products; the zeros here multiply kernel values
        # too, which is exact but for inf and NaN (0 * inf is NaN): those go per example
        require(y.dtype.kind != "f" or bool(np.isfinite(forward).all()),
                "a kernel with inf or NaN values past the signal's ends")
    if (lo or hi) and type(x) is np.ndarray:
        # the zeros and x written into one new array: a fifth fewer instructions than
        # np.concatenate of broadcast zeros at 1024 rows of 64 and a kernel of 5, and than
        # np.zeros and one write, which clears the whole array first (bench/NOTES.md)
        padded = np.empty(x.shape[:-1] + (lo + n + hi,), dtype=x.dtype)
        padded[..., :lo] = 0
        padded[..., lo + n:] = 0
        padded[..., lo:lo + n] = x
        x = padded
    elif lo or hi:  # (CuPy, the ONNX recorder: one concatenate, no write)
        x = np.concatenate([_zeros_cols(x, lo), x, _zeros_cols(x, hi)], axis=-1)
    first = start - (m - 1) + lo  # position of xpad[start] in x
    if m <= length:
        acc = x[..., first:first + length] * y[..., 0:1]
        for j in range(1, m):
            acc = acc + x[..., first + j:first + j + length] * y[..., j:j + 1]
        return acc
    yc = np.conjugate(y) if y.dtype.kind == "c" else y  # vecdot conjugates its first operand
    return np.stack([np.vecdot(yc, x[..., first + k:first + k + m]) for k in range(length)],
                    axis=-1)


def _as_1d(v, bd, like):
    """``np.array(v, ndmin=1)`` for an example: (B, n) batched, (n,) unbatched."""
    if bd is None:
        v = as_operand(v, like)
        return np.reshape(v, (1,)) if v.ndim == 0 else v
    v = move_bdim_to_front(v, bd)
    return np.expand_dims(v, -1) if v.ndim == 1 else v


# Above this much work per example (and with a kernel of at least _NATIVE_MIN_KERNEL taps),
# NumPy's own C routine per example beats one vectorised pass per kernel tap: those passes
# stream the whole batch through memory m times, the C routine works in cache (bench/NOTES.md).
_NATIVE_MIN_WORK = 1 << 16
_NATIVE_MIN_KERNEL = 8


def _native_per_example(op, a, a_bdim, v, v_bdim, mode):
    """``op`` on every example pair with NumPy's own routine, stacked: the fastest NumPy
    strategy for long signals and kernels. NumPy arrays only (on CuPy or the ONNX recorder
    the vectorised form serves), and never for batch size 0."""
    aa = move_bdim_to_front(a, a_bdim) if a_bdim is not None else None
    vv = move_bdim_to_front(v, v_bdim) if v_bdim is not None else None
    n = (aa if aa is not None else vv).shape[0]
    return np.stack([op(aa[i] if aa is not None else a, vv[i] if vv is not None else v, mode)
                     for i in range(n)]), 0


def _use_native(a, a_bdim, v, v_bdim, n: int, m: int) -> bool:
    batched = a if a_bdim is not None else v
    bd = a_bdim if a_bdim is not None else v_bdim
    return (type(a) is np.ndarray and type(v) is np.ndarray and batched.shape[bd] > 0
            and min(n, m) >= _NATIVE_MIN_KERNEL and n * m >= _NATIVE_MIN_WORK)


@batch_rule(np.convolve)
def convolve_rule(a, a_bdim, v, v_bdim, mode="full"):
    like = a if a_bdim is not None else v
    x, y = _as_1d(a, a_bdim, like), _as_1d(v, v_bdim, like)
    mode = _mode(np.convolve, mode)
    if x.ndim - (a_bdim is not None) != 1 or y.ndim - (v_bdim is not None) != 1:
        raise ValueError("object too deep for desired array")
    n, m = x.shape[-1], y.shape[-1]
    if n == 0:
        raise ValueError("a cannot be empty")
    if m == 0:
        raise ValueError("v cannot be empty")
    if _use_native(a, a_bdim, v, v_bdim, n, m):
        return _native_per_example(np.convolve, a, a_bdim, v, v_bdim, mode)
    if m > n:  # NumPy slides the shorter one
        x, y, n, m = y, x, m, n
    start, length = {0: (m - 1, n - m + 1), 1: ((m - 1) // 2, n), 2: (0, n + m - 1)}[mode]
    return _correlate(x, np.flip(y, -1), n, m, start, length), 0


@batch_rule(np.correlate)
def correlate_rule(a, a_bdim, v, v_bdim, mode="valid"):
    like = a if a_bdim is not None else v
    a, v = as_operand(a, like), as_operand(v, like)
    if logical_rank(a, a_bdim) != 1 or logical_rank(v, v_bdim) != 1:
        raise_numpy_error(np.correlate, stand_in(a, a_bdim), stand_in(v, v_bdim), mode)
    mode = _mode(np.correlate, mode)
    x, y = move_bdim_to_front(a, a_bdim), move_bdim_to_front(v, v_bdim)
    n, m = x.shape[-1], y.shape[-1]
    if n == 0 or m == 0:
        raise_numpy_error(np.correlate, stand_in(a, a_bdim), stand_in(v, v_bdim), mode)
    if _use_native(a, a_bdim, v, v_bdim, n, m):
        return _native_per_example(np.correlate, a, a_bdim, v, v_bdim, mode)
    if y.dtype.kind == "c":
        y = np.conjugate(y)
    lo = min(n, m)
    start, length = {0: (lo - 1, max(n, m) - lo + 1),
                     1: ((lo - (n >= m)) // 2, max(n, m)),
                     2: (0, n + m - 1)}[mode]
    return _correlate(x, y, n, m, start, length), 0
