"""Products: dot, matmul, einsum."""

from __future__ import annotations

import string

import numpy as np

from ..boxed.pointwise import unbatched_out_error
from ..dispatch import unwrap, wrap
from ..registry import batch_rule
from ._helpers import (align_pointwise, dry_run, logical_rank, move_bdim_to_front, pad_to_rank,
                       require)


def _copy_into_out(out, level, res, name):
    """Write a batch-first result into a batched ``out`` and return ``out``."""
    o = out[0] if isinstance(out, tuple) else out
    ov, ob = unwrap(o, level)
    if ob is None:
        raise unbatched_out_error(name)
    np.copyto(move_bdim_to_front(ov, ob), res, casting="same_kind")
    return o


@batch_rule(np.matmul, raw=True)
def matmul_rule(level, args, kwargs):
    require(not ({"axes", "axis", "keepdims"} & set(kwargs)), "matmul with axes=/axis=")
    kw = dict(kwargs)
    out = kw.pop("out", None)
    (a, ab), (b, bb) = (unwrap(x, level) for x in args)
    ra, rb = logical_rank(a, ab), logical_rank(b, bb)
    if ra == 0 or rb == 0:
        dry_run(np.matmul, (1,) * ra, a.dtype, np.zeros((1,) * rb, b.dtype))  # NumPy's error
    # A batched 1-D operand becomes a matrix with a size-1 axis, removed from the result.
    drop_n = ab is not None and ra == 1
    drop_m = bb is not None and rb == 1
    loop = max(ra - 2, rb - 2, 0)
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
    res = np.matmul(a, b, **kw)
    if drop_m:
        res = np.squeeze(res, -1)
    if drop_n:
        res = np.squeeze(res, -1 if rb == 1 else -2)
    if out is not None:
        return _copy_into_out(out, level, res, "numpy.matmul")
    return wrap(res, 0, level)


def _letters(n: int, avoid: set) -> list:
    free = [c for c in string.ascii_letters if c not in avoid]
    return free[:n]


@batch_rule(np.dot)
def dot_rule(a, a_bdim, b, b_bdim, out=None):
    require(out is None, "np.dot with out=")
    ra, rb = logical_rank(a, a_bdim), logical_rank(b, b_bdim)
    if ra == 0 or rb == 0:
        vals, bdim = align_pointwise([a, b], [a_bdim, b_bdim])
        return np.multiply(*vals), bdim
    if b_bdim is None:
        # b's non-contracted dims are outer dims of the result: the batch axis of a just rides
        # along as one more leading dim of a.
        return np.dot(move_bdim_to_front(a, a_bdim), b), 0
    if a_bdim is None:
        y = np.moveaxis(b, b_bdim, -1) if rb == 1 else move_bdim_to_front(b, b_bdim)
        return np.dot(a, y), ra - 1
    x, y = move_bdim_to_front(a, a_bdim), move_bdim_to_front(b, b_bdim)
    if rb == 2:
        if ra == 1:
            return np.squeeze(np.matmul(np.expand_dims(x, 1), y), 1), 0
        return np.matmul(x, pad_to_rank(y, ra)), 0
    la = _letters(ra + max(rb - 1, 0) + 1, set())
    batch, k = la[0], la[1]
    sa = la[2:2 + ra - 1]
    sb = la[2 + ra - 1:]
    if rb == 1:
        subs = f"{batch}{''.join(sa)}{k},{batch}{k}->{batch}{''.join(sa)}"
    else:
        pre, m = sb[:rb - 2], sb[rb - 2]
        subs = (f"{batch}{''.join(sa)}{k},{batch}{''.join(pre)}{k}{m}"
                f"->{batch}{''.join(sa)}{''.join(pre)}{m}")
    return np.einsum(subs, x, y), 0


def _implicit_output(inputs: str) -> str:
    """NumPy's implicit einsum output: ellipsis first, then the letters used once, sorted."""
    letters = [c for c in inputs if c.isalpha()]
    once = sorted(c for c in set(letters) if letters.count(c) == 1)
    return ("..." if "..." in inputs else "") + "".join(once)


@batch_rule(np.einsum, raw=True)
def einsum_rule(level, args, kwargs):
    require(len(args) > 0 and isinstance(args[0], str), "einsum in the interleaved form")
    kw = dict(kwargs)
    out = kw.pop("out", None)
    subscripts = args[0].replace(" ", "")
    operands = args[1:]
    inputs, arrow, output = subscripts.partition("->")
    if not arrow:
        output = _implicit_output(inputs)
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum(): the subscripts {subscripts!r} name {len(terms)} operands "
                         f"but {len(operands)} were given")
    (batch,) = _letters(1, set(subscripts))
    new_terms, vals = [], []
    for term, x in zip(terms, operands):
        v, b = unwrap(x, level)
        if b is not None:
            v, term = move_bdim_to_front(v, b), batch + term
        new_terms.append(term)
        vals.append(v)
    res = np.einsum(",".join(new_terms) + "->" + batch + output, *vals, **kw)
    if out is not None:
        return _copy_into_out(out, level, res, "numpy.einsum")
    return wrap(res, 0, level)
