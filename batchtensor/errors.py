"""Exceptions and warnings raised by batchtensor."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


class PerformanceWarning(UserWarning):
    """An op ran through the slow per-example loop because it has no batch rule."""


class BatchingError(RuntimeError):
    """An op cannot be batched without changing its per-example result.

    Raised for data-dependent output shapes, disagreeing control flow, writes of batched values
    into unbatched arrays, and for ops that need the loop fallback while it is disabled.
    """


class ControlFlowError(BatchingError):
    """``bool()`` of a batched value whose examples disagree: a Python ``if``/``while`` on it
    would take different branches per example. ``level`` is the vmap level that disagrees
    (``vmap`` catches it for its own level and reruns the function per example, unless
    ``fallback="error"``). ``truth``: each example's truth value, where the dispatcher can
    tell (a plain array of the level's size), by which vmap splits the batch."""

    def __init__(self, message: str, level: Any = None) -> None:
        super().__init__(message)
        self.level = level
        self.truth: NDArray[np.bool_] | None = None


class DataDependentError(BatchingError):
    """A value's shape or dtype depends on the data and differs between the examples
    (``np.unique``, a boolean mask that selects a different count per example), so no batch can
    hold it. ``level`` is the vmap level whose examples differ (the dispatcher fills it in);
    ``vmap`` reruns the function per example for it, unless ``fallback="error"``."""

    def __init__(self, message: str, level: Any = None) -> None:
        super().__init__(message)
        self.level = level


class LayoutError(DataDependentError):
    """An op that reads one example's memory by its strides (``as_strided``) met a value whose
    examples lie interleaved in the batch's memory, while each example of the loop owns its
    memory in its own layout: no view of the batch gives the loop's result. ``vmap`` reruns the
    function per example for it, unless ``fallback="error"``."""


class SubclassViewError(DataDependentError):
    """A batched value viewed as an ndarray subclass (``x.view(np.ma.MaskedArray)``, as
    ``np.ma.masked_where`` and the other ``numpy.ma`` constructors do): each example of the loop
    is an instance of the subclass, with the subclass's own behaviour (a mask), which no batch
    of plain arrays holds. ``vmap`` reruns the function per example for it, unless
    ``fallback="error"``."""


class SharedWriteError(BatchingError):
    """A value or index that differs per example written into an array that is not batched at
    this level, so shared by every example: no batch can hold it, while the loop writes into
    that one array example after example. ``level`` is the vmap level whose examples differ
    (the dispatcher fills it in); ``vmap`` reruns the function per example for it, as the loop
    runs it, unless ``fallback="error"``."""

    def __init__(self, message: str, level: Any = None) -> None:
        super().__init__(message)
        self.level = level
        # the arrays written (the dispatcher fills them in)
        self.targets: tuple[Any, ...] | None = None
        _refusals.count += 1  # (refusal_mark: a lean pass that made one is not used)


class RandomOrderError(BatchingError):
    """Plain NumPy randomness (``np.random.*``, a NumPy Generator) whose numbers for each
    example only a run of the function once per example draws as the loop does: a second draw
    from one random state while the examples run together (the loop draws all of example 0's
    numbers first), a result that is no array, a seed given per example. ``level`` is the vmap
    level whose examples must run one by one; ``reason`` says why, for the rerun's warning.
    ``vmap`` reruns the function per example for it, unless ``fallback="error"``."""

    def __init__(self, message: str, level: Any = None, reason: str = "") -> None:
        super().__init__(message)
        self.level = level
        self.reason = reason or message


class EscapedBatchedTensorError(BatchingError):
    """A BatchedTensor was used after the vmap level it belongs to had closed."""


class LoopFallback(Exception):
    """Raised inside a batch rule to hand this particular call to the per-example loop.

    Rules use it for rare argument combinations they do not vectorise (the loop is slow but
    right); it never reaches the user.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def unbatched_out_error(name: str, target: str = "out=") -> SharedWriteError:
    """The error for writing a batched result into an array that is not batched at this level.

    ``target``: how the written argument reads in the message (``out=``, ``a``...)."""
    instead = " or use the returned value instead of out=" if target == "out=" else ""
    return SharedWriteError(
        f"{name}: cannot write a batched result into {target}, which is not batched at this "
        f"vmap level (it is shared by every example). Create it inside the function from a "
        f"batched value (np.empty_like(x), np.zeros_like(x, shape=...)){instead}."
    )


_last_refusal = threading.local()


class _Refusals(threading.local):
    count = 0  # refused conversions and writes on this thread (``refusal_mark``)


_refusals = _Refusals()
#: this thread's count, which ``refusal_mark`` returns (the common vmap call reads it in place)
refusal_counter = _refusals

#: NumPy's own errors (type, start of the message) that replace the error of a conversion its
#: C code attempted: ``plain.flat[i] = batched``, ``plain.reshape(batched_size)``
SWALLOWING = ((ValueError, "Error setting single item of array."),
              (TypeError, "expected a sequence of integers or a single integer, got"))


def note_refusal(level: Any, what: str) -> None:
    """A BatchedTensor of ``level`` refused to be converted (``what``): remembered on this
    thread, for NumPy's errors that replace the refusal (``SWALLOWING``)."""
    _last_refusal.value = (level, what)
    _refusals.count += 1


class LeanPassStopped(BatchingError):
    """A lean pass met what a full one might vectorise (``levels.Level.lean``); vmap runs a
    full pass instead. Never reaches the user."""


def refusal_mark() -> int:
    """How many conversions (``note_refusal``) and writes (``SharedWriteError``) were refused
    on this thread so far: a pass that sees it change met a refusal somewhere, whether or not
    an error came out of it (the function or NumPy may have caught it)."""
    return _refusals.count


def swallowed_refusal(exc: BaseException) -> tuple[Any, str] | None:
    """``(level, what)`` of the refused conversion that NumPy's ``exc`` replaced, if ``exc``
    is one of NumPy's messages that do (``SWALLOWING``) and a conversion was refused before
    it on this thread."""
    for kind, start in SWALLOWING:
        if type(exc) is kind and str(exc).startswith(start):
            refusal: tuple[Any, str] | None = getattr(_last_refusal, "value", None)
            return refusal
    return None


def rerun_reason(exc: BaseException) -> tuple[Any, str] | None:
    """``(level, reason)`` if only a per-example run of the function can give the loop's result
    past ``exc`` (a conversion of a batched value to a Python scalar or a plain array, a branch
    the examples take differently, a data-dependent shape), else None. ``level`` is the vmap
    level whose batched value caused it."""
    while type(exc) is SystemError and exc.__cause__ is not None:
        # compiled code that reads attributes before it clears the conversion's error gets
        # SystemErrors caused by it, one per attribute (scipy.signal.convolve2d)
        exc = exc.__cause__
    if isinstance(exc, ValueError) and (getattr(exc.__cause__, "batchtensor_conversion", False)
                                        or isinstance(exc.__cause__, BatchingError)):
        # NumPy wraps float(x) of out[i] = x in "setting an array element", and bool(x) of
        # out[i] = x into a bool array (a ControlFlowError where the examples disagree) too
        exc = cast(BaseException, exc.__cause__)
    if getattr(exc, "batchtensor_conversion", False):
        marked: Any = exc  # (a refused conversion's attributes: tensor's _no_conversion)
        return marked.batchtensor_level, \
            f"a batched value is converted ({marked.batchtensor_what})"
    swallowed = swallowed_refusal(exc)
    if swallowed is not None:
        return swallowed[0], f"a batched value is converted ({swallowed[1]})"
    if isinstance(exc, ControlFlowError):
        return exc.level, "the examples take different branches of a Python if/while"
    if isinstance(exc, SubclassViewError):
        return exc.level, "a batched value is viewed as an ndarray subclass (a masked array)"
    if isinstance(exc, LayoutError):
        return exc.level, "an example's memory is laid out differently in the batch (as_strided)"
    if isinstance(exc, DataDependentError):
        return exc.level, "a value's shape depends on the data and differs between examples"
    if isinstance(exc, SharedWriteError):
        return exc.level, "a batched value is written into an array shared by every example"
    if isinstance(exc, RandomOrderError):
        return exc.level, exc.reason
    return None
