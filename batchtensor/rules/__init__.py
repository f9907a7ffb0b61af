"""C-style batch rules, one module per op family. Importing this package registers them."""

from . import (elementwise, fft, indexing, joining, linalg, metadata, reductions, setops,  # noqa: F401
               sorting, views)
