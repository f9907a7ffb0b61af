"""Small generators of realistic examples shared by the corpus modules. Each takes the
generator ``rng`` first and returns a new, different array on every call."""

from __future__ import annotations

import numpy as np

__all__ = ["normal", "positive", "unit", "labels", "probabilities", "onehot_scores", "image",
           "binary", "shape_of"]


def shape_of(size) -> tuple:
    return tuple(size) if isinstance(size, tuple) else (size,)


def normal(rng, dtype, size, loc: float = 0.0, scale: float = 1.0) -> np.ndarray:
    return (loc + scale * rng.standard_normal(shape_of(size))).astype(dtype)


def positive(rng, dtype, size, low: float = 0.1, high: float = 3.0) -> np.ndarray:
    return rng.uniform(low, high, shape_of(size)).astype(dtype)


def unit(rng, dtype, size) -> np.ndarray:
    """Uniform in (0, 1)."""
    return rng.uniform(0.02, 0.98, shape_of(size)).astype(dtype)


def labels(rng, dtype, size, k: int = 3) -> np.ndarray:
    """Class labels 0..k-1, every class present (so that label-inferring code finds the same
    classes in every example)."""
    n = shape_of(size)[0]
    y = np.concatenate([np.arange(k), rng.integers(0, k, n - k)]) if n >= k else \
        rng.integers(0, k, n)
    return rng.permutation(y).astype(dtype)


def binary(rng, dtype, size) -> np.ndarray:
    return labels(rng, dtype, size, 2)


def probabilities(rng, dtype, n: int, k: int) -> np.ndarray:
    """Rows of class probabilities (each sums to one)."""
    p = rng.dirichlet(np.ones(k), n)
    return p.astype(dtype)


def onehot_scores(rng, dtype, n: int, k: int) -> tuple:
    """Multilabel indicator targets (every row and column with a 1 and a 0) and scores."""
    y = (rng.uniform(size=(n, k)) < 0.5).astype(np.int64)
    y[np.arange(n), rng.integers(0, k, n)] = 1
    y[0], y[1] = 1, 0
    y[0, 0], y[1, 1] = 0, 1
    return y, rng.uniform(size=(n, k)).astype(dtype)


def image(rng, dtype, size) -> np.ndarray:
    """A smooth image with noise: floats in [0, 1], integers over their usual range."""
    shape = shape_of(size)
    grids = np.meshgrid(*[np.linspace(0, 1, s) for s in shape], indexing="ij")
    phase = rng.uniform(0, 2 * np.pi, len(shape))
    smooth = sum(np.sin(3 * g + p) for g, p in zip(grids, phase)) / (2 * len(shape)) + 0.5
    img = np.clip(smooth + 0.1 * rng.standard_normal(shape), 0, 1)
    dt = np.dtype(dtype)
    if dt.kind in "ui":
        top = 255 if dt.itemsize == 1 else 4095
        return np.round(img * top).astype(dt)
    if dt == bool:
        return img > 0.5
    return img.astype(dt)
