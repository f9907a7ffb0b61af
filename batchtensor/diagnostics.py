"""Error messages that point at the user's own line.

Conversions of a BatchedTensor (``__array__``, ``float()``...) are called from C inside NumPy,
so the Python frame above them is the user's (or a NumPy Python function such as ``np.full``).
Reading that frame lets the message quote the line and recognise the most common mistake:
writing a batched value into a plain array (``out = np.zeros(3); out[0] = x``).
"""

from __future__ import annotations

import dis
import functools
import linecache
import os
import sys
from types import FrameType
from typing import Any

import numpy as np

__all__ = ["user_site", "conversion_message", "user_stacklevel", "user_line",
           "raised_by_batchtensor", "user_store", "returned_as_is", "user_instruction",
           "only_truth_tested"]

_PKG = os.path.dirname(os.path.abspath(__file__))
_NUMPY = os.path.dirname(os.path.abspath(np.__file__))
#: the opcodes of ``target[key] = value``, with the number of stack values the key takes
#: (Python 3.12 compiles ``a[i:j] = v`` to STORE_SLICE, the slice's bounds two values)
_STORES = {dis.opmap[name]: keys for name, keys in (("STORE_SUBSCR", 1), ("STORE_SLICE", 2))
           if name in dis.opmap}

_HELP = (
    "Converting would drop the batch axis (every example would see the whole batch). "
    "Common causes and fixes: np.array/np.asarray/np.ascontiguousarray on a batched value "
    "(NumPy converts without asking batchtensor: use the value as it is, x.astype(dtype) to "
    "change its dtype, or pass like=: np.asarray(x, like=x) converts each example, also a list "
    "of batched values); indexing a plain array with a batched index (a[idx] "
    "and np.take(a, idx) do not dispatch on the index: use np.take_along_axis(a, idx, axis), "
    "which does); writing a batched value into a plain "
    "array created inside the function (create it batched: np.zeros_like(x, shape=...)); a "
    "numpy.random Generator captured from outside the function given a batched parameter "
    "(pass it to the function as an argument, or make it inside, and vmap follows its draws; "
    "or use bt.random.default_rng(...)); a NumPy function that is not dispatched (see "
    "docs/semantics.md)."
)


def _frames(depth: int):
    try:
        f: FrameType | None = sys._getframe(depth + 1)
    except ValueError:
        return
    while f is not None:
        yield f
        f = f.f_back


@functools.lru_cache(maxsize=4096)  # (per code file: abspath is ~1.5 µs, a warning walks ~10)
def _inside(path: str, root: str) -> bool:
    return os.path.abspath(path).startswith(root + os.sep)


def user_site(depth: int = 1) -> tuple[Any, list]:
    """The first frame outside batchtensor and NumPy, and the NumPy frames passed through."""
    numpy_frames = []
    for f in _frames(depth):
        fn = f.f_code.co_filename
        if _inside(fn, _PKG):
            continue
        if _inside(fn, _NUMPY):
            numpy_frames.append(f)
            continue
        return f, numpy_frames
    return None, numpy_frames


def _holds_batched_sequence(f, batched_type: type) -> bool:
    """Whether an argument of NumPy function frame ``f`` is a list/tuple of batched values."""
    args = f.f_code.co_varnames[:f.f_code.co_argcount + f.f_code.co_kwonlyargcount]
    return any(type(v) in (list, tuple) and any(type(e) is batched_type for e in v)
               for v in (f.f_locals.get(a) for a in args))


def user_stacklevel() -> int:
    """``stacklevel`` for ``warnings.warn`` called in batchtensor: the first frame outside it
    and NumPy (NumPy's Python functions call others that reach batchtensor: ``np.median`` of
    a batched value calls ``np.partition``), the user's line; if none, the outermost frame."""
    level = 1
    f = sys._getframe(1)
    while f.f_back is not None and (_inside(f.f_code.co_filename, _PKG)
                                    or _inside(f.f_code.co_filename, _NUMPY)):
        f = f.f_back
        level += 1
    return level


def raised_by_batchtensor(exc: BaseException) -> bool:
    """Whether the innermost Python frame of ``exc``'s traceback is batchtensor's own (one of
    its deliberate errors), rather than the user's, a library's, or compiled code's."""
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return _inside(tb.tb_frame.f_code.co_filename, _PKG)


