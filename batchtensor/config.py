"""Runtime switches: ``bt.config.fallback`` chooses what the slow, per-example paths do.

Setting an attribute (``bt.config.fallback = "error"``) changes the default for every thread;
``with bt.config(fallback="error"):`` changes it for the current thread until the block ends
(nested blocks restore what they found), and so does a ``vmap(..., fallback=...)`` call for the
time it runs.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator, Literal

__all__ = ["Config", "config", "FALLBACK_MODES", "FallbackMode"]

#: what ``fallback`` may be (``Config``)
FallbackMode = Literal["warn", "silent", "error"]
FALLBACK_MODES: tuple[FallbackMode, ...] = ("warn", "silent", "error")


class _ThreadSettings(threading.local):
    """This thread's overrides (None: the global value). Class attributes as the defaults: a
    missing attribute of a ``threading.local`` costs an AttributeError on every read."""

    fallback: FallbackMode | None = None
    intercept_numpy: bool | None = None
    lean_passes: bool | None = None


class Config:
    """Settings of batchtensor.

    ``fallback``: what happens where only a per-example run gives the loop's result: an op
    with no batch rule for its arguments (the per-op loop fallback), and a function that needs
    a per-example run as a whole (a Python scalar conversion, examples that disagree at an
    ``if``, data-dependent shapes: the whole-function rerun). ``"warn"`` (default: run per
    example, one ``bt.PerformanceWarning`` per op or function), ``"silent"`` (run per example),
    or ``"error"`` (raise: proves that everything ran vectorised).

    ``intercept_numpy``: while a vmap runs on a thread, NumPy's converting functions reached
    through the ``numpy`` module (``np.asarray``, ``np.array``...) keep batched values batched
    (``batchtensor.conversions``). True by default; False leaves ``numpy`` untouched (the
    conversions then raise their clear error).

    ``lean_passes``: a function's first pass goes without the replacements that only turn
    NumPy's refusals into vectorised calls, and a refusal runs a full pass instead (cheaper
    vmap calls of functions that need none; ``docs/running_existing_code.md``). True by
    default; False runs every pass full.

    >>> import batchtensor as bt
    >>> with bt.config(fallback="error"):
    ...     bt.config.fallback
    'error'
    >>> bt.config.fallback
    'warn'
    """

    __slots__ = ("_fallback", "_intercept_numpy", "_lean_passes", "_local", "_blocks",
                 "_blocks_lock", "lean_everywhere", "intercept_everywhere")

    def __init__(self) -> None:
        self._fallback: FallbackMode = "warn"
        self._intercept_numpy = True
        self._lean_passes = True
        self._local = _ThreadSettings()
        self._blocks = 0  # ``with config(...)`` blocks open now, on any thread
        self._blocks_lock = threading.Lock()
        # The answers every thread gets while no thread has settings of its own, for the
        # common vmap call, which would otherwise ask its thread's settings (a property and a
        # thread-local read each) on every call; None while some thread has its own:
        #: ``lean_passes and fallback != "error"``
        self.lean_everywhere: bool | None = True
        #: ``intercept_numpy``
        self.intercept_everywhere: bool | None = True

    def _refresh(self) -> None:
        """(under ``_blocks_lock``)"""
        if self._blocks:
            self.lean_everywhere = self.intercept_everywhere = None
        else:
            self.lean_everywhere = self._lean_passes and self._fallback != "error"
            self.intercept_everywhere = self._intercept_numpy

    @property
    def fallback(self) -> FallbackMode:
        return self._local.fallback or self._fallback

    @fallback.setter
    def fallback(self, mode: FallbackMode) -> None:
        self._fallback = _checked_fallback(mode)
        with self._blocks_lock:
            self._refresh()

    @property
    def intercept_numpy(self) -> bool:
        value = self._local.intercept_numpy
        return self._intercept_numpy if value is None else value

    @intercept_numpy.setter
    def intercept_numpy(self, value: bool) -> None:
        self._intercept_numpy = bool(value)
        with self._blocks_lock:
            self._refresh()

    @property
    def lean_passes(self) -> bool:
        value = self._local.lean_passes
        return self._lean_passes if value is None else value

    @lean_passes.setter
    def lean_passes(self, value: bool) -> None:
        self._lean_passes = bool(value)
        with self._blocks_lock:
            self._refresh()

    @contextmanager
    def __call__(self, *, fallback: FallbackMode | None = None,
                 intercept_numpy: bool | None = None,
                 lean_passes: bool | None = None) -> Iterator[Config]:
        """Settings for the current thread, until the ``with`` block ends."""
        saved = {k: getattr(self._local, k)
                 for k in ("fallback", "intercept_numpy", "lean_passes")}
        if fallback is not None:
            fallback = _checked_fallback(fallback)
        with self._blocks_lock:
            self._blocks += 1
            self._refresh()
        try:
            if fallback is not None:
                self._local.fallback = fallback
            if intercept_numpy is not None:
                self._local.intercept_numpy = bool(intercept_numpy)
            if lean_passes is not None:
                self._local.lean_passes = bool(lean_passes)
            yield self
        finally:
            for k, v in saved.items():
                setattr(self._local, k, v)
            with self._blocks_lock:
                self._blocks -= 1
                self._refresh()

    def __repr__(self) -> str:
        return (f"batchtensor.config(fallback={self.fallback!r}, "
                f"intercept_numpy={self.intercept_numpy!r}, lean_passes={self.lean_passes!r})")


def _checked_fallback(mode: str) -> FallbackMode:
    if mode not in FALLBACK_MODES:
        raise ValueError(f"bt.config.fallback must be one of {FALLBACK_MODES}, got {mode!r}")
    return mode


config = Config()
