"""C-style batch rules, one module per op family. Importing this package registers them."""

from . import (  # noqa: F401
    elementwise,
    indexing,
    joining,
    linalg,
    products,
    reductions,
    shape,
    sorting,
    statistics,
    views,
)
