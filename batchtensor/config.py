"""Runtime switches: ``bt.config.fallback`` chooses what the per-example loop fallback does."""

from __future__ import annotations

_FALLBACK_MODES = ("warn", "silent", "error")


class Config:
    """Global settings of batchtensor.

    ``fallback``: what happens when an op has no batch rule, boxed kind or decomposition and
    runs through the per-example loop: ``"warn"`` (default; one ``bt.PerformanceWarning`` per
    op), ``"silent"``, or ``"error"`` (raise ``bt.BatchingError``; proves a rule served an op).

    >>> import batchtensor as bt
    >>> bt.config.fallback = "error"
    >>> bt.config.fallback = "warn"
    """

    __slots__ = ("_fallback",)

    def __init__(self) -> None:
        self._fallback = "warn"

    @property
    def fallback(self) -> str:
        return self._fallback

    @fallback.setter
    def fallback(self, mode: str) -> None:
        if mode not in _FALLBACK_MODES:
            raise ValueError(
                f"bt.config.fallback must be one of {_FALLBACK_MODES}, got {mode!r}"
            )
        self._fallback = mode

    def __repr__(self) -> str:
        return f"batchtensor.config(fallback={self._fallback!r})"


config = Config()
