"""C-style batch rules, one module per op family. Importing this package registers them."""

from . import elementwise, fft, indexing, joining, linalg, reductions, sorting, views  # noqa: F401
