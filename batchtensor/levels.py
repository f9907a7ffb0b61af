"""vmap levels: a thread-local stack of ``Level`` objects with unique, increasing ids."""

from __future__ import annotations

import itertools
import threading
from contextlib import contextmanager
from types import FrameType
from typing import Any, Callable, Iterator, Literal

import numpy as np
from numpy.typing import NDArray

from .errors import EscapedBatchedTensorError

__all__ = ["Level", "open_level", "open_lean_level", "close_level", "current_level",
           "active_levels", "random_scope", "current_session", "session_tick", "resume_session",
           "RandomSession", "memory_root", "is_input_memory", "note_write", "restore_inputs",
           "rerun_hooks", "GroupPass", "borrowed_session", "session_epochs"]

_ids = itertools.count(1)  # itertools.count is atomic under the GIL: ids are unique across threads


class _ThreadState(threading.local):
    """This thread's levels and random session. Class attributes as the defaults: a missing
    attribute of a ``threading.local`` costs an AttributeError on every read."""

    stack: list[Level] | None = None
    session: RandomSession | None = None
    pins = 0  # random_scope blocks open: the session outlives the levels opened inside them


_state = _ThreadState()

_RANDOMNESS = ("error", "different", "same")


def _stack() -> list[Level]:
    stack = _state.stack
    if stack is None:
        stack = _state.stack = []
    return stack


class Level:
    """One vmap level: its id (higher = inner), batch size and randomness mode.

    ``offset`` is the index of this level's first example in the whole batch of its ``vmap``
    call (non-zero for the chunks of ``chunk_size`` and the per-example reruns of the
    whole-function fallback): ``bt.random`` keys every example's stream by its global index, so
    that a draw does not depend on how the batch was split.

    A level is *alive* while its ``vmap_level()`` block (or ``vmap`` call) runs; a BatchedTensor
    of a closed level raises an "escaped its vmap level" error when used. (The levels users
    hold also ``unwrap`` their values: ``api.VmapLevel``.)
    """

    __slots__ = ("id", "size", "alive", "randomness", "offset", "like", "outermost",
                 "per_example", "ended_session", "inputs", "watches_writes", "saved",
                 "buffers", "pass_frame", "returned", "group_pass", "drew_numpy",
                 "caught", "lean", "thread_stack", "__weakref__")

    outermost: bool  # (set by open_level)

    def __init__(self, size: int | None = None, randomness: str = "error",
                 offset: int = 0) -> None:
        if randomness not in _RANDOMNESS:
            raise ValueError(
                f"vmap: randomness must be one of {_RANDOMNESS}, got {randomness!r}"
            )
        self.id = next(_ids)
        self.size = size
        self.alive = True
        self.randomness = randomness
        self.offset = offset
        self.like: Any = None  # a physical input (its backend is where bt.random draws)
        # True for the level of one example of a whole-function rerun: its values stand for
        # that one example, so they convert to Python scalars and plain arrays as it would
        self.per_example = False
        # the random session its closing ended (see resume_session)
        self.ended_session: RandomSession | None = None
        # The values wrapped as this level's inputs: the loop's examples of those are views of
        # the caller's memory, with its strides (``is_input_memory``).
        self.inputs: list[Any] = []
        # A first pass that a per-example rerun may follow watches for writes into its inputs'
        # memory: a rerun would apply them twice (``note_write``).
        self.watches_writes = False
        # id -> (input, its values before the first write)
        self.saved: dict[int, tuple[Any, Any]] | None = None
        # A vmap's pass makes the arrays its function creates buffers (batchtensor.buffers):
        # None where it does not, False until it made one, then True.
        self.buffers: bool | None = None
        # The frame of a vmap's pass that calls the function, while it runs, and the batched
        # values that stand-in Python scalars the function returns as they are stand for
        # (``float(x)`` returned: ``tensor.returned_scalar``).
        self.pass_frame: FrameType | None = None
        self.returned: dict[Any, Any] | None = None
        # A pass of vmap's groups that goes on with one side where its examples disagree
        # at a bool() (``GroupPass``), or None: the disagreement raises.
        self.group_pass: GroupPass | None = None
        # What a batched value of this level refused (a conversion, a bool() whose examples
        # disagree, a data-dependent shape) where the function's own code caught the error
        # (``dispatch.note_if_caught``): that code then went on along a path no example of the
        # loop takes, so the pass's result cannot be used.
        self.caught: str | None = None
        # Whether plain NumPy randomness drew here (``numpy_streams.draw``): the loop draws
        # such streams example after example, so chunks then run in order, in this thread.
        self.drew_numpy = False
        # A lean pass (``api.VmapFunction._pass``): without most of NumPy's replacements, so
        # an op the per-op loop would serve (``boxed.loop.announce_loop``) stops the pass for
        # a full one instead, which may give that op a vectorised call.
        self.lean = False
        # The level stack of the thread that opened it (``open_level``), which closes it.
        self.thread_stack: list[Level] | None = None

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


