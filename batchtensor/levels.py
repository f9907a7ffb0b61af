"""vmap levels: a thread-local stack of ``Level`` objects with unique, increasing ids."""

from __future__ import annotations

import itertools
import threading
from contextlib import contextmanager
from typing import Iterator

from .errors import EscapedBatchedTensorError

__all__ = ["Level", "open_level", "close_level", "current_level", "active_levels",
           "random_scope", "current_session", "RandomSession", "memory_root",
           "is_input_memory"]

_ids = itertools.count(1)  # itertools.count is atomic under the GIL: ids are unique across threads
_state = threading.local()

_RANDOMNESS = ("error", "different", "same")


def _stack() -> list:
    try:
        return _state.stack
    except AttributeError:
        _state.stack = []
        return _state.stack


class Level:
    """One vmap level: its id (higher = inner), batch size and randomness mode.

    ``offset`` is the index of this level's first example in the whole batch of its ``vmap``
    call (non-zero for the chunks of ``chunk_size`` and the per-example reruns of
    ``control_flow="loop"``): ``bt.random`` keys every example's stream by its global index, so
    that a draw does not depend on how the batch was split.

    A level is *alive* while its ``vmap_level()`` block (or ``vmap`` call) runs; a BatchedTensor
    of a closed level raises an "escaped its vmap level" error when used. (The levels users
    hold also ``unwrap`` their values: ``api.VmapLevel``.)
    """

    __slots__ = ("id", "size", "alive", "randomness", "offset", "like", "outermost",
                 "inputs", "__weakref__")

    def __init__(self, size: int | None = None, randomness: str = "error", offset: int = 0):
        if randomness not in _RANDOMNESS:
            raise ValueError(
                f"vmap: randomness must be one of {_RANDOMNESS}, got {randomness!r}"
            )
        self.id = next(_ids)
        self.size = size
        self.alive = True
        self.randomness = randomness
        self.offset = offset
        self.like = None  # a physical input (its backend is where bt.random draws)
        # The values wrapped as this level's inputs: the loop's examples of those are views of
        # the caller's memory, with its strides (``is_input_memory``).
        self.inputs: list = []

    def __repr__(self) -> str:
        state = "alive" if self.alive else "closed"
        return f"Level(id={self.id}, size={self.size}, {state})"

    def check_alive(self) -> None:
        if not self.alive:
            raise EscapedBatchedTensorError(
                f"a BatchedTensor of vmap level {self.id} was used after that level closed: it "
                f"escaped its vmap level (returned through a global, a closure, a list kept "
                f"outside, ...). Return it from the vmapped function instead, so vmap unwraps it."
            )

    def set_size(self, size: int, what: str) -> None:
        if self.size is None:
            self.size = size
        elif self.size != size:
            raise ValueError(
                f"{what} has batch size {size} but vmap level {self.id} has batch size "
                f"{self.size}; every value batched at one level must have the same batch size"
            )


def memory_root(a):
    """The object that owns ``a``'s memory: ``a.base``, followed to its end."""
    b = getattr(a, "base", None)
    while b is not None:
        a, b = b, getattr(b, "base", None)
    return a


def is_input_memory(phys, levels=None) -> bool:
    """Whether the physical array ``phys`` shares its owner with an input of one of ``levels``
    (default: every live level of this thread). A value computed inside the function owns new
    memory, as each example of it would in the loop; one that views an input does not."""
    root = memory_root(phys)
    for level in _stack() if levels is None else levels:
        for x in level.inputs:
            while hasattr(x, "_level"):  # a BatchedTensor of an outer level
                x = x._value
            if memory_root(x) is root:
                return True
    return False


def active_levels() -> tuple:
    return tuple(_stack())


def current_level() -> Level | None:
    """The innermost active level of this thread, or None."""
    stack = _stack()
    return stack[-1] if stack else None


class RandomSession:
    """Where ``bt.random`` draws are in the program, for one outermost vmap call (per thread).

    Every batch-aware draw takes the next ``tick``. Each ``vmap`` call (at any depth) rewinds the
    tick to where it started before each of its chunks / per-example reruns, so the n-th draw of
    ``f`` gets the same key however the batch is split. ``epochs`` gives each generator used in
    the session one fresh epoch, so two separate vmap calls draw different numbers.
    """

    __slots__ = ("tick", "epochs", "pinned")

    def __init__(self) -> None:
        self.tick = 0
        self.epochs: dict = {}
        self.pinned = False  # held by a random_scope: outlives the levels opened inside it


class _Scope:
    __slots__ = ("session", "start", "end")

    def __init__(self, session: RandomSession):
        self.session = session
        self.start = self.end = session.tick

    def rewind(self) -> None:
        """Start one more pass over the same examples' draws (a chunk, a rerun)."""
        s = self.session
        self.end = max(self.end, s.tick)
        s.tick = self.start


def current_session() -> RandomSession:
    """This thread's random session, created on first use; the outermost level (or the
    random_scope that pinned it) ends it."""
    session = getattr(_state, "session", None)
    if session is None:
        session = _state.session = RandomSession()
    return session


@contextmanager
def random_scope() -> Iterator[_Scope]:
    """Join (or open) this thread's random session for one vmap call whose examples may run in
    several passes (chunks, per-example reruns); it stays alive across those passes."""
    session = getattr(_state, "session", None)
    owner = session is None
    if owner:
        session = _state.session = RandomSession()
    pinned = session.pinned
    session.pinned = True
    scope = _Scope(session)
    try:
        yield scope
    finally:
        session.tick = max(scope.end, session.tick)
        session.pinned = pinned
        if owner and not _stack():
            _state.session = None


def open_level(size: int | None = None, randomness: str = "error", offset: int = 0,
               level_type: type[Level] = Level) -> Level:
    """Push a new level of ``level_type`` on this thread's stack. Pair every call with
    ``close_level`` (``bt.vmap_level`` is the context-manager form)."""
    if size is not None:
        size = int(size)
        if size < 0:
            raise ValueError(f"vmap_level: size must be >= 0, got {size}")
    level = level_type(size, randomness, offset)
    stack = _stack()
    level.outermost = not stack
    stack.append(level)
    return level


def close_level(level: Level) -> None:
    level.alive = False
    level.inputs = []  # a closed level keeps no caller's array alive
    stack = _stack()
    # Remove this level even if inner levels were left open by a generator or an error.
    if stack and stack[-1] is level:
        stack.pop()
    elif level in stack:
        del stack[stack.index(level):]
    if level.outermost:  # the random session (if bt.random made one) ends with the vmap call
        session = getattr(_state, "session", None)
        if session is not None and not session.pinned:
            _state.session = None