def user_line(exc: BaseException) -> str:
    """```code` (file:line)`` of the last frame of ``exc``'s traceback outside batchtensor and
    NumPy (the user's line that led to it), or ``""``."""
    found = ""
    tb = exc.__traceback__
    while tb is not None:
        fn = tb.tb_frame.f_code.co_filename
        if not _inside(fn, _PKG) and not _inside(fn, _NUMPY):
            line = linecache.getline(fn, tb.tb_lineno).strip()
            loc = f"{os.path.basename(fn)}:{tb.tb_lineno}"
            found = f"`{line}` ({loc})" if line else loc
        tb = tb.tb_next
    return found


def user_instruction(exc: BaseException) -> tuple | None:
    """``(code, offset)`` of the last instruction outside batchtensor and NumPy that ``exc``
    passed through (the user's call or store that raised it), or None."""
    found = None
    tb = exc.__traceback__
    while tb is not None:
        fn = tb.tb_frame.f_code.co_filename
        if not _inside(fn, _PKG) and not _inside(fn, _NUMPY):
            found = (tb.tb_frame.f_code, tb.tb_lasti)
        tb = tb.tb_next
    return found


def user_store(exc: BaseException) -> str | None:
    """```code` (file:line)`` if ``exc`` was raised by the user's own ``out[key] = value``
    (the last frame of its traceback, outside batchtensor and NumPy, storing a subscript),
    else None."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return None
    f = tb.tb_frame
    fn = f.f_code.co_filename
    if _inside(fn, _PKG) or _inside(fn, _NUMPY) or f.f_code.co_code[tb.tb_lasti] not in _STORES:
        return None
    return _where(f)


def _where(f) -> str:
    line = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
    loc = f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}"
    return f"`{line}` ({loc})" if line else loc


def _store_target_name(f) -> str | None:
    """The variable subscripted by the STORE_SUBSCR running in frame ``f`` (``out`` in
    ``out[i] = v``), read from the bytecode once per store (a rerun meets it every call)."""
    key = (f.f_code, f.f_lasti)
    if key not in _store_names:
        _store_names[key] = _subscripted_name(*key)
    return _store_names[key]


_store_names: dict = {}  # (code, offset of a STORE_SUBSCR) -> _subscripted_name's answer


def _subscripted_name(code: Any, offset: int) -> str | None:
    """The variable the store at ``offset`` (``_STORES``) subscripts: walk back over the
    key's instructions."""
    try:
        instrs = list(dis.get_instructions(code))
        i = next(k for k, ins in enumerate(instrs) if ins.offset == offset)
        need = _STORES[instrs[i].opcode]  # the key's values on the stack
        i -= 1
        while i >= 0 and need > 0:
            ins = instrs[i]
            arg = ins.arg if ins.opcode >= dis.HAVE_ARGUMENT else None
            need -= dis.stack_effect(ins.opcode, arg)
            if need == -1 and ins.opname == "LOAD_FAST_LOAD_FAST":
                return ins.argval[0]  # Python 3.13 loads `a` and `k` of `a[k]` in one
            i -= 1
    except (StopIteration, ValueError, KeyError):
        return None
    if need != 0 or i < 0:
        return None
    ins = instrs[i]
    if ins.opname == "LOAD_FAST_LOAD_FAST":
        return ins.argval[1]  # (Python 3.13: `v` and `a` of `a[0] = v` in one)
    if ins.opname in ("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_BORROW", "LOAD_NAME",
                      "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_CLOSURE"):
        return ins.argval
    return None


def _store_target(f) -> tuple[str, Any]:
    """``name (numpy.ndarray of shape (3,), float64)`` for ``name[...] = ...``, and the
    array itself (None where the target is no named array)."""
    name = _store_target_name(f)
    if name is None:
        return "", None
    obj = f.f_locals.get(name, f.f_globals.get(name))
    shape = getattr(obj, "shape", None)
    if shape is not None and hasattr(obj, "dtype"):
        return (f"{name!r} (a plain {type(obj).__module__.split('.')[0]}."
                f"{type(obj).__name__} of shape {tuple(shape)}, {obj.dtype})"), obj
    return repr(name), None


