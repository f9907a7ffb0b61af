"""scikit-image's filters and thresholds (``skimage.filters``)."""

from __future__ import annotations

import numpy as np

from .core import Entry
from .draw import image

K = "skimage.filters"
SIZES = ((12, 10), (7, 9))
DTYPES = (np.float64, np.uint8)


def one(rng, dt, size):
    return (image(rng, dt, size),)


def bimodal(rng, dt, size):
    """Two populations of intensities, as the histogram-based thresholds expect."""
    img = image(rng, np.float64, size)
    img = np.where(img > 0.5, 0.75, 0.25) + 0.07 * rng.standard_normal(img.shape)
    img = np.clip(img, 0, 1)
    return (np.round(img * 255).astype(dt) if np.dtype(dt).kind == "u" else img.astype(dt),)


def image_and_kernel(rng, dt, size):
    return image(rng, dt, size), rng.uniform(-1, 1, (3, 3)).astype(dt)


def _f(attr, gen=one, label="", sizes=SIZES, dtypes=DTYPES, rtol=None, **kw):
    return Entry(K, attr, gen, dtypes=dtypes, sizes=sizes, kwargs=kw, label=label, rtol=rtol)


ENTRIES = [
    _f("gaussian", sigma=1.5),
    _f("gaussian", label="preserve_range", dtypes=(np.uint8,), sigma=1.0, preserve_range=True),
    _f("sobel"),
    _f("sobel_h"),
    _f("sobel_v"),
    _f("scharr"),
    _f("scharr_h"),
    _f("scharr_v"),
    _f("prewitt"),
    _f("prewitt_h"),
    _f("prewitt_v"),
    _f("roberts"),
    _f("roberts_pos_diag"),
    _f("roberts_neg_diag"),
    _f("farid"),
    _f("farid_h"),
    _f("farid_v"),
    _f("laplace"),
    _f("median"),
    _f("unsharp_mask", radius=1.5, amount=0.8),
    _f("difference_of_gaussians", low_sigma=1.0, high_sigma=2.0),
    _f("butterworth", sizes=((12, 10),), cutoff_frequency_ratio=0.2),
    _f("gabor", sizes=((12, 10),), dtypes=(np.float64,), frequency=0.3, theta=0.4),
    _f("frangi", sizes=((12, 10),), dtypes=(np.float64,), sigmas=[1, 2]),
    _f("hessian", sizes=((12, 10),), dtypes=(np.float64,), sigmas=[1, 2]),
    _f("meijering", sizes=((12, 10),), dtypes=(np.float64,), sigmas=[1, 2]),
    _f("sato", sizes=((12, 10),), dtypes=(np.float64,), sigmas=[1, 2]),
    _f("correlate_sparse", image_and_kernel, dtypes=(np.float64,)),
    _f("apply_hysteresis_threshold", dtypes=(np.float64,), low=0.4, high=0.7),
    _f("threshold_otsu", bimodal),
    _f("threshold_li", bimodal, rtol=1e-8),
    _f("threshold_yen", bimodal),
    _f("threshold_isodata", bimodal),
    _f("threshold_mean", bimodal),
    _f("threshold_minimum", bimodal, sizes=((24, 20),), nbins=32),
    _f("threshold_triangle", bimodal),
    _f("threshold_multiotsu", bimodal, sizes=((24, 20),), classes=3, nbins=32),
    _f("threshold_local", dtypes=(np.float64,), block_size=5),
    _f("threshold_niblack", dtypes=(np.float64,), window_size=5),
    _f("threshold_sauvola", dtypes=(np.float64,), window_size=5),
]
