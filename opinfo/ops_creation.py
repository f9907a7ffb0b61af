"""Creation from a prototype: zeros_like, ones_like, empty_like, full_like."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import ALL, SHAPES, make_array


def like_samples(fill: bool):
    def gen(rng, dtype):
        head = (lambda a: (a, 2.5)) if fill else (lambda a: (a,))
        for shape in SHAPES:
            yield SampleInput(head(make_array(rng, shape, dtype)), {}, f"{shape}")
        a = make_array(rng, (3, 4), dtype)
        yield SampleInput(head(a), {"dtype": np.int32}, "dtype=")
        yield SampleInput(head(a), {"shape": (2, 5)}, "shape=")
        yield SampleInput(head(a), {"shape": 3}, "shape=int")
        yield SampleInput(head(a), {"shape": ()}, "shape=()")
        yield SampleInput(head(a), {"shape": (2, 0)}, "shape with a 0")
        yield SampleInput(head(a), {"order": "F"}, "order=F")
        yield SampleInput(head(a), {"order": "C", "shape": (4, 2)}, "order=C shape=")
        yield SampleInput(head(a), {"order": "F", "shape": (4, 2)}, "order=F shape=")
        yield SampleInput(head(make_array(rng, (3, 5), dtype, noncontiguous=True)), {},
                          "non-contiguous")
        yield SampleInput(head(a), {"order": "X"}, "bad order raises")
        yield SampleInput(head(a), {"shape": (-1, 2)}, "negative shape raises")
        if fill:
            yield SampleInput((a, -1.7), {"dtype": np.int64}, "unsafe cast of the fill")
            yield SampleInput((a, np.nan), {"dtype": np.float32}, "NaN fill")
    return gen


OPS = [
    OpInfo("zeros_like", np.zeros_like, like_samples(False), "rule", dtypes=ALL),
    OpInfo("ones_like", np.ones_like, like_samples(False), "rule", dtypes=ALL),
    OpInfo("empty_like", np.empty_like, like_samples(False), "rule", dtypes=ALL,
           check_values=False, notes="values are uninitialised: shapes and dtypes only"),
    OpInfo("full_like", np.full_like, like_samples(True), "rule", dtypes=ALL),
]