def conversion_message(what: str, batched_type: type, depth: int = 2) -> tuple[str, Any]:
    """The message for converting a value of ``batched_type`` (BatchedTensor), naming the
    user's line when it can; and, where the conversion is a write into a plain array
    (``out[i] = x``, ``np.fill_diagonal(out, x)``), that array (else None)."""
    f, numpy_frames = user_site(depth)
    numpy_funcs = [getattr(g.f_code, "co_qualname", g.f_code.co_name) for g in numpy_frames]
    if f is None:
        return f"{what} on a BatchedTensor is not allowed. {_HELP}", None
    if not numpy_funcs and f.f_code.co_code[f.f_lasti] in _STORES:
        target, array = _store_target(f)
        target = target or "the target"
        return (
            f"cannot write a batched value or index into {target} at {_where(f)}: that array "
            f"is plain (not batched), so it is shared by every example and cannot hold a "
            f"different value per example ({what} on a BatchedTensor is not allowed). Arrays "
            f"from outside the function, and those made by methods (w.copy(), w * 2), stay "
            f"plain. Create the target inside the function: np.zeros(shape) (vmap batches it at "
            f"the first batched write) or np.zeros_like(x, shape=(...), dtype=...) with x any "
            f"batched value; or collect the values and np.stack them."
        ), array
    via = f" inside numpy.{numpy_funcs[-1]}" if numpy_funcs else ""
    extra = ""
    if numpy_funcs and numpy_funcs[-1] == "full":
        extra = (" np.full(shape, value) does not dispatch on a batched value: use "
                 "np.full(shape, value, like=value) or np.full_like(value, value, shape=shape).")
    elif numpy_funcs and numpy_funcs[-1].startswith("vectorize."):
        extra = (" np.vectorize converts its arguments without dispatching: call the function "
                 "on the batched value directly (vmap already maps it over the batch), or use "
                 "np.frompyfunc(func, nin, nout)(x), a ufunc, which dispatches.")
    elif numpy_frames and _holds_batched_sequence(numpy_frames[-1], batched_type):
        extra = (f" numpy.{numpy_funcs[-1]} was given a list or tuple of batched values: NumPy "
                 f"dispatches on array arguments, not on the elements of a list. Make it one "
                 f"batched value first: np.stack(values) (or np.asarray(values, like=values[0])).")
    written = None
    if numpy_funcs and numpy_funcs[-1] in _WRITERS:  # np.fill_diagonal(a, batched): into a
        outer = numpy_frames[-1]
        written = outer.f_locals.get(outer.f_code.co_varnames[0])
    return (f"{what} on a BatchedTensor{via} is not allowed, at {_where(f)}.{extra} {_HELP}",
            written)


# NumPy's functions that write into their first argument (and do not dispatch on the value
# written): a conversion inside one is a write of a batched value into that argument.
_WRITERS = frozenset({"fill_diagonal", "place", "put", "putmask", "copyto", "put_along_axis"})


# ---- a value returned as it is -----------------------------------------------------------------
_RETURN = "RETURN_VALUE"
_after_call: dict = {}  # (code, offset of the call) -> whether its result is returned as it is


def returned_as_is(frame: Any, until: Any, callee: Any) -> bool:
    """Whether ``frame`` is calling ``callee`` itself (the builtin ``float``, ``int`` or
    ``complex``, or a method of that name: ``"item"``), not some compiled function that
    converts inside, and the value that call produces reaches ``until`` untouched: ``frame``
    and every frame between it and ``until`` return their call's result at once
    (``return float(x)``; ``return func(*args, **kwargs)``, also from inside ``with`` blocks,
    whose exit ignores the value). A frame of batchtensor's on the way, or anything else done
    with the value, says no."""
    if frame is None or not _calls(frame, callee):
        return False
    while frame is not None and frame is not until:
        code = frame.f_code
        key = (code, frame.f_lasti)
        ok = _after_call.get(key)
        if ok is None:
            ok = _after_call[key] = _returns_next(code, frame.f_lasti) \
                and not _inside(code.co_filename, _PKG)
        if not ok:
            return False
        frame = frame.f_back
    return frame is until


def only_truth_tested(frame: Any, callee: Any) -> bool:
    """Whether ``frame`` is calling the builtin ``callee`` (``len``) on one argument and uses
    the result for nothing but its truth: the next instruction jumps on it and drops it
    (``if len(x):``, ``while``, ``assert``, ``and`` / ``or`` in a condition) or negates it
    (``not len(x)``). Python 3.13 tests through TO_BOOL first."""
    if frame is None or not _calls(frame, callee):
        return False
    key = (frame.f_code, frame.f_lasti)
    found = _truth_tests.get(key)
    if found is None:
        instrs, k = _call_at(*key)
        after = [ins.opname for ins in instrs[k + 1:k + 3]] if k is not None else []
        if after[:1] == ["TO_BOOL"]:
            after = after[1:]
        found = _truth_tests[key] = bool(after) and (after[0] in _TRUTH_OPS)
    return found


