"""Per-example workloads for bench/run.py.

Each workload is written once per example in NumPy (the function a user would vmap), once
hand-vectorised over the batch (the best NumPy-only rewrite we know), and — for the peers —
once per example in torch and in jax.numpy. ``make(rng, regime)`` returns the inputs and
in_axes for a regime: "dispatch" (batch 1024, tiny examples: the per-op overhead dominates)
or "compute" (batch 64, large examples: the arithmetic dominates).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


@dataclass
class Workload:
    name: str
    per_example: Callable          # NumPy, one example
    vectorised: Callable           # NumPy, the whole batch (same argument order)
    make: Callable                 # (rng, regime) -> (args, in_axes, out_axis)
    signature: Any = None          # for np.vectorize: one string, or one per regime
    torch_fn: Callable | None = None
    jax_fn: Callable | None = None
    rtol: float = 1e-10
    #: the kernel library family of the workload's one heavy call, where it has one: "blas"
    #: (GEMM / GEMV) or "lapack" (a factorisation); torch may link another library for it
    #: than NumPy does (bench/run.py reports which), a cell the two do not race on equal terms
    kernel: str | None = None
    #: the method that is NumPy's own batched call of that op on the stacked batch
    #: (``np.linalg.solve`` on ``[B, n, n]``), where there is one: a second reference
    numpy_batched: str | None = None


# ---- MLP forward ------------------------------------------------------------------------------
def mlp(x, w1, b1, w2, b2):
    return w2 @ np.tanh(w1 @ x + b1) + b2


def mlp_vec(xs, w1, b1, w2, b2):
    return np.tanh(xs @ w1.T + b1) @ w2.T + b2


def mlp_torch(x, w1, b1, w2, b2):
    import torch
    return w2 @ torch.tanh(w1 @ x + b1) + b2


def mlp_jax(x, w1, b1, w2, b2):
    import jax.numpy as jnp
    return w2 @ jnp.tanh(w1 @ x + b1) + b2


def _mlp_params(rng, d, h, o):
    return (rng.normal(size=(h, d)) / np.sqrt(d), rng.normal(size=h),
            rng.normal(size=(o, h)) / np.sqrt(h), rng.normal(size=o))


def make_mlp(rng, regime):
    b, d, h, o = (1024, 8, 16, 4) if regime == "dispatch" else (64, 512, 1024, 256)
    return (rng.normal(size=(b, d)),) + _mlp_params(rng, d, h, o), (0, None, None, None, None)


# ---- ensemble: one input, stacked weights -----------------------------------------------------
def ensemble_vec(x, w1, b1, w2, b2):
    h = np.tanh(w1 @ x + b1)
    return np.matmul(w2, h[..., None])[..., 0] + b2


def make_ensemble(rng, regime):
    e, d, h, o = (1024, 8, 16, 4) if regime == "dispatch" else (64, 256, 512, 128)
    params = [np.stack(p) for p in zip(*[_mlp_params(rng, d, h, o) for _ in range(e)])]
    return (rng.normal(size=d), *params), (None, 0, 0, 0, 0)


# ---- pairwise distances by nested vmap --------------------------------------------------------
def distance(a, b):
    return np.sqrt(((a - b) ** 2).sum())


def pairwise_vec(a, b):
    return np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))


def distance_torch(a, b):
    import torch
    return torch.sqrt(((a - b) ** 2).sum())


def distance_jax(a, b):
    import jax.numpy as jnp
    return jnp.sqrt(((a - b) ** 2).sum())


def make_pairwise(rng, regime):
    n, d = (32, 3) if regime == "dispatch" else (64, 4096)
    return (rng.normal(size=(n, d)), rng.normal(size=(n, d))), "nested"


# ---- small linear solves ----------------------------------------------------------------------
def solve(a, y):
    return np.linalg.solve(a, y)


def solve_vec(a, y):
    return np.linalg.solve(a, y[..., None])[..., 0]


def solve_torch(a, y):
    import torch
    return torch.linalg.solve(a, y)


def solve_jax(a, y):
    import jax.numpy as jnp
    return jnp.linalg.solve(a, y)


def _make_solve(n_dispatch, n_compute):
    def make(rng, regime):
        b, n = (1024, n_dispatch) if regime == "dispatch" else (64, n_compute)
        a = rng.normal(size=(b, n, n)) + n * np.eye(n)
        return (a, rng.normal(size=(b, n))), (0, 0)
    return make


# ---- softmax cross-entropy --------------------------------------------------------------------
def xent(logits, label):
    z = logits - logits.max()
    logp = z - np.log(np.exp(z).sum())
    return -np.take_along_axis(logp, label[None], axis=0)[0]


def xent_vec(logits, labels):
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -np.take_along_axis(logp, labels[:, None], axis=1)[:, 0]


def xent_torch(logits, label):
    import torch
    z = logits - logits.max()
    logp = z - torch.log(torch.exp(z).sum())
    return -torch.take_along_dim(logp, label[None], dim=0)[0]


def xent_jax(logits, label):
    import jax.numpy as jnp
    z = logits - logits.max()
    logp = z - jnp.log(jnp.exp(z).sum())
    return -jnp.take_along_axis(logp, label[None], axis=0)[0]


def make_xent(rng, regime):
    b, c = (1024, 10) if regime == "dispatch" else (64, 100_000)
    return (rng.normal(size=(b, c)), rng.integers(0, c, size=b)), (0, 0)


# ---- Lorenz RK4 step over parameters ----------------------------------------------------------
DT = 0.01


def _lorenz(s, p, stack):
    x, y, z = s[0], s[1], s[2]
    sigma, rho, beta = p[0], p[1], p[2]
    return stack([sigma * (y - x), x * (rho - z) - y, x * y - beta * z])


def _rk4(s, p, stack):
    k1 = _lorenz(s, p, stack)
    k2 = _lorenz(s + DT / 2 * k1, p, stack)
    k3 = _lorenz(s + DT / 2 * k2, p, stack)
    k4 = _lorenz(s + DT * k3, p, stack)
    return s + DT / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def rk4(s, p):
    return _rk4(s, p, np.stack)


def rk4_vec(s, p):
    def lorenz(s):
        x, y, z = s[:, 0], s[:, 1], s[:, 2]
        sigma, rho, beta = p[:, 0], p[:, 1], p[:, 2]
        if s.ndim == 3:
            sigma, rho, beta = sigma[:, None], rho[:, None], beta[:, None]
        return np.stack([sigma * (y - x), x * (rho - z) - y, x * y - beta * z], axis=1)
    k1 = lorenz(s)
    k2 = lorenz(s + DT / 2 * k1)
    k3 = lorenz(s + DT / 2 * k2)
    k4 = lorenz(s + DT * k3)
    return s + DT / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def rk4_torch(s, p):
    import torch
    return _rk4(s, p, torch.stack)


def rk4_jax(s, p):
    import jax.numpy as jnp
    return _rk4(s, p, jnp.stack)


def make_rk4(rng, regime):
    # dispatch: one 3-d state per example; compute: 20000 independent systems per example
    b = 1024 if regime == "dispatch" else 64
    shape = (b, 3) if regime == "dispatch" else (b, 3, 20_000)
    p = np.stack([rng.uniform(9, 11, b), rng.uniform(27, 29, b), rng.uniform(2, 3, b)], axis=1)
    return (rng.normal(size=shape), p), (0, 0)


# ---- per-example convolution ------------------------------------------------------------------
def convolve(x, k):
    return np.convolve(x, k)


def convolve_vec(x, k):
    m = k.shape[1]
    padded = np.pad(x, ((0, 0), (m - 1, m - 1)))
    return np.einsum("bnk,bk->bn", sliding_window_view(padded, m, axis=1), k[:, ::-1])


def convolve_torch(x, k):
    import torch
    return torch.nn.functional.conv1d(x[None, None], k.flip(0)[None, None],
                                      padding=k.shape[0] - 1)[0, 0]


def convolve_jax(x, k):
    import jax.numpy as jnp
    return jnp.convolve(x, k)


def make_convolve(rng, regime):
    b, n, m = (1024, 64, 5) if regime == "dispatch" else (64, 100_000, 32)
    return (rng.normal(size=(b, n)), rng.normal(size=(b, m))), (0, 0)


# ---- per-row sort + cumsum + searchsorted -----------------------------------------------------
def sort_search(row, q):
    c = np.cumsum(np.sort(row))
    return np.searchsorted(c, q)


def sort_search_vec(rows, qs):
    c = np.cumsum(np.sort(rows, axis=1), axis=1)
    # one global searchsorted: shift every row above the previous one (rows are sorted)
    lo = np.minimum(c.min(axis=1), qs.min(axis=1))
    hi = np.maximum(c.max(axis=1), qs.max(axis=1))
    span = hi - lo + 1.0
    offset = np.concatenate([[0.0], np.cumsum(span)[:-1]]) - lo
    flat = (c + offset[:, None]).ravel()
    pos = np.searchsorted(flat, qs + offset[:, None])
    return pos - (np.arange(rows.shape[0]) * rows.shape[1])[:, None]


def sort_search_torch(row, q):
    import torch
    c = torch.cumsum(torch.sort(row).values, 0)
    return torch.searchsorted(c, q)


def sort_search_jax(row, q):
    import jax.numpy as jnp
    c = jnp.cumsum(jnp.sort(row))
    return jnp.searchsorted(c, q)


def make_sort_search(rng, regime):
    b, n, q = (1024, 16, 4) if regime == "dispatch" else (64, 200_000, 1000)
    rows = rng.uniform(0, 1, size=(b, n))
    qs = rng.uniform(0, n / 2, size=(b, q))
    return (rows, qs), (0, 0)


WORKLOADS = [
    Workload("mlp", mlp, mlp_vec, make_mlp, "(d),(h,d),(h),(o,h),(o)->(o)", mlp_torch, mlp_jax,
             kernel="blas"),
    Workload("ensemble", mlp, ensemble_vec, make_ensemble, "(d),(h,d),(h),(o,h),(o)->(o)",
             mlp_torch, mlp_jax, kernel="blas"),
    Workload("pairwise", distance, pairwise_vec, make_pairwise, "(d),(d)->()",
             distance_torch, distance_jax),
    Workload("solve4", solve, solve_vec, _make_solve(4, 128), "(n,n),(n)->(n)", solve_torch,
             solve_jax, rtol=1e-8, kernel="lapack", numpy_batched="vectorised"),
    Workload("solve16", solve, solve_vec, _make_solve(16, 256), "(n,n),(n)->(n)", solve_torch,
             solve_jax, rtol=1e-8, kernel="lapack", numpy_batched="vectorised"),
    Workload("xent", xent, xent_vec, make_xent, "(c),()->()", xent_torch, xent_jax),
    Workload("lorenz_rk4", rk4, rk4_vec, make_rk4,
             {"dispatch": "(s),(p)->(s)", "compute": "(s,n),(p)->(s,n)"}, rk4_torch, rk4_jax),
    Workload("convolve", convolve, convolve_vec, make_convolve, "(n),(m)->(p)",
             convolve_torch, convolve_jax, rtol=1e-8),
    Workload("sort_cumsum_searchsorted", sort_search, sort_search_vec, make_sort_search,
             "(n),(q)->(q)", sort_search_torch, sort_search_jax),
]
