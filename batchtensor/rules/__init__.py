"""C-style batch rules, one module per op family. Importing this package registers them."""

from . import (elementwise, fft, indexing, joining, linalg, metadata,  # noqa: F401
               polynomial, reductions, setops, sorting, views)