_truth_tests: dict = {}  # (code, offset of the call) -> only_truth_tested's answer
#: the instructions that pop a value to test its truth, or negate it (Python 3.11-3.13)
_TRUTH_OPS = frozenset({"POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_FORWARD_IF_FALSE",
                        "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_FALSE",
                        "POP_JUMP_BACKWARD_IF_TRUE", "UNARY_NOT"})


def _call_at(code: Any, offset: int) -> tuple:
    """The code's instructions (no caches) and the index of the call running at ``offset``:
    a frame that called a Python function may stand on the call's last inline cache, and
    Python 3.11's specialised PRECALL makes the call itself (the CALL after it is the call)."""
    instrs = [i for i in dis.get_instructions(code) if i.opname != "CACHE"]
    k = max((j for j, ins in enumerate(instrs) if ins.offset <= offset), default=None)
    if k is not None and instrs[k].opname == "PRECALL" and k + 1 < len(instrs) \
            and instrs[k + 1].opname == "CALL":
        k += 1
    return instrs, k


def _calls(frame: Any, callee: Any) -> bool:
    """Whether the call running in ``frame`` calls ``callee`` as loaded by name: the builtin
    by a global name that is the builtin (``float(x)``), or a method by its name
    (``x.item()``), with no argument but the converted value. Read from the bytecode: walk
    back over the arguments' instructions to the one that loaded the callable."""
    key = (frame.f_code, frame.f_lasti)
    found = _callables.get(key, False)
    if found is False:
        found = _callables[key] = _callable_load(*key)
    if found is None:
        return False
    nargs, opname, loaded = found
    if isinstance(callee, str):  # a method: x.item()
        return nargs == 0 and opname in ("LOAD_METHOD", "LOAD_ATTR") and loaded == callee
    name = callee.__name__
    if nargs != 1 or loaded != name or opname not in ("LOAD_GLOBAL", "LOAD_NAME"):
        return False
    scopes = (frame.f_locals, frame.f_globals) if opname == "LOAD_NAME" else (frame.f_globals,)
    for scope in scopes:
        if name in scope:
            return scope[name] is callee
    return frame.f_builtins.get(name) is callee


_callables: dict = {}  # (code, offset of the call) -> _callable_load's answer


def _callable_load(code: Any, offset: int) -> tuple | None:
    """``(number of arguments, opname, name)`` of the instruction that loaded the callable of
    the call at ``offset``, or None where the bytecode does not say."""
    instrs, k = _call_at(code, offset)
    if k is None or instrs[k].opname != "CALL":
        return None
    nargs = instrs[k].arg or 0
    start = k - 1 if k and instrs[k - 1].opname == "PRECALL" else k
    j, need = start - 1, nargs
    try:
        while need > 0 and j >= 0:
            ins = instrs[j]
            need -= dis.stack_effect(ins.opcode, ins.arg if ins.opcode >= dis.HAVE_ARGUMENT
                                     else None, jump=False)
            j -= 1
    except ValueError:
        return None
    if need != 0 or j < 0:
        return None
    return nargs, instrs[j].opname, instrs[j].argval


def _returns_next(code: Any, offset: int) -> bool:
    """Whether the instructions after the one at ``offset`` return the value it leaves on the
    stack, with nothing in between but the exits of ``with`` blocks: SWAP 2, three None
    constants, a call of the exit with 2 arguments (PRECALL and CALL up to Python 3.11), the
    exit's result popped."""
    instrs, k = _call_at(code, offset)
    if k is None:
        return False
    rest = instrs[k + 1:]
    i = 0
    while i < len(rest):
        ins = rest[i]
        if ins.opname == _RETURN:
            return True
        if ins.opname == "SWAP" and ins.arg == 2 and _with_exit(rest[i + 1:i + 7]):
            i += 6 if rest[i + 4].opname == "CALL" else 7
            continue
        return False
    return False


def _with_exit(instrs: list) -> bool:
    if len(instrs) < 5 or not all(ins.opname == "LOAD_CONST" and ins.argval is None
                                  for ins in instrs[:3]):
        return False
    tail = [ins.opname for ins in instrs[3:]]
    return tail[:2] == ["CALL", "POP_TOP"] or tail[:3] == ["PRECALL", "CALL", "POP_TOP"]
