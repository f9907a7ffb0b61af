"""Array arguments NumPy's dispatchers leave out, reached through the ``numpy`` module.

NumPy asks ``__array_function__`` only about the arguments a function's dispatcher lists:
``np.take(a, indices)`` about ``a`` alone, ``np.full_like(a, fill_value)`` about ``a``. With a
plain ``a`` and a batched ``indices`` NumPy's own code meets the batched value, converts it
(the conversion error, and a rerun per example) or writes it into an array it made (an
error). While a vmap level is open, this module replaces the functions of ``UNDISPATCHED`` in
the ``numpy`` module (by ``conversions.intercept``, as NumPy's conversions are) with wrappers
that hand a call with a batched value in one of those parameters to the dispatcher, whose
rules take it (or the per-example loop does). As for the conversions, a name bound before the
vmap (``from numpy import take``) and NumPy's own calls are not reached.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

from . import conversions
from .config import config
from .dispatch import function_call
from .levels import current_level
from .plumbing import scan_level
from .registry import ALIASES
from .rules.ragged import is_ragged, vectorize_call
from .rules.vectorize import VECTORIZE_CALL
from .tensor import BatchedTensor

__all__ = ["UNDISPATCHED", "SEQUENCES", "ORIGINALS"]

#: ``numpy`` function name -> the parameters that take arrays which its dispatcher leaves out
#: (``tests/test_undispatched.py`` checks them against NumPy's dispatchers and documentation).
#: A function that writes into its first argument is not here: a batched value cannot go into
#: a plain target anyway (``np.fill_diagonal(plain, batched)`` converts and reruns).
UNDISPATCHED: dict[str, tuple[str, ...]] = {
    "take": ("indices",),
    "full": ("fill_value",),
    "full_like": ("fill_value",),
    "nanmean": ("where",),
    "nanstd": ("where", "mean"),
    "nanvar": ("where", "mean"),
    "select": ("default",),
    "nan_to_num": ("nan", "posinf", "neginf"),
    "interp": ("left", "right", "period"),
    "repeat": ("repeats",),
    "pad": ("pad_width", "constant_values", "end_values"),
    "linalg.pinv": ("rcond", "rtol"),
    "linalg.matrix_rank": ("tol", "rtol"),
}


#: ``numpy`` function name -> the parameter whose array NumPy converts itself where it is given
#: as a list or tuple: its dispatcher names the list, and NumPy asks only array arguments, not
#: a list's elements. With a batched element the wrapper converts the list first, as each
#: example's call converts it (``np.asarray``: ``batchtensor.conversions``), and hands NumPy's
#: function the batched array. (scikit-learn's RobustScaler: ``np.transpose(quantiles)`` of a
#: list of per-feature percentiles.) Not ``np.sum`` / ``np.min`` / ``np.max``, though SciPy's
#: ``mstats`` call them on lists too: code asks ``if func is np.max`` of those (reducers passed
#: as arguments), and a replaced name answers False there, a silently different path.
SEQUENCES: dict[str, str] = {
    "transpose": "a",
}


def _module_and_name(dotted: str) -> tuple[Any, str]:
    mod, _, name = dotted.rpartition(".")
    return (getattr(np, mod) if mod else np), name


ORIGINALS: dict[str, Any] = {d: getattr(*_module_and_name(d))
                             for d in (*UNDISPATCHED, *SEQUENCES)}


def _wrapper(name: str, params: tuple[str, ...]) -> Callable:
    original = ORIGINALS[name]
    sig = inspect.signature(original)
    positions = [(p, i) for i, p in enumerate(sig.parameters)
                 if p in params and sig.parameters[p].kind is not inspect.Parameter.KEYWORD_ONLY]
    keywords = tuple(params)

    def call(*args, **kwargs):
        # (with like=, NumPy itself hands the call to like's __array_function__)
        if current_level() is not None and config.intercept_numpy and "like" not in kwargs:
            for p, i in positions:
                if i < len(args) and type(args[i]) is BatchedTensor:
                    return function_call(original, args, kwargs, args[i])
                if i < len(args) and is_ragged(args[i]):  # (np.take(pi, x[m]): ragged.py)
                    return args[i].__array_function__(original, (), args, kwargs)
            if kwargs:
                for p in keywords:
                    v = kwargs.get(p)
                    if type(v) is BatchedTensor:
                        return function_call(original, args, kwargs, v)
                    if is_ragged(v):
                        return v.__array_function__(original, (), args, kwargs)
        return original(*args, **kwargs)

    return _dressed(call, name, f"hands a batched {' / '.join(params)} to batchtensor")


def _dressed(call: Callable, name: str, what: str) -> Callable:
    """``call`` named, documented and signed as ``numpy.<name>``, which it wraps."""
    original = ORIGINALS[name]
    call.__name__ = call.__qualname__ = name.rpartition(".")[2]
    call.__doc__ = (f"``numpy.{name}``, which {what} inside a vmap "
                    f"(batchtensor.undispatched).\n\n{original.__doc__ or ''}")
    call.__wrapped__ = original  # type: ignore[attr-defined]  # (a function's attributes)
    call.__signature__ = inspect.signature(original)  # type: ignore[attr-defined]
    return call


def _sequence_wrapper(name: str, param: str) -> Callable:
    original = ORIGINALS[name]
    sig = inspect.signature(original)
    position = list(sig.parameters).index(param)
    convert = conversions.replacement("asarray")

    def call(*args, **kwargs):
        if current_level() is not None and config.intercept_numpy:
            if position < len(args):
                a = args[position]
                if (type(a) is list or type(a) is tuple) and scan_level(a) is not None:
                    args = (*args[:position], convert(a), *args[position + 1:])
            else:
                a = kwargs.get(param)
                if (type(a) is list or type(a) is tuple) and scan_level(a) is not None:
                    kwargs = {**kwargs, param: convert(a)}
        return original(*args, **kwargs)

    return _dressed(call, name, f"converts a list or tuple of batched values (``{param}``) "
                                f"batched")


for _dotted, _params in UNDISPATCHED.items():
    _made = _wrapper(_dotted, _params)
    ALIASES[_made] = ORIGINALS[_dotted]
    conversions.intercept(*_module_and_name(_dotted), _made, by_class=True)
for _dotted, _param in SEQUENCES.items():
    _made = _sequence_wrapper(_dotted, _param)
    ALIASES[_made] = ORIGINALS[_dotted]
    conversions.intercept(*_module_and_name(_dotted), _made, by_class=True)


def _vectorize_call(self: np.vectorize, *args: Any, **kwargs: Any) -> Any:
    """``np.vectorize``'s call, which hands batched arguments to the dispatcher
    (``rules.vectorize``) while a level is open on this thread."""
    if any(is_ragged(v) for v in (*args, *kwargs.values())):  # (x[m]: rules/ragged.py)
        return vectorize_call(self, VECTORIZE_CALL, args, kwargs)
    if current_level() is not None and config.intercept_numpy and (
            scan_level(args) is not None or (kwargs and scan_level(kwargs) is not None)):
        first = next((v for v in (*args, *kwargs.values()) if type(v) is BatchedTensor), None)
        return function_call(VECTORIZE_CALL, (self, *args), kwargs, first)
    return VECTORIZE_CALL(self, *args, **kwargs)


conversions.intercept_attribute(np.vectorize, "__call__", _vectorize_call)


# ---- np.nditer: refused clearly ----------------------------------------------------------------
_NDITER = np.nditer


def _nditer(op: Any, *args: Any, **kwargs: Any) -> Any:
    """``numpy.nditer``, which refuses a batched operand inside a vmap with the conversion
    error (the function then reruns once per example): its Python loop visits one example's
    elements, each a plain value, and writes each into an array it allocates. NumPy's own
    coercion of the operand fails with an error about write-back instead."""
    if current_level() is not None and config.intercept_numpy:
        ops = op if type(op) is list or type(op) is tuple else (op,)
        if any(type(v) is BatchedTensor for v in ops):
            ops = [v._example_or_refuse("np.nditer over a batched value (a Python loop over "
                                        "one example's elements)")
                   if type(v) is BatchedTensor else v for v in ops]
            op = ops if type(op) is list or type(op) is tuple else ops[0]
    return _NDITER(op, *args, **kwargs)


_nditer.__doc__ = f"{_nditer.__doc__}\n\n{_NDITER.__doc__ or ''}"
conversions.intercept(np, "nditer", _nditer, by_class=True)
