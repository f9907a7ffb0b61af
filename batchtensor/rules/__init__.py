"""C-style batch rules, one module per op family. Importing this package registers them."""

from . import (elementwise, indexing, joining, linalg, reductions, sorting,  # noqa: F401
               statistics, views)
