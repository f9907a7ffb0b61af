"""Windows, patches and structured matrices that libraries build with
``numpy.lib.stride_tricks.as_strided`` (imported by name at import time): scikit-image's
``skimage.util`` views, scikit-learn's image patches, SciPy's special matrices."""

from __future__ import annotations

import numpy as np

from .core import Entry
from .draw import image, normal

FLOATS = (np.float64, np.float32)


def one_image(rng, dt, size):
    return (image(rng, dt, size),)


def one_vector(rng, dt, size):
    return (normal(rng, dt, size),)


def two_vectors(rng, dt, size):
    return normal(rng, dt, size), normal(rng, dt, size + 2)


def _util(attr, label="", **kw):
    return Entry("skimage.util", attr, one_image, dtypes=(np.float64, np.uint8),
                 sizes=((8, 9), (6, 6)), kwargs=kw, label=label)


def _linalg(attr, gen=one_vector, label="", **kw):
    return Entry("scipy.linalg", attr, gen, dtypes=FLOATS, sizes=(5, 1), kwargs=kw, label=label)


ENTRIES = [
    _util("view_as_windows", window_shape=(3, 2)),
    _util("view_as_windows", label="step", window_shape=(2, 3), step=2),
    _util("view_as_blocks", block_shape=(2, 3)),
    Entry("sklearn.feature_extraction.image", "extract_patches_2d", one_image,
          dtypes=(np.float64, np.uint8), sizes=((8, 9), (5, 4)), kwargs={"patch_size": (3, 2)}),
    _linalg("toeplitz"),
    _linalg("toeplitz", two_vectors, label="c, r"),
    _linalg("hankel"),
    _linalg("hankel", two_vectors, label="c, r"),
    _linalg("circulant"),
    _linalg("convolution_matrix", label="full", n=4),
    _linalg("convolution_matrix", label="same", n=4, mode="same"),
    _linalg("fiedler"),
]
