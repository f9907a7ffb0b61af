"""scikit-image's image comparison metrics (``skimage.metrics``)."""

from __future__ import annotations

import numpy as np

from .core import Entry
from .draw import image

K = "skimage.metrics"
SIZES = ((12, 10), (7, 7))


def two_images(rng, dt, size):
    a = image(rng, np.float64, size)
    b = np.clip(a + 0.08 * rng.standard_normal(a.shape), 0, 1)
    return _as(a, dt), _as(b, dt)


def _as(img, dt):
    dt = np.dtype(dt)
    return np.round(img * 255).astype(dt) if dt.kind in "ui" else img.astype(dt)


def two_masks(rng, dt, size):
    a, b = two_images(rng, np.float64, size)
    return a > 0.6, b > 0.6


def two_labelings(rng, dt, size):
    a, b = two_images(rng, np.float64, size)
    return np.digitize(a, [0.35, 0.65]).astype(dt), np.digitize(b, [0.3, 0.7]).astype(dt)


def _k(attr, gen=two_images, label="", sizes=SIZES, dtypes=(np.float64, np.uint8), **kw):
    return Entry(K, attr, gen, dtypes=dtypes, sizes=sizes, kwargs=kw, label=label)


ENTRIES = [
    _k("mean_squared_error"),
    _k("normalized_root_mse"),
    _k("normalized_root_mse", label="min-max", normalization="min-max"),
    _k("peak_signal_noise_ratio", dtypes=(np.float64,), data_range=1.0),
    _k("peak_signal_noise_ratio", label="uint8", dtypes=(np.uint8,)),
    _k("structural_similarity", dtypes=(np.float64,), win_size=5, data_range=1.0),
    _k("structural_similarity", label="gaussian", sizes=((12, 10),), dtypes=(np.float64,),
       gaussian_weights=True, sigma=1.0, data_range=1.0),
    _k("hausdorff_distance", two_masks, dtypes=(bool,)),
    _k("hausdorff_distance", two_masks, label="modified", dtypes=(bool,), method="modified"),
    _k("hausdorff_pair", two_masks, dtypes=(bool,)),
    _k("normalized_mutual_information", bins=8),
    _k("variation_of_information", two_labelings, dtypes=(np.int64,)),
    _k("adapted_rand_error", two_labelings, dtypes=(np.int64,)),
]
