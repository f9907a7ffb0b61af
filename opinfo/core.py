"""OpInfo and SampleInput: what the sweep needs to know about one NumPy callable.

``sample_inputs(rng, dtype)`` yields per-example ``SampleInput``s. The sweep calls it once per
example with a different ``rng``: every call must yield the same *structure* (same number of
samples, same shapes, dtypes and non-array arguments), with values drawn from ``rng``. So the
examples of one batch are different draws, never copies of one array.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

PATHS = ("rule", "boxed", "decomposition", "loop")


@dataclass
class SampleInput:
    """One per-example call: ``op(*args, **kwargs)``.

    Arrays anywhere in ``args`` / ``kwargs`` (also inside lists, tuples and dicts) are mapped by
    the sweep. ``name`` says what edge case the sample covers. ``loop_reason`` marks a sample
    the rule hands to the per-example loop on purpose, with the reason. ``vmap_error`` marks a
    sample for which vmap raises a BatchingError where the loop returns, on purpose (a
    documented limitation: no batched array can behave as the loop's results, e.g. views at a
    different offset in every example), with the reason; where the examples agree (one
    example, a broadcast input) vmap returns and is compared as usual.
    """

    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    name: str = ""
    loop_reason: str | None = None
    vmap_error: str | None = None

    def __repr__(self) -> str:
        def show(x):
            if isinstance(x, np.ndarray):
                return f"array{x.shape}:{x.dtype}"
            if isinstance(x, (list, tuple)):
                inner = ", ".join(show(v) for v in x)
                return f"[{inner}]" if isinstance(x, list) else f"({inner})"
            return repr(x)

        parts = [show(a) for a in self.args] + [f"{k}={show(v)}" for k, v in self.kwargs.items()]
        label = f" '{self.name}'" if self.name else ""
        return f"SampleInput{label}({', '.join(parts)})"


@dataclass
class OpInfo:
    """Everything the sweep needs about one op.

    - ``name``: unique id in the database (``"sum"``, ``"ndarray.sum"``, ``"getitem.mask"``).
    - ``op``: called per example and under vmap (a NumPy callable, or a small lambda for methods,
      operators and indexing).
    - ``covers``: the registry key whose dispatch path is asserted (defaults to ``op``).
    - ``path``: the expected path: "rule", "boxed", "decomposition" or "loop" (with
      ``loop_reason`` saying why there is no rule).
    - ``dtypes``: the dtypes ``sample_inputs`` is called with.
    - ``inplace``: index of the flattened array argument the op writes into, or None.
    - ``rtol`` / ``atol``: float tolerances (float32/complex64 use ``rtol32`` / ``atol32``).
    - ``skip_nested``: reason to skip the nested-vmap variant, or None.
    - ``unbatched_self``: the op is a method, so with an unbatched ``self`` NumPy's own method
      runs and may meet a batched argument it does not dispatch: a clear conversion TypeError
      is then accepted in place of the loop's result.
    - ``undispatched``: positions (among the array arguments; negative counts from the end)
      that NumPy's dispatcher ignores (``np.interp``'s ``left``/``right``, ``np.select``'s
      ``default``): when only those are batched, the same conversion TypeError is accepted.
    """

    name: str
    op: Callable
    sample_inputs: Callable[[np.random.Generator, Any], Iterable[SampleInput]]
    path: str
    dtypes: Sequence = (np.float64,)
    covers: Any = None
    loop_reason: str | None = None
    inplace: int | None = None
    rtol: float = 1e-7
    atol: float = 1e-10
    rtol32: float = 2e-4
    atol32: float = 2e-5
    skip_nested: str | None = None
    unbatched_self: bool = False
    undispatched: tuple = ()
    check_values: bool = True
    notes: str = ""

    def __post_init__(self):
        if self.path not in PATHS:
            raise ValueError(f"OpInfo {self.name}: path must be one of {PATHS}, got {self.path}")
        if self.path == "loop" and not self.loop_reason:
            raise ValueError(f"OpInfo {self.name}: a loop-path op needs a loop_reason")
        if self.covers is None:
            self.covers = self.op

    def samples(self, rng: np.random.Generator, dtype) -> list[SampleInput]:
        return list(self.sample_inputs(rng, dtype))

    def tolerances(self, dtype) -> tuple[float, float]:
        dt = np.dtype(dtype)
        if dt in (np.float32, np.complex64, np.float16):
            return self.rtol32, self.atol32
        return self.rtol, self.atol
