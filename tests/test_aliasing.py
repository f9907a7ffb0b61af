"""Random programs of views and in-place writes, against the per-example loop.

Which results share memory with which is where a vectorised run can silently differ from the
loop: a rule that returns a view of the batch where NumPy copies one example (or the reverse)
gives the same values until something is written. Each program takes views of a fresh array
and of the input (slices, transposes, reshapes, ravels, ``x[i]``, 0-d arrays...), writes into
some of them in place (operators, ``x[...] = v``, ``out=``, ``np.copyto``, ``x.sort()``...) and
returns a checksum of every value it made; the caller's input must change as the loop changes
it. The programs are drawn from fixed seeds (reproducible in CI); a third run under a nested
vmap. Both sides raising is fine (NumPy refuses some writes, e.g. into read-only views).

Left out on purpose: ``np.add.at`` into NumPy's read-only views (NumPy 2.4 writes anyway,
vmap raises NumPy's read-only error), and ``np.square(v, out=v)`` of complex values (NumPy's
strided and contiguous loops round differently, so the loop's own bits depend on the layout).
"""

from __future__ import annotations

import operator
import random

import numpy as np
import pytest

import batchtensor as bt


def _if(cond, f):
    return lambda v: f(v) if cond(v) else None


_ROWS = lambda v: v.ndim >= 1 and v.shape[0] > 0  # noqa: E731
_LAST = lambda v: v.ndim >= 1 and v.shape[-1] > 0  # noqa: E731

VIEWS = {
    "v[1:]": _if(lambda v: v.ndim and v.shape[0] > 1, lambda v: v[1:]),
    "v[::-1]": _if(lambda v: v.ndim, lambda v: v[::-1]),
    "v.T": lambda v: v.T,
    "v[0]": _if(_ROWS, lambda v: v[0]),
    "v[1]": _if(lambda v: v.ndim and v.shape[0] > 1, lambda v: v[1]),
    "v[..., 0]": _if(_LAST, lambda v: v[..., 0]),
    "v[0, ...]": _if(_ROWS, lambda v: v[0, ...]),
    "v[()]": lambda v: v[()],
    "v[None]": lambda v: v[None],
    "v[..., None]": lambda v: v[..., None],
    "v[[0]]": _if(_ROWS, lambda v: v[[0]]),
    "v.reshape(-1)": lambda v: v.reshape(-1),
    "v.reshape(-1, order='F')": lambda v: v.reshape(-1, order="F"),
    "v.ravel()": lambda v: v.ravel(),
    "np.ravel(v, 'K')": lambda v: np.ravel(v, order="K"),
    "v.flatten()": lambda v: v.flatten(),
    "np.swapaxes(v, 0, -1)": _if(lambda v: v.ndim, lambda v: np.swapaxes(v, 0, -1)),
    "np.moveaxis(v, 0, -1)": _if(lambda v: v.ndim, lambda v: np.moveaxis(v, 0, -1)),
    "np.squeeze(v)": np.squeeze,
    "np.expand_dims(v, -1)": lambda v: np.expand_dims(v, -1),
    "np.atleast_1d(v)": np.atleast_1d,
    "np.atleast_2d(v)": np.atleast_2d,
    "np.flip(v)": np.flip,
    "np.diagonal(v)": _if(lambda v: v.ndim >= 2, np.diagonal),
    "np.broadcast_to(v, (2, ...))": lambda v: np.broadcast_to(v, (2,) + v.shape),
    "np.asarray(v, like=v)": _if(lambda v: v.ndim, lambda v: np.asarray(v, like=v)),
    "np.array(v, copy=None, like=v)": _if(lambda v: v.ndim,
                                          lambda v: np.array(v, copy=None, like=v)),
    "v.astype(v.dtype, copy=False)": lambda v: v.astype(v.dtype, copy=False),
    "v.real": lambda v: v.real,
    "np.copy(v)": np.copy,
    "v * 1": lambda v: v * 1,
    "v.sum()": lambda v: v.sum(),
    "np.where(v > 0, v, 0)": lambda v: np.where(v > 0, v, 0),
    "np.split(v, 1)[0]": _if(lambda v: v.ndim, lambda v: np.split(v, 1)[0]),
    "v.imag": lambda v: v.imag,
    "np.real(v)": np.real,
    "np.atleast_3d(v)": np.atleast_3d,
    "np.transpose(v)": np.transpose,
    "np.flipud(v)": _if(lambda v: v.ndim, np.flipud),
    "np.rot90(v)": _if(lambda v: v.ndim >= 2, np.rot90),
    "np.ascontiguousarray(v, like=v)": _if(lambda v: v.ndim,
                                           lambda v: np.ascontiguousarray(v, like=v)),
    "np.asfortranarray(v, like=v)": _if(lambda v: v.ndim,
                                        lambda v: np.asfortranarray(v, like=v)),
    "np.require(v, like=v)": _if(lambda v: v.ndim, lambda v: np.require(v, like=v)),
    "v[..., ::2]": _if(lambda v: v.ndim, lambda v: v[..., ::2]),
    "v[:, None]": _if(lambda v: v.ndim, lambda v: v[:, None]),
    "v.T[..., 0]": _if(_LAST, lambda v: v.T[..., 0]),
    "np.moveaxis(v, -1, 0)[0]": _if(_LAST, lambda v: np.moveaxis(v, -1, 0)[0]),
    "v.astype(float)": lambda v: v.astype(float),
    "v.conj()": lambda v: v.conj(),
    "np.squeeze(v[..., :1])": _if(_LAST, lambda v: np.squeeze(v[..., :1])),
}

