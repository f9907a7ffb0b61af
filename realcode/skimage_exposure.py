"""scikit-image's intensity and histogram functions (``skimage.exposure``)."""

from __future__ import annotations

import numpy as np

from .core import Entry
from .draw import image

K = "skimage.exposure"
SIZES = ((12, 10), (8, 8, 3))
DTYPES = (np.float64, np.uint8)


def one(rng, dt, size):
    return (image(rng, dt, size),)


def image_and_reference(rng, dt, size):
    return image(rng, dt, size), image(rng, dt, size) ** 2 if np.dtype(dt).kind == "f" else \
        image(rng, dt, size) // 2


def _e(attr, gen=one, label="", sizes=SIZES, dtypes=DTYPES, **kw):
    return Entry(K, attr, gen, dtypes=dtypes, sizes=sizes, kwargs=kw, label=label)


ENTRIES = [
    _e("equalize_hist", nbins=16),
    _e("equalize_adapthist", sizes=((16, 16),), kernel_size=8, nbins=16),
    _e("rescale_intensity"),
    _e("rescale_intensity", label="in_range", dtypes=(np.float64,), in_range=(0.2, 0.8)),
    _e("adjust_gamma", gamma=0.7),
    _e("adjust_log", gain=0.9),
    _e("adjust_sigmoid", cutoff=0.4, gain=8),
    _e("histogram", dtypes=(np.float64,), nbins=8),
    _e("histogram", label="source_range=dtype", dtypes=(np.uint8,), nbins=8,
       source_range="dtype"),
    _e("cumulative_distribution", dtypes=(np.float64,), nbins=8),
    _e("is_low_contrast"),
    _e("match_histograms", image_and_reference, sizes=((12, 10),)),
]
