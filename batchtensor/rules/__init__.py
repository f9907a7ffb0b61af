"""C-style batch rules, one module per op family. Importing this package registers them."""

from . import creation, elementwise, indexing, inplace, joining, linalg, reductions, sorting, views  # noqa: F401,E501