WRITES = {  # name -> (write, whether it is an in-place operator, which rebinds the name)
    "v += 1": (lambda v: operator.iadd(v, 1), True),
    "v *= 2": (lambda v: operator.imul(v, 2), True),
    "v -= v.mean()": (lambda v: operator.isub(v, v.mean()), True),
    "v **= 2": (lambda v: operator.ipow(v, 2), True),
    "v[...] = 7": (lambda v: operator.setitem(v, Ellipsis, 7), False),
    "v[0] = -3": (_if(_ROWS, lambda v: operator.setitem(v, 0, -3)), False),
    "v[..., 0] = 4": (_if(_LAST, lambda v: operator.setitem(v, (Ellipsis, 0), 4)), False),
    "v[v > 0] = 0": (lambda v: operator.setitem(v, v > 0, 0), False),
    "v[:] = v[::-1]": (_if(lambda v: v.ndim, lambda v: operator.setitem(
        v, slice(None), v[::-1])), False),
    "np.copyto(v, 5)": (lambda v: np.copyto(v, 5), False),
    "np.negative(v, out=v)": (lambda v: np.negative(v, out=v), False),
    "np.multiply(v, 3, out=v)": (lambda v: np.multiply(v, 3, out=v), False),
    "np.clip(v, -1, 1, out=v)": (lambda v: np.clip(v, -1, 1, out=v), False),
    "np.cumsum(v, -1, out=v)": (_if(lambda v: v.ndim, lambda v: np.cumsum(v, -1, out=v)),
                                False),
    "np.sum(..., out=v[..., :1])": (_if(_LAST, lambda v: np.sum(
        v, axis=-1, keepdims=True, out=v[..., :1])), False),
    "np.put(v, 0, 9)": (_if(lambda v: v.size, lambda v: np.put(v, 0, 9)), False),
    "np.putmask(v, v > 0, -1)": (lambda v: np.putmask(v, v > 0, -1), False),
    "v.fill(2)": (lambda v: v.fill(2), False),
    "v.sort()": (_if(lambda v: v.ndim, lambda v: v.sort()), False),
    "np.place(v, v > 0, 1)": (lambda v: np.place(v, v > 0, [1]), False),
    "np.put_along_axis(v, 0, 8, -1)": (_if(_LAST, lambda v: np.put_along_axis(
        v, np.zeros(v.shape[:-1] + (1,), int), 8, axis=-1)), False),
    "v.real[...] = 3": (lambda v: operator.setitem(v.real, Ellipsis, 3), False),
    "v //= 2": (lambda v: operator.ifloordiv(v, 2), True),
    "v %= 3": (lambda v: operator.imod(v, 3), True),
    "np.abs(v, out=v)": (lambda v: np.abs(v, out=v), False),
    "np.copyto(v, v[::-1])": (_if(lambda v: v.ndim, lambda v: np.copyto(v, v[::-1])), False),
}
_VIEW_NAMES, _WRITE_NAMES = sorted(VIEWS), sorted(WRITES)
SHAPES = [(), (3,), (4,), (2, 3), (3, 2), (2, 2), (3, 3), (2, 2, 2), (0, 3)]
DTYPES = ["float64", "float64", "float32", "int64", "complex128"]


