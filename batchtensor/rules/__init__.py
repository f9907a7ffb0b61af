"""C-style batch rules, one module per op family. Importing this package registers them."""

from . import (  # noqa: F401
    creation,
    elementwise,
    fft,
    indexing,
    joining,
    linalg,
    metadata,
    placement,
    polynomial,
    products,
    reductions,
    selection,
    setops,
    shape,
    sorting,
    statistics,
    views,
)
