"""C-style batch rules, one module per op family. Importing this package registers them."""

from . import (  # noqa: F401
    creation,
    differences,
    elementwise,
    fft,
    histograms,
    indexing,
    joining,
    linalg,
    metadata,
    moments,
    polynomial,
    products,
    quantiles,
    reductions,
    setops,
    shape,
    sorting,
    views,
)
