"""Shared fixtures."""

from __future__ import annotations

import pytest

import batchtensor as bt


def _fallback(mode):
    old = bt.config.fallback
    bt.config.fallback = mode
    try:
        yield
    finally:
        bt.config.fallback = old


@pytest.fixture
def strict():
    """Rules, boxed kinds and decompositions only: a loop fallback is an error."""
    yield from _fallback("error")


@pytest.fixture
def silent_fallback():
    """The loop fallback runs without its PerformanceWarning."""
    yield from _fallback("silent")
