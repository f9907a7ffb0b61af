"""``SymDim``: a batch-dependent dimension that still behaves as the int it was traced with.

The recorder runs every physical op twice, at the *trace* sizes (7, 11, ...) and at the
*shadow* sizes (5, 3, ...) of the symbolic batch axes. A dimension whose two values differ is a
``SymDim``: an ``int`` subclass holding the trace value, with ``.s`` its shadow value and
``.expr`` how to compute it in the graph. Arithmetic keeps it symbolic (``n * 3``, ``n - 1``),
so a rule that reads ``x.shape[bdim]`` and builds a shape from it never puts a literal batch
size into the graph. ``int()`` / ``operator.index()`` give a plain int: a literal, which the
shadow run then catches as a leak.
"""

from __future__ import annotations

from typing import Any

from .errors import ExportError

__all__ = ["SymDim", "as_pair", "is_sym"]


def as_pair(x: Any) -> tuple[Any, Any]:
    """``(trace value, shadow value)`` of an int or a SymDim."""
    if type(x) is SymDim:
        return int(x), x.s
    return x, x


def is_sym(x: Any) -> bool:
    return type(x) is SymDim


def _make(v: int, s: int, expr: tuple) -> Any:
    if v == s:
        return v  # the batch size cancelled out (n - n): a plain int
    d = SymDim(v, s, expr)
    d.like = next((x.like for x in expr[1:] if type(x) is SymDim), None)
    return d


def _binary(op: str, f):
    def forward(self, other):
        if type(other) is SymDim:
            return _make(f(int(self), int(other)), f(self.s, other.s), (op, self, other))
        if isinstance(other, int) and not isinstance(other, bool):
            other = int(other)
            return _make(f(int(self), other), f(self.s, other), (op, self, other))
        return NotImplemented

    def reflected(self, other):
        if isinstance(other, int) and not isinstance(other, bool):
            other = int(other)
            return _make(f(other, int(self)), f(other, self.s), (op, other, self))
        return NotImplemented

    return forward, reflected


def _compare(name: str, f):
    def cmp(self, other):
        if type(other) is SymDim:
            a, b = f(int(self), int(other)), f(self.s, other.s)
        elif isinstance(other, (int, float)):
            a, b = f(int(self), other), f(self.s, other)
        else:
            return NotImplemented
        if a != b:
            raise ExportError(
                f"a batch rule compared a batch-dependent size with a constant "
                f"({int(self)} {name} {other!r} during the trace): the branch it takes would "
                f"depend on the batch size, so it cannot be exported. Write the rule without "
                f"comparing the batch size.")
        return a

    return cmp


class SymDim(int):
    """A dimension that depends on the batch sizes (see the module docstring)."""

    s: int
    expr: tuple[Any, ...] | None  # None: a size the graph cannot compute
    like: Any

    def __new__(cls, v: int, s: int, expr: tuple | None):
        self = int.__new__(cls, v)
        self.s = int(s)
        self.expr = expr  # ("shape", value name, axis) | (op, a, b) with op in + - * // %
        self.like = None  # the recorded array the size was read from (see ensure_bdim)
        return self

    def __repr__(self) -> str:
        return f"SymDim({int(self)}|{self.s})"

    __hash__ = int.__hash__

    __add__, __radd__ = _binary("+", lambda a, b: a + b)
    __sub__, __rsub__ = _binary("-", lambda a, b: a - b)
    __mul__, __rmul__ = _binary("*", lambda a, b: a * b)
    __floordiv__, __rfloordiv__ = _binary("//", lambda a, b: a // b)
    __mod__, __rmod__ = _binary("%", lambda a, b: a % b)

    def __neg__(self):
        return _make(-int(self), -self.s, ("*", self, -1))

    def __pos__(self):
        return self

    def __abs__(self):
        if int(self) < 0 or self.s < 0:
            raise ExportError("abs() of a negative batch-dependent size")
        return self

    __eq__ = _compare("==", lambda a, b: a == b)
    __ne__ = _compare("!=", lambda a, b: a != b)
    __lt__ = _compare("<", lambda a, b: a < b)
    __le__ = _compare("<=", lambda a, b: a <= b)
    __gt__ = _compare(">", lambda a, b: a > b)
    __ge__ = _compare(">=", lambda a, b: a >= b)

    def __bool__(self) -> bool:
        if bool(int(self)) != bool(self.s):
            raise ExportError("truth value of a batch-dependent size that is 0 at one batch size")
        return bool(int(self))

    def __reduce__(self):
        return (int, (int(self),))
