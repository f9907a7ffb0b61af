"""Polynomials (the ``np.poly*`` functions, ``roots``, ``vander``) on batches of 1-D
coefficient arrays, shape (B, n). Each rule repeats NumPy's own arithmetic, element for
element, over the coefficient axis (whose length is static), so results match the loop.

Data-dependent shapes: ``polymul`` trims leading zeros (``poly1d``), ``polydiv`` trims the
remainder's leading near-zeros, ``roots`` trims leading zeros: a result when every example
keeps as many, else a clear error. Data-dependent dtypes (``roots`` and ``poly`` return real
values when every root is real, or comes in conjugate pairs): ``poly``'s examples must agree;
``roots`` asks NumPy's ``if`` as a ``bool()`` of the batch, so examples that disagree run as
groups, each of one dtype.

``polyfit`` fits every example's ``y`` against one shared ``x`` (and ``w``) in one
least-squares call with the examples as columns (NumPy's own 2-D ``y`` path); a batched ``x``
or ``w`` gives every example its own matrix: per-example loop.
"""

from __future__ import annotations

import numpy as np
from numpy import mintypecode

from ..errors import BatchingError, ControlFlowError, DataDependentError, LoopFallback
from ..plumbing import unwrap, wrap, wrap_result
from ..registry import batch_rule, op_name
from ._helpers import as_array, flat_rows, logical_rank, move_bdim_to_front, require
from .setops import any_true, compress_rows


def _coeffs(x, bdim, name="a", like=None):
    """A batched 1-D coefficient array, batch first: (B, n) (0-d examples become (B, 1),
    like ``atleast_1d``). Unbatched values are returned as 1-D arrays (a Python sequence on
    the backend of ``like``, the batched argument)."""
    if bdim is None:
        if isinstance(x, np.poly1d):
            raise LoopFallback(f"a poly1d argument ({name})")
        x = as_array(x, like)
        require(x.ndim <= 1, f"a {x.ndim}-d coefficient array ({name})")
        return np.reshape(x, (-1,))
    require(logical_rank(x, bdim) <= 1, f"a coefficient array of rank > 1 ({name})")
    x = move_bdim_to_front(x, bdim)
    return flat_rows(x)


def _lead(*arrays) -> tuple:
    """The batch part of the shapes: (B,) if any array is batched (2-D here), else ()."""
    return next(((a.shape[0],) for a in arrays if a.ndim == 2), ())


def _pad_front(a, n: int):
    """Zeros in front of the last axis up to length ``n`` (polyadd's alignment)."""
    k = n - a.shape[-1]
    if k <= 0:
        return a
    return np.concatenate([np.broadcast_to(np.zeros((), a.dtype, like=a), a.shape[:-1] + (k,)), a],
                          axis=-1)


def _add_like(op, ufunc):
    @batch_rule(op)
    def rule(a1, a1_bdim, a2, a2_bdim):
        x, y = _coeffs(a1, a1_bdim, "a1", a2), _coeffs(a2, a2_bdim, "a2", a1)
        n = max(x.shape[-1], y.shape[-1])
        return ufunc(_pad_front(x, n), _pad_front(y, n)), 0

    rule.__name__ = f"{op.__name__}_rule"
    return rule


polyadd_rule = _add_like(np.polyadd, np.add)
polysub_rule = _add_like(np.polysub, np.subtract)


@batch_rule(np.polyval)
def polyval_rule(p, p_bdim, x, x_bdim):
    if isinstance(x, np.poly1d) or isinstance(p, np.poly1d):
        raise LoopFallback("np.polyval with a poly1d")
    c = _coeffs(p, p_bdim, "p", x)
    require(c.shape[-1] > 0, "np.polyval with no coefficients")
    if x_bdim is None:
        xv = as_array(x, c)  # NumPy's asanyarray: strong
        xnd = xv.ndim
    else:
        xv = move_bdim_to_front(x, x_bdim)
        xnd = xv.ndim - 1
    require(xv.dtype != np.bool_, "np.polyval of boolean x")

    def coeff(i):
        if p_bdim is None:
            return c[i]  # a NumPy scalar, as NumPy's loop over p gives
        col = c[:, i]
        return np.reshape(col, col.shape + (1,) * xnd)

    y = xv * 0 + coeff(0)  # NumPy: zeros_like(x) * x + p[0]
    for i in range(1, c.shape[-1]):
        y = y * xv + coeff(i)
    return y, 0


