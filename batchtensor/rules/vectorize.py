"""``np.vectorize`` objects called on batched values.

``np.vectorize(pyfunc, otypes=...)(x, y)`` calls ``pyfunc`` once per element of the
broadcast arguments. NumPy does not dispatch that call: ``batchtensor.undispatched`` hands it
here while a level is open (``VECTORIZE_CALL``, the class's ``__call__``). Elements are
independent, so with the batch axes in front the object's own call on the physical arrays
calls ``pyfunc`` on the same elements the loop would, once each.

One thing is per example: without ``otypes`` NumPy takes the output type from the result
of ``pyfunc`` on the *first* element, which is each example's own in the loop; a call with a
``signature`` sizes its outputs from the first call too. Those calls, and a batched argument
that ``excluded`` keeps out of the vectorisation, take the per-op loop (correct, and it warns).
SciPy's distributions set ``otypes`` on each of theirs (``vectorize(self._cdf_single,
otypes='d')``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..plumbing import unwrap, wrap
from ..registry import PER_EXAMPLE, batch_rule
from ..scalars import ARRAY_0D, Array0d
from ._helpers import align_pointwise, require

__all__ = ["VECTORIZE_CALL"]

#: the call of an ``np.vectorize`` object (``self`` first), as the dispatcher sees it
VECTORIZE_CALL = np.vectorize.__call__

# NumPy returns arrays (np.asanyarray of the elements), 0-d ones for 0-d arguments
ARRAY_0D[VECTORIZE_CALL] = Array0d.ALWAYS


def _through_the_class(vec: Any, *args: Any, **kwargs: Any) -> Any:
    """The per-op loop's call of one example: through the class attribute, so that an inner
    level's values (nested vmaps) are handed to the dispatcher again."""
    return vec(*args, **kwargs)


# (named as the call it stands for: the per-op loop's messages name it)
_through_the_class.__module__ = VECTORIZE_CALL.__module__
_through_the_class.__name__ = VECTORIZE_CALL.__name__
_through_the_class.__qualname__ = VECTORIZE_CALL.__qualname__
PER_EXAMPLE[VECTORIZE_CALL] = _through_the_class


@batch_rule(VECTORIZE_CALL, raw=True)
def vectorize_call_rule(level: Any, args: tuple, kwargs: dict) -> Any:
    vec, args = args[0], args[1:]
    require(vec.otypes and vec.signature is None,
            "np.vectorize without otypes, or with a signature (the output type and core "
            "sizes come from each example's first call)")
    excluded = vec.excluded
    names = list(kwargs)
    keys = list(range(len(args))) + names
    values = list(args) + [kwargs[n] for n in names]
    unwrapped = [unwrap(v, level) for v in values]
    require(all(b is None for k, (_, b) in zip(keys, unwrapped) if k in excluded),
            "np.vectorize with a batched argument it excludes")
    mapped = [k for k, (_, b) in zip(keys, unwrapped) if k not in excluded]
    vals, out_bdim = align_pointwise([unwrapped[keys.index(k)][0] for k in mapped],
                                     [unwrapped[keys.index(k)][1] for k in mapped])
    phys = dict(zip(mapped, vals))
    call_args = [phys.get(k, v) for k, v in zip(range(len(args)), args)]
    call_kwargs = {n: phys.get(n, kwargs[n]) for n in names}
    res = vec(*call_args, **call_kwargs)  # (an inner level's values dispatch again)
    if type(res) is tuple:
        return tuple(wrap(r, out_bdim, level) for r in res)
    return wrap(res, out_bdim, level)
