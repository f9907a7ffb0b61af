"""Boxed fallbacks: generic code that batches a whole class of ops.

``pointwise``, ``reduction`` and ``variadic_bdims`` register an op with its class;
``ufunc_methods`` serves ``reduce`` / ``accumulate`` / ``reduceat`` / ``outer`` / ``at`` of any
ufunc; ``loop`` is the slow per-example fallback for everything else. Importing this package
fills the dispatcher's slots for them (``registry.slots``).
"""

from . import loop, ufunc_methods  # noqa: F401  (fill registry.slots)
from .pointwise import pointwise
from .reduction import reduction
from .variadic import variadic_bdims

__all__ = ["pointwise", "reduction", "variadic_bdims"]