@batch_rule(np.polyder)
def polyder_rule(p, p_bdim, m=1):
    m = int(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    c = _coeffs(p, p_bdim, "p")
    if m == 0:
        return p, p_bdim
    for _ in range(m):
        n = c.shape[-1] - 1
        c = c[:, :-1] * np.arange(n, 0, -1, like=c)
    return c, 0


@batch_rule(np.polyint)
def polyint_rule(p, p_bdim, m=1, k=None, k_bdim=None):
    m = int(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    ref = p if p_bdim is not None else k  # the batched argument: arrays made on its backend
    if k is None:
        kk = np.zeros(m, float, like=ref)
    elif k_bdim is None:
        kk = np.reshape(as_array(k, ref), (-1,))
    else:
        require(logical_rank(k, k_bdim) <= 1, "np.polyint with a k of rank > 1")
        kk = move_bdim_to_front(k, k_bdim)
        kk = flat_rows(kk)
    if kk.shape[-1] == 1 and m > 1:
        kk = kk[..., 0:1] * np.ones(m, float, like=kk)
    if kk.shape[-1] < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    c = _coeffs(p, p_bdim, "p", ref)
    if m == 0:
        return p, p_bdim
    lead = _lead(c, kk)
    for i in range(m):
        n = c.shape[-1]
        c = c / np.arange(n, 0, -1, like=c)
        col = kk[..., i:i + 1]
        c, col = np.broadcast_to(c, lead + c.shape[-1:]), np.broadcast_to(col, lead + (1,))
        c = np.concatenate([c, col], axis=-1)
    return c, 0


def _trim_leading_zeros(op, c):
    """poly1d's trimming, batched: (B, n) -> (B, n') without the leading zeros (one zero is
    kept for an all-zero or empty example). Every example must drop as many."""
    b, n = c.shape
    if n == 0:
        return np.zeros((b, 1), c.dtype, like=c)
    keep = np.cumsum(c != 0, axis=1) > 0
    keep = np.concatenate([keep[:, :-1], np.ones((b, 1), bool, like=c)], axis=1)
    return compress_rows(op, keep, c)[0]


def _batched_convolve(x, y):
    """Full convolution of every row pair (the order of the sums differs from np.convolve:
    floats agree to rounding, integers exactly)."""
    b = _lead(x, y)
    n1, n2 = x.shape[-1], y.shape[-1]
    out = None
    for j in range(n2):
        term = x * y[..., j:j + 1]
        term = np.concatenate([np.zeros(b + (j,), term.dtype, like=term),
                               np.broadcast_to(term, b + (n1,)),
                               np.zeros(b + (n2 - 1 - j,), term.dtype, like=term)], axis=-1)
        out = term if out is None else out + term
    return out


@batch_rule(np.polymul)
def polymul_rule(a1, a1_bdim, a2, a2_bdim):
    x, y = _coeffs(a1, a1_bdim, "a1", a2), _coeffs(a2, a2_bdim, "a2", a1)
    b = _lead(x, y)[0]
    x = _trim_leading_zeros(np.polymul, x if x.ndim == 2 else np.broadcast_to(x, (b,) + x.shape))
    y = _trim_leading_zeros(np.polymul, y if y.ndim == 2 else np.broadcast_to(y, (b,) + y.shape))
    return _batched_convolve(x, y), 0


@batch_rule(np.polydiv)
def polydiv_rule(u, u_bdim, v, v_bdim):
    uu, vv = _coeffs(u, u_bdim, "u", v) + 0.0, _coeffs(v, v_bdim, "v", u) + 0.0
    if uu.shape[-1] == 0 or vv.shape[-1] == 0:
        raise IndexError("index 0 is out of bounds for axis 0 with size 0")
    lead = _lead(uu, vv)
    wdt = np.result_type(uu.dtype, vv.dtype)
    m, n = uu.shape[-1] - 1, vv.shape[-1] - 1
    scale = 1. / vv[..., 0]
    r = [np.broadcast_to(uu[..., i], lead).astype(wdt) for i in range(m + 1)]
    q = []
    for k in range(m - n + 1):
        d = scale * r[k]
        q.append(d)
        for j in range(n + 1):
            r[k + j] = r[k + j] - d * vv[..., j]
    q = np.stack(q, axis=-1) if q else np.zeros(lead + (1,), wdt, like=uu)
    r = np.stack(r, axis=-1)
    # NumPy drops leading remainder entries while np.allclose(r[0], 0, rtol=1e-14)
    b = lead[0]
    keep = np.cumsum(~np.isclose(r, 0, rtol=1e-14), axis=1) > 0
    keep = np.concatenate([keep[:, :-1], np.ones((b, 1), bool, like=r)], axis=1)
    # q is (B, k) already: a new array, writeable as NumPy's (np.broadcast_to made it read-only)
    return (q, 0), (compress_rows(np.polydiv, keep, r)[0], 0)


@batch_rule(np.vander)
def vander_rule(x, x_bdim, N=None, increasing=False):
    if logical_rank(x, x_bdim) != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    xv = move_bdim_to_front(x, x_bdim)
    b, n = xv.shape
    N = n if N is None else N
    if N < 0:
        raise ValueError("negative dimensions are not allowed")
    dtype = np.promote_types(x.dtype, int)
    if N == 0:
        return np.zeros((b, n, 0), dtype, like=xv), 0
    cols = [np.ones((b, n, 1), dtype, like=xv)]
    if N > 1:  # NumPy: x[:, None] copied into N - 1 columns, then multiply.accumulate
        rep = np.broadcast_to(np.reshape(xv, (b, n, 1)), (b, n, N - 1)).astype(dtype)
        cols.append(np.multiply.accumulate(rep, axis=2))
    v = np.concatenate(cols, axis=2) if len(cols) > 1 else cols[0]
    return (v if increasing else np.flip(v, axis=2)), 0


def _real_if_conjugate(op, a, roots):
    """poly's last step: a real result when the roots come in conjugate pairs."""
    if a.dtype.kind != "c":
        return a
    rc = roots.astype(complex)
    pairs = np.all(np.sort(rc, axis=1) == np.sort(np.conjugate(rc), axis=1), axis=1)
    if not any_true(~pairs):
        return np.real(a).copy()
    if not any_true(pairs):
        return a
    raise DataDependentError(_mixed_dtype_message(op))


def _mixed_dtype_message(op) -> str:
    return (f"{op_name(op)}: the result is real for some examples and complex for others "
            f"(NumPy returns real values when every root is real or comes in conjugate pairs), "
            f"so one batch cannot hold them (the loop's np.stack makes them all complex). Cast the "
            f"input to complex, or run this part outside vmap.")


@batch_rule(np.poly)
def poly_rule(seq_of_zeros, seq_of_zeros_bdim):
    z = move_bdim_to_front(seq_of_zeros, seq_of_zeros_bdim)
    b, sh = z.shape[0], z.shape[1:]
    if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
        z = np.linalg.eigvals(z)
    elif len(sh) <= 1:
        z = np.reshape(z, (b, -1) if b else (0, int(np.prod(sh))))
        if z.dtype != object:
            z = z.astype(mintypecode(z.dtype.char))
    else:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    if z.shape[1] == 0:
        return 1.0, None
    a = np.ones((b, 1), dtype=z.dtype, like=z)
    zero = np.zeros((b, 1), dtype=z.dtype, like=z)
    for i in range(z.shape[1]):  # NumPy: a = convolve(a, [1, -zero])
        a = (np.concatenate([a, zero], axis=1)
             + np.concatenate([zero, a * -z[:, i:i + 1]], axis=1))
    return _real_if_conjugate(np.poly, a, z), 0


def _all_real(real, level) -> bool:
    """NumPy's ``if all(w.imag == 0): w = w.real`` in ``roots`` (``eigvals``), for each
    example (``real``, batch first): an ``if`` on the data, so where the examples disagree
    vmap runs each side as a group of its own, as for a Python ``if`` (``bool()`` of a batched
    value: each group then has one dtype, and the groups' results stack as the loop's)."""
    try:
        return bool(wrap(real, 0, level))
    except ControlFlowError as e:
        e.args = (_mixed_dtype_message(np.roots),)
        raise


@batch_rule(np.roots, raw=True)
def roots_rule(level, args, kwargs):
    # (raw: the level, for its `if`; NumPy's dispatcher has checked the one argument)
    p, p_bdim = unwrap(args[0] if args else kwargs["p"], level)
    return wrap_result(_roots(p, p_bdim, level), level)


def _roots(p, p_bdim, level):
    if logical_rank(p, p_bdim) > 1:
        raise ValueError("Input must be a rank-1 array.")
    c = _coeffs(p, p_bdim, "p")
    b, n = c.shape
    nz = c != 0
    lead = np.cumsum(nz, axis=1) > 0  # from the first nonzero on
    core = lead & np.flip(np.cumsum(np.flip(nz, axis=1), axis=1) > 0, axis=1)
    # the output has n - first - 1 elements (none for an all-zero example)
    after_first = lead & np.concatenate([np.zeros((b, 1), bool, like=lead), lead[:, :-1]],
                                        axis=1)
    (out_len,) = compress_rows(np.roots, after_first, c)
    if any_true(core != core[:1]):  # same length, other windows: the loop
        raise LoopFallback("np.roots with leading/trailing zeros that differ between examples")
    (cc,) = compress_rows(np.roots, core, c)
    if cc.dtype.kind not in "fc":
        cc = cc.astype(float)
    big = cc.shape[1]
    if big > 1:  # NumPy's companion matrix, one per example
        first = -cc[:, 1:] / cc[:, :1]
        rest = np.broadcast_to(np.diag(np.ones(big - 2, cc.dtype, like=cc), -1)[1:],
                               (b, big - 2, big - 1))
        w = np.linalg.eigvals(np.concatenate([first[:, None, :], rest], axis=1))
        if w.dtype.kind == "c" and cc.dtype.kind != "c":
            # NumPy makes an example's roots real where they all are: 2.4's eigvals does
            # (for the whole batch at once), 2.5's eigvals is complex and roots does
            real = np.all(np.imag(w) == 0, axis=1)
            if b == 0 or _all_real(real, level):
                w = np.real(w)
    else:
        w = np.zeros((b, 0), float, like=cc)
    ntrail = out_len.shape[1] - w.shape[1]
    return np.concatenate([w, np.zeros((b, ntrail), w.dtype, like=w)], axis=1), 0


@batch_rule(np.polyfit)
def polyfit_rule(x, x_bdim, y, y_bdim, deg, rcond=None, full=False, w=None, w_bdim=None,
                 cov=False):
    require(x_bdim is None and w_bdim is None,
            "np.polyfit with a batched x or w (every example has its own least-squares matrix)")
    yv = move_bdim_to_front(y, y_bdim)
    b, ysh = yv.shape[0], yv.shape[1:]
    if not 1 <= len(ysh) <= 2:
        if int(deg) < 0:
            raise ValueError("expected deg >= 0")
        raise TypeError("expected 1D or 2D array for y")
    cols = np.reshape(np.moveaxis(yv, 0, 1), (ysh[0], -1))  # (M, B * K): examples as columns
    res = np.polyfit(x, cols, deg, rcond=rcond, full=full, w=w, cov=cov)
    k = ysh[1:]

    def per_example(a, axis):  # split the column axis back into (B, K) and move B first
        a = np.reshape(a, a.shape[:axis] + (b,) + k + a.shape[axis + 1:])
        return np.moveaxis(a, axis, 0), 0

    if full:
        c, resids, rank, s, rc = res
        r = (resids, None) if resids.size == 0 else (np.reshape(resids, (b,) + (k or (1,))), 0)
        return per_example(c, 1), r, (rank, None), (s, None), (rc, None)
    if cov:
        c, v = res
        if cov == "unscaled":
            return per_example(c, 1), ((v[:, :, 0] if not k else v), None)
        return per_example(c, 1), per_example(v, 2)
    return per_example(res, 1)
