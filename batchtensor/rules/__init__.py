"""C-style batch rules, one module per op family. Importing this package registers them."""

from . import elementwise, indexing, joining, linalg, products, reductions, sorting, views  # noqa: F401