def draw(seed: int):
    """(steps, shape, dtype): each step is (kind, name, which earlier value it acts on)."""
    rng = random.Random(seed)
    steps = []
    for _ in range(rng.randint(2, 7)):
        if rng.random() < 0.55:
            steps.append(("view", rng.choice(_VIEW_NAMES), rng.randrange(8)))
        else:
            steps.append(("write", rng.choice(_WRITE_NAMES), rng.randrange(8)))
    return steps, rng.choice(SHAPES), rng.choice(DTYPES)


def program(steps):
    def run(x):
        values = [x * 1, x]  # a fresh array, and the input itself
        for kind, name, src in steps:
            k = src % len(values)
            if kind == "view":
                r = VIEWS[name](values[k])
                if r is not None:
                    values.append(r)
            else:
                write, rebinds = WRITES[name]
                r = write(values[k])
                if rebinds:
                    values[k] = r
        return np.stack([np.ravel(v * 1).sum() * (1.0 + 0j) + np.size(v) for v in values])
    return run


def _inputs(seed, shape, dtype, batch=3):
    g = np.random.default_rng(seed)
    xs = g.normal(size=(batch,) + shape)
    if dtype == "int64":
        return g.integers(-5, 6, size=xs.shape)
    if dtype == "complex128":
        return xs + 1j * g.normal(size=xs.shape)
    return xs.astype(dtype)


def _run(f):
    try:
        return f(), None
    except Exception as e:  # noqa: BLE001  (both sides raising is the agreement we check)
        return None, e


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # overflow / invalid: int and ** cases
@pytest.mark.parametrize("block", range(12))
def test_views_and_writes_match_the_loop(block):
    for seed in range(block * 150, (block + 1) * 150):
        steps, shape, dtype = draw(seed)
        f = program(steps)
        xs_loop, xs_vmap = _inputs(seed, shape, dtype), _inputs(seed, shape, dtype)
        want, loop_exc = _run(lambda: np.stack([f(x) for x in xs_loop]))
        if seed % 3 == 0:
            got, exc = _run(lambda: bt.vmap(bt.vmap(f))(xs_vmap[None])[0])
        else:
            got, exc = _run(lambda: bt.vmap(f)(xs_vmap))
        where = f"seed {seed}: {dtype} {shape}: {steps}"
        if loop_exc is not None:
            assert exc is not None, f"{where}: the loop raises {loop_exc!r}, vmap returned"
            continue
        assert exc is None, f"{where}: vmap raised {exc!r}"
        np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=where)
        np.testing.assert_array_equal(xs_vmap, xs_loop, err_msg=f"{where}: input")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_programs_cover_the_tables():
    """Every view and write is drawn, and most programs run (the checks above are not void)."""
    seen, ran = set(), 0
    for seed in range(12 * 150):
        steps, shape, dtype = draw(seed)
        seen |= {name for _, name, _ in steps}
        x = _inputs(seed, shape, dtype)[0]
        ran += _run(lambda: program(steps)(x))[1] is None
    assert seen == set(VIEWS) | set(WRITES)
    assert ran > 0.8 * 12 * 150