class GroupPass:
    """A pass of vmap's groups (``api.VmapFunction._split``) that goes on where its examples
    disagree at a ``bool()``, instead of stopping there: the side more examples took is the
    answer, and the others are left for passes of their own.

    The pass keeps computing every example it started with; only the ``active`` ones (indices
    into its batch; None: all) still follow the Python code it runs, and only theirs are its
    results. The examples left behind at each disagreement (``left``) answered the other way:
    from there on their values are those of a path they did not take, which no ``bool()``
    reads. Such a value may hold what NumPy's floating-point checks stop at (``log`` of a
    negative): those are watched from the first disagreement on (``floating_error``), and a
    pass that met one is not used, since the loop would have warned or raised only for an
    active example. A pass that raises is not used either (``api``: its groups run again).

    In a vmap inside another one the examples are *cells*: one per example of every level
    open around the pass and of its own (``truth_value`` flattens them, outermost first). A
    pass runs some of its vmap's examples for every outer one, so it may start with only some
    cells ``active`` (the others are computed on a path they may not take): it then watches
    NumPy's floating-point errors from the start. ``goes_on=False``: the pass answers where
    its active cells agree and stops where they do not."""

    __slots__ = ("active", "left", "floating_error", "goes_on", "_errstate")

    def __init__(self, active: NDArray[np.intp] | None = None, goes_on: bool = True) -> None:
        self.active = active
        self.left: list[NDArray[np.intp]] = []
        self.floating_error = False
        self.goes_on = goes_on
        self._errstate: tuple[Any, Any, Any] | None = None
        if active is not None:
            self._watch_floating_errors()

    def agreed(self, truth: NDArray[np.bool_]) -> bool | None:
        """``bool()`` of a value whose examples answer ``truth`` (a boolean per example): the
        answer of the examples the pass follows where they agree, else None."""
        said = truth if self.active is None else truth[self.active]
        yes = int(np.count_nonzero(said))
        return bool(yes) if yes in (0, len(said)) else None

    def follow(self, truth: NDArray[np.bool_]) -> bool | None:
        """Where the examples the pass follows disagree at ``truth``: the side more of them
        took, and the others left behind; None (the pass stops there) where that side holds
        fewer than a sixteenth of the pass's examples: going on would compute all of them
        for those few (examples that each take a path of their own would make every pass run
        to its end), or where the pass does not go on."""
        if not self.goes_on:
            return None
        active = np.arange(len(truth)) if self.active is None else self.active
        said = truth[active]
        yes = int(np.count_nonzero(said))
        side = 2 * yes >= len(said)
        if (yes if side else len(said) - yes) < max(2, len(truth) // 16):
            return None
        self.left.append(active[said != side])
        self.active = active[said == side]
        if self._errstate is None:
            self._watch_floating_errors()
        return side

    def _watch_floating_errors(self) -> None:
        """Where NumPy would warn, raise, call or log at a floating-point error, note it
        instead (it may come from an example left behind), until ``close``. The settings are
        this thread's (a context variable): the caller's come back at ``close``."""
        old = np.geterr()
        watch: dict[str, Literal["ignore", "call"]] = {
            k: "ignore" if v == "ignore" else "call" for k, v in old.items()}
        self._errstate = (old, np.geterrcall(), watch)
        np.seterr(**watch)
        np.seterrcall(self._note_floating_error)

    def _note_floating_error(self, kind: str, flag: int) -> None:
        self.floating_error = True

    def close(self) -> None:
        """The caller's floating-point settings back, unless the function set others since
        (``np.seterr`` in ``f`` lasts beyond it, as in the loop)."""
        if self._errstate is not None:
            old, call, watch = self._errstate
            if np.geterr() == watch and np.geterrcall() == self._note_floating_error:
                np.seterr(**old)
                np.seterrcall(call)


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


def note_write(level: Level, phys) -> None:
    """A write is about to go into the physical array ``phys`` of a value batched at
    ``level``: where it is the memory of one of the level's inputs, keep a copy of that input
    as it was (once per input), so that a rerun can start from the caller's values
    (``restore_inputs``)."""
    if not level.watches_writes:
        return
    root = memory_root(phys)
    for x in level.inputs:
        while hasattr(x, "_level"):  # a BatchedTensor of an outer level
            x = x._value
        if memory_root(x) is root and (level.saved is None or id(x) not in level.saved):
            if level.saved is None:
                level.saved = {}
            level.saved[id(x)] = (x, x.copy(order="K"))


def restore_inputs(level: Level) -> None:
    """Put back the caller's values of the inputs ``level``'s pass wrote into."""
    for x, before in (level.saved or {}).values():
        if getattr(x.flags, "writeable", True):  # (CuPy's flags have no writeable)
            x[...] = before
    level.saved = None


def active_levels() -> tuple[Level, ...]:
    return tuple(_stack())


def lean_levels() -> bool:
    """Whether every level open on this thread is a lean pass's (True where none is)."""
    for level in _stack():
        if not level.lean:
            return False
    return True


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

    __slots__ = ("tick", "epochs")

    def __init__(self) -> None:
        self.tick = 0
        self.epochs: dict[Any, Any] = {}


class _Scope:
    """One vmap call's hold on the random session: ``with random_scope() as scope``. While any
    scope of the thread is open, the session outlives the levels that close inside it (the
    passes over chunks, the first pass before a rerun); it is made on the first draw, as ever,
    so a vmap without ``bt.random`` creates nothing."""

    __slots__ = ("start", "end")

    start: int
    end: int

    def rewind(self) -> None:
        """Start one more pass over the same examples' draws (a chunk, a rerun)."""
        s = _state.session
        if s is not None:
            self.end = max(self.end, s.tick)
            s.tick = self.start

    def __enter__(self) -> _Scope:
        _state.pins += 1
        s = _state.session
        self.start = self.end = 0 if s is None else s.tick
        return self

    def __exit__(self, *exc) -> None:
        state = _state
        state.pins -= 1
        s = state.session
        if s is not None:
            s.tick = max(self.end, s.tick)
            if not state.pins and not _stack():
                state.session = None


def current_session() -> RandomSession:
    """This thread's random session, created on first use; the outermost level (or the last
    random_scope open around it) ends it."""
    session = _state.session
    if session is None:
        session = _state.session = RandomSession()
    return session


def session_tick() -> int:
    """Where this thread's random session is now (0 without one): where a pass starts."""
    session = _state.session
    return 0 if session is None else session.tick


#: ``hook(level)`` for each random source other than ``bt.random`` (``numpy_random``), called by
#: ``resume_session``: it puts back the states that ``level``'s first pass drew from
rerun_hooks: list[Callable[[Level], None]] = []


def resume_session(level: Level) -> None:
    """Make the session that closing ``level`` ended current again (for a rerun of the same
    examples, which must draw what the first pass drew: the same generators' epochs), and let
    the other random sources rewind to where the first pass began (``rerun_hooks``)."""
    if level.ended_session is not None and _state.session is None:
        _state.session = level.ended_session
    for hook in rerun_hooks:
        hook(level)


def rewind_session(tick: int) -> None:
    """Put this thread's random session back at ``tick`` (a pass over the same examples runs
    again in place of one that drew and whose result is not used: ``api``'s lean passes)."""
    session = _state.session
    if session is not None:
        session.tick = tick


@contextmanager
def borrowed_session(tick: int, epochs: dict[Any, Any]) -> Iterator[None]:
    """Run a chunk of a vmap call in another thread (``vmap(executor=...)``) with the random
    session of the calling thread as it was when the chunk's pass began: ``bt.random`` then
    keys the chunk's draws as that thread would (``epochs`` is shared, so a generator first
    drawn from in any chunk gets one epoch)."""
    saved = _state.session
    session = _state.session = RandomSession()
    session.tick, session.epochs = tick, epochs
    _state.pins += 1
    try:
        yield
    finally:
        _state.pins -= 1
        _state.session = saved


def session_epochs() -> dict[Any, Any]:
    """The epochs of this thread's random session (made now if there is none yet)."""
    return current_session().epochs


def random_scope() -> _Scope:
    """Join (or open) this thread's random session for one vmap call whose examples may run in
    several passes (chunks, per-example reruns); it stays alive across those passes. A class
    rather than a generator context manager: every vmap call enters one."""
    return _Scope()


def open_level(size: int | None = None, randomness: str = "error", offset: int = 0,
               level_type: type[Level] = Level) -> Level:
    """Push a new level of ``level_type`` on this thread's stack. Pair every call with
    ``close_level`` (``bt.vmap_level`` is the context-manager form)."""
    if size is not None:
        size = int(size)
        if size < 0:
            raise ValueError(f"vmap_level: size must be >= 0, got {size}")
    level = level_type(size, randomness, offset)
    stack = _state.stack
    if stack is None:
        stack = _state.stack = []
    level.outermost = not stack
    level.thread_stack = stack
    stack.append(level)
    return level


def open_lean_level(size: int, randomness: str, level_type: type[Level]
                    ) -> tuple[Level | None, int]:
    """``open_level`` for a lean pass of a vmap call (``api``), with ``session_tick()`` as it
    was before it opened (both read here: each attribute read of a thread-local costs about
    as much as a Python call); ``(None, 0)``, opening nothing, where a level open on this
    thread is not a lean pass's (``lean_levels``)."""
    state = _state
    stack = state.stack
    if stack is None:
        stack = state.stack = []
    else:
        for open_one in stack:
            if not open_one.lean:
                return None, 0
    session = state.session
    # Level.__init__'s fields, written here with a lean pass's values (``randomness`` was
    # checked by vmap): calling the class and its __init__, then setting five fields again,
    # was a third of opening the level. (tests/test_common_call.py checks that both set
    # every slot.)
    level = _new_object(level_type)
    level.id = next(_ids)
    level.size = size
    level.alive = True
    level.randomness = randomness
    level.offset = 0
    level.like = None
    level.outermost = not stack
    level.per_example = False
    level.ended_session = None
    level.inputs = []
    level.watches_writes = True  # (a lean pass may be followed by a rerun: note_write)
    level.saved = None
    level.buffers = False  # the arrays the function creates are buffers (batchtensor.buffers)
    level.pass_frame = None
    level.returned = None
    level.group_pass = None
    level.caught = None
    level.drew_numpy = False
    level.lean = True
    level.thread_stack = stack
    stack.append(level)
    return level, 0 if session is None else session.tick


_new_object = object.__new__


def close_level(level: Level) -> None:
    level.alive = False
    level.inputs = []  # a closed level keeps no caller's array alive
    state = _state
    stack = level.thread_stack  # (this thread's: open_level's, read without the thread-local)
    if stack is None:
        stack = state.stack
    # Remove this level even if inner levels were left open by a generator or an error.
    if stack:
        if stack[-1] is level:
            stack.pop()
        elif level in stack:
            del stack[stack.index(level):]
    if level.outermost and not state.pins:  # the session (if bt.random made one) ends too
        session = level.ended_session = state.session
        if session is not None:
            state.session = None
