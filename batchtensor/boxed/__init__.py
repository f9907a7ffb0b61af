"""Boxed fallbacks: generic code that batches a whole class of ops.

``pointwise``, ``reduction`` and ``variadic_bdims`` register an op with its class; ``loop`` is
the slow per-example fallback for everything else.
"""

from .pointwise import pointwise
from .reduction import reduction
from .variadic import variadic_bdims

__all__ = ["pointwise", "reduction", "variadic_bdims"]
