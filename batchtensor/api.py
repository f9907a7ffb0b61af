"""``vmap``: map a per-example function over a batch, in one vectorised pass; and
``vmap_level``, the manual form, whose levels ``unwrap`` their values."""

from __future__ import annotations

import functools
import inspect
import os
import sys
import threading
import time
import warnings
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Literal, Sequence, cast, overload

import numpy as np
from numpy.typing import NDArray

from . import buffers, chunking, conversions, pyfloat
from .config import FALLBACK_MODES, FallbackMode, config
from .dask_arrays import has_dask_array, is_dask_array, vmap_dask
from .diagnostics import (raised_by_batchtensor, user_instruction, user_line, user_stacklevel,
                          user_store)
from .errors import (BatchingError, ControlFlowError, DataDependentError, PerformanceWarning,
                     SharedWriteError, refusal_counter, refusal_mark, rerun_reason)
from .foreign import PRIMITIVES, stand_in
from .masked import BatchedMaskedArray, is_masked_batch
from .levels import (GroupPass, Level, active_levels, borrowed_session, close_level,
                     current_level, current_session, lean_levels, open_lean_level, open_level,
                     random_scope, restore_inputs, resume_session, rewind_session,
                     session_epochs, session_tick)
from .numpy_random import stream_argument
from .random import PortableEpochs
from .pytree import (LEAF, TreeDef, broadcast_prefix, flatten, flatten_as, is_namedtuple, keystr,
                     leaf_paths, unflatten)
from .registry import RECORDERS, is_physical_type, record_mark, record_rewind
from .rules.ragged import is_ragged, returned_count
from .tensor import BatchedTensor, is_plain_array, new_batched, plain_array, take_returned

__all__ = ["vmap", "vmap_level", "VmapLevel", "VmapFunction", "FallbackVmapFunction",
           "unwrap_outputs", "ChunkSize", "Randomness"]

#: what ``vmap``'s ``chunk_size`` may be
ChunkSize = int | np.integer[Any] | Literal["auto"] | None
#: what ``vmap``'s and ``vmap_level``'s ``randomness`` may be
Randomness = Literal["error", "different", "same"]

_PY_SCALARS = (int, float, complex, bool)


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def _is_array(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "ndim") and hasattr(x, "dtype")


def _arg_names(func: Callable[..., Any], n: int) -> list[str | None]:
    """Parameter names for positional arguments (for error messages only)."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return [None] * n
    names: list[str | None] = []
    for i in range(n):
        if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY,
                                                  params[i].POSITIONAL_OR_KEYWORD):
            names.append(params[i].name)
        elif params and params[-1].kind is params[-1].VAR_POSITIONAL:
            names.append(f"*{params[-1].name}")
        else:
            names.append(None)
    return names


def _describe(func: Callable[..., Any], args: tuple[Any, ...], path: tuple[Any, ...]) -> str:
    name = _arg_names(func, len(args))[path[0]] if path else None
    where = f"args{keystr(path)}"
    return f"{where} (argument {name!r})" if name else where


def _plain_ints(spec: Any) -> Any:
    """An axis spec with NumPy integers (``in_axes=np.int64(0)``, an axis read from an array)
    made Python ints, as everywhere in NumPy an axis may be one; bools stay bools (refused)."""
    if isinstance(spec, np.integer):
        return int(spec)
    if type(spec) in (tuple, list):
        return type(spec)(_plain_ints(s) for s in spec)
    if type(spec) is dict:
        return {k: _plain_ints(v) for k, v in spec.items()}
    return spec


def _check_axes_spec(in_axes: Any, what: str) -> None:
    if isinstance(in_axes, (bool, np.bool_)):
        raise ValueError(f"vmap: {what} must be an int, None or a tuple, got the bool {in_axes}")
    if isinstance(in_axes, dict):
        raise ValueError(
            f"vmap: {what} at the top level must be an int, None, or a tuple/list with one "
            f"entry per positional argument; got a dict. Wrap it: {what}=({in_axes!r},)"
        )


class VmapFunction:
    """The callable ``vmap`` returns (``functools.wraps`` keeps the wrapped function's name)."""

    def __init__(self, func: Callable[..., Any], in_axes: Any, out_axes: Any,
                 axis_size: int | None, chunk_size: ChunkSize,
                 randomness: Randomness, fallback: FallbackMode | None = None,
                 max_memory: int | None = None, executor: Any = None,
                 progress: bool | None = None) -> None:
        functools.update_wrapper(self, func, updated=())  # not __dict__: a vmap of a vmap
        self.func = func
        self.in_axes = in_axes
        self.out_axes = out_axes
        self.axis_size = axis_size
        self.chunk_size = chunk_size
        self.randomness = randomness
        self.fallback = fallback
        self.max_memory = max_memory
        self.executor = executor
        self.progress = progress
        # The common call (arrays in; one pass or "auto" chunks) skips the general handling.
        self._common_call = chunk_size in (None, "auto") and executor is None and not progress
        # mapped ndarrays of fewer bytes than this take one pass whatever _auto_plan measures
        self._one_pass_bytes = min(_AUTO_MIN_EXAMPLE_BYTES, chunking.probe_threshold(max_memory))
        # below this, _auto_plan neither measures nor chunks where an example has fewer than
        # _AUTO_MIN_EXAMPLE_BYTES (its (None, False), answered in place)
        self._probe_bytes = chunking.probe_threshold(max_memory)
        self._module = buffers.module_of(func)  # whose names for NumPy make buffers
        self._learnt = buffers.learnt_modules(func)  # modules it calls, swapped alike
        self._floats = pyfloat.learnt_floats(self._learnt)  # modules given a float()
        # calls like one that reran per example, and what that rerun said (_Reruns)
        self._reruns: dict[Any, _Rerun] = {}
        # what chunk_size="auto" learnt of calls like an earlier one (_ChunkMemo)
        self._chunk_memos: dict[Any, _ChunkMemo] = {}
        self._key = buffers.function_key(func)  # (whether it may run lean passes: _FULL)
        # foreign.stand_in in place for a lean pass: a hashable function, not a partial
        self._hashable = type(func) is not functools.partial and _is_hashable(func)

    def __reduce__(self) -> tuple[Any, ...]:
        """A vmap pickles as its function and settings (a process pool's chunks run it there,
        in one pass each)."""
        return (type(self), (self.func, self.in_axes, self.out_axes, self.axis_size, None,
                             self.randomness, self.fallback))

    def __repr__(self) -> str:
        return f"<vmap of {getattr(self.func, '__name__', self.func)!r}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        treedef: TreeDef | None
        chunk: ChunkSize
        axes: list[Any]
        try:
            in_axes = self.in_axes
            common = _common_axes(args, in_axes)
            if common is not None and kwargs and has_dask_array(kwargs):
                common = None  # a dask array among the keyword arguments: vmap_dask, below
            if common is not None:  # arrays mapped, everything unmapped passed through whole
                axes, size, nbytes, lean, guarded, guards = common
                if self._common_call and size is not None and \
                        (self.axis_size is None or self.axis_size == size):
                    # the common call: no pytrees, no fixed chunks
                    if self.chunk_size is None or nbytes < self._one_pass_bytes or (
                            nbytes < self._probe_bytes
                            and nbytes < size * _AUTO_MIN_EXAMPLE_BYTES):
                        return self._one_pass(args, axes, kwargs, size, lean, guarded,
                                              guards)
                    chunk, measure = _auto_plan(args, axes, size, self.max_memory)
                    if not measure and (chunk is None or size <= chunk):
                        return self._one_pass(args, axes, kwargs, size, lean, guarded,
                                              guards)
                    return self._chunked(list(args), axes, None, kwargs, size, chunk,
                                         measure=measure, auto=True)
                leaves, treedef = list(args), None
            else:
                leaves, treedef = flatten(args)
                if in_axes is None or type(in_axes) is int:
                    axes = [in_axes] * len(leaves)
                else:
                    spec = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else in_axes
                    if len(spec) != len(args):
                        raise ValueError(
                            f"vmap: in_axes is a {type(in_axes).__name__} of length {len(spec)} "
                            f"but the function was called with {len(args)} positional "
                            f"arguments; give one in_axes entry per positional argument "
                            f"(keyword arguments are not mapped: pass them positionally, or "
                            f"bind them with functools.partial)"
                        )
                    axes = broadcast_prefix(spec, args, "in_axes", "args")
            if any(map(is_dask_array, leaves)) or (kwargs and has_dask_array(kwargs)):
                return vmap_dask(self, args, kwargs)  # lazy dask arrays out (docs/scale.md)
            leaves = [leaf if ax is None else _mapped_input(leaf, self.func, args, treedef, i)
                      for i, (leaf, ax) in enumerate(zip(leaves, axes))]
            size, axes = self._batch_size(leaves, axes, args, treedef)
            chunk, measure = self.chunk_size, False
            if chunk == "auto":
                chunk, measure = _auto_plan(leaves, axes, size, self.max_memory)
            if size and (self.executor is not None or self.progress) and not active_levels():
                parts = _workers(self.executor) * 2 if self.executor is not None else 20
                chunk = min(chunk or size, -(-size // parts))
            if measure or chunk is not None and size > chunk:
                auto = self.chunk_size == "auto" and self.executor is None and not self.progress
                return self._chunked(leaves, axes, treedef, kwargs, size, chunk,
                                     measure=measure, auto=auto)
            return self._run(leaves, axes, treedef, kwargs, size)
        except ValueError as e:
            # NumPy wraps float() of a BatchedTensor (out[i] = x into a float array) in
            # "setting an array element with a sequence"; our own message is the cause.
            if getattr(e.__cause__, "batchtensor_conversion", False) \
                    or isinstance(e.__cause__, BatchingError):  # (bool(): into a bool array)
                raise cast(BaseException, e.__cause__).with_traceback(e.__traceback__) from None
            raise

    def _batch_size(self, leaves: Sequence[Any], axes: list[Any], args: tuple[Any, ...],
                    treedef: TreeDef | None) -> tuple[int, list[Any]]:
        sizes = []
        norm = list(axes)
        for i, (leaf, ax) in enumerate(zip(leaves, axes)):
            if ax is None:
                continue
            if not _is_array(leaf):
                path = leaf_paths(args)[i] if treedef is not None else (i,)
                raise ValueError(
                    f"vmap: in_axes maps {_describe(self.func, args, path)} along axis {ax}, but "
                    f"it is {_a(type(leaf).__name__)}, not an array. Only arrays can be mapped; "
                    f"use None in in_axes for it"
                )
            nd = leaf.ndim
            if not -nd <= ax < nd:
                path = leaf_paths(args)[i] if treedef is not None else (i,)
                raise ValueError(
                    f"vmap: in_axes maps {_describe(self.func, args, path)} along axis {ax}, "
                    f"but it has shape {tuple(leaf.shape)}, so the axis must satisfy "
                    f"{-nd} <= axis < {nd}"
                    + (" (a 0-d array cannot be mapped)" if nd == 0 else "")
                )
            norm[i] = ax % nd
            sizes.append((i, int(leaf.shape[ax])))
        if not sizes:
            if self.axis_size is None:
                raise ValueError(
                    "vmap: no argument is mapped (every in_axes entry is None, or there are no "
                    "array arguments), so the batch size is unknown: pass axis_size=N"
                )
            return self.axis_size, norm
        distinct = {s for _, s in sizes}
        if self.axis_size is not None:
            distinct.add(self.axis_size)
        if len(distinct) > 1:
            paths = leaf_paths(args) if treedef is not None else [(j,) for j in range(len(args))]
            lines = [f"  {_describe(self.func, args, paths[i])}: axis {norm[i]} of shape "
                     f"{tuple(leaves[i].shape)} has size {s}" for i, s in sizes]
            if self.axis_size is not None:
                lines.append(f"  axis_size={self.axis_size}")
            raise ValueError("vmap got inconsistent sizes for the mapped axes:\n"
                             + "\n".join(lines))
        return sizes[0][1], norm

    def _run(self, leaves: Sequence[Any], axes: list[Any], treedef: TreeDef | None,
             kwargs: dict[str, Any], size: int, offset: int = 0,
             chunks: list[bool] | None = None, report: list[Any] | None = None) -> Any:
        """``_run_pass``, watching the unmapped arguments that no read-only view can guard.

        CuPy has no read-only arrays, so a write into an unmapped CuPy argument (``acc += 1``:
        nothing batched, so nothing reaches batchtensor) would happen once where the loop
        writes once per example. Such arguments are copied first; where the pass changed one,
        it is put back and ``f`` runs once per example, writing as the loop writes (or the
        clear error with ``fallback="error"``). An error puts them back too, as the read-only
        views leave NumPy arguments untouched."""
        snapshots = _foreign_snapshots(leaves, axes) if None in axes else ()
        if not snapshots:
            return self._run_pass(leaves, axes, treedef, kwargs, size, offset, chunks, report)
        tick = session_tick()
        report = [] if report is None else report
        try:
            out = self._run_pass(leaves, axes, treedef, kwargs, size, offset, chunks, report)
        except BaseException:
            _put_back(leaves, snapshots)
            raise
        written = [j for j, before in snapshots if not _same_values(leaves[j], before)]
        if not written:
            return out
        _put_back(leaves, snapshots)
        if report and isinstance(report[0], Level):
            restore_inputs(report[0])
            resume_session(report[0])
        leaf = leaves[written[0]]
        e = BatchingError(f"vmap({_func_name(self.func)}): the function wrote into an argument "
                          f"that is not mapped (a {type(leaf).__module__.split('.')[0]} array "
                          f"of shape {tuple(leaf.shape)}), which the loop does once per example")
        with random_scope() as scope:
            scope.start = tick
            return self._loop_for_unmapped_writes(leaves, axes, treedef, kwargs, size, offset,
                                                  e, scope, None)

    def _run_pass(self, leaves: Sequence[Any], axes: list[Any], treedef: TreeDef | None,
                  kwargs: dict[str, Any], size: int, offset: int = 0,
                  chunks: list[bool] | None = None, report: list[Any] | None = None) -> Any:
        """One vectorised pass over ``size`` examples; where only a per-example run can give
        the loop's result past some point of ``f`` (``errors.rerun_reason``), the whole
        function reruns once per example (unless ``fallback="error"``).

        A rerun must never apply a write twice. Writes into a mapped argument's memory go
        through the dispatcher, so the first pass's level watches for them and keeps a copy
        of each input before its first write (``levels.note_write``); a rerun puts those
        values back first (``levels.restore_inputs``). An argument that is not mapped reaches
        ``f`` as it is, so the first pass gets a read-only view of it: a write into it fails
        there, and ``_unmapped_writes`` takes over.

        ``chunks``: in a chunked call with a writeable argument that is not mapped, one entry
        per earlier chunk, whether it may have written into a mapped argument (this pass
        appends its own). Where none may have, a write into the unmapped argument, or a
        per-example rerun (which writes into it as the loop does), raises ``_Unchunk``: the
        loop's results that are (views of) that argument show its state after the last
        example, which no chunk's stacked results can, so ``_chunked`` runs the whole batch
        at once instead.

        ``report``: where given, gets the level of the vectorised pass and then True where
        that pass gave the result (no rerun, no groups)."""
        guarded = leaves if None not in axes else [
            leaf if ax is not None else _read_only(leaf) for leaf, ax in zip(leaves, axes)]
        tick = session_tick()  # a rerun draws from here: the numbers this pass drew
        if config.fallback == "error":
            # (watching writes: a new pass starts from the caller's values)
            first: list[Any] = [] if report is None else report
            try:
                if guarded is leaves:
                    out = self._pass(leaves, axes, treedef, kwargs, size, offset, first, tick)
                else:
                    out = _synced(self._pass(guarded, axes, treedef, kwargs, size, offset,
                                             first, tick), guarded, leaves, axes)
                first.append(True)
                return out
            except SharedWriteError as e:
                # out= / np.copyto / ufunc.at into an array a module f calls made: learnt as
                # an `out[i] = x` into it is (buffers.learn_from), else the clear error
                if first and self._learn(e):
                    return self._again(first[0], tick, leaves, axes, treedef, kwargs, size,
                                       offset, chunks)
                raise
            except (ValueError, TypeError) as e:
                if first and _is_conversion(e) and \
                        self._learn(e):
                    return self._again(first[0], tick, leaves, axes, treedef, kwargs, size,
                                       offset, chunks)
                if guarded is leaves or not _writes_into_guard(e, guarded, leaves):
                    raise
                restore_inputs(first[0])
                resume_session(first[0])
                if chunks is not None and not any(chunks):
                    raise _Unchunk(e, None) from e
                with random_scope() as scope:
                    scope.start = tick
                    return self._unmapped_writes(leaves, axes, treedef, kwargs, size, offset,
                                                 e, scope)
        memo = None
        if self._reruns and chunks is None and report is None and size:
            memo = _call_signature(leaves, axes, kwargs)
            rerun = self._reruns.get(memo)
            if rerun is not None and rerun.skips:
                rerun.skips -= 1
                _warn_rerun(self.func, rerun.reason, None, where=rerun.where,
                            detail=rerun.detail)
                with random_scope() as scope:
                    scope.start = tick
                    return self._per_example(leaves, axes, treedef, kwargs, size, offset,
                                             scope)
        first = [] if report is None else report  # this pass's level: its rerun reasons are ours
        try:
            out = _synced(self._pass(guarded, axes, treedef, kwargs, size, offset, first, tick),
                          guarded, leaves, axes)
            if chunks is not None:
                chunks.append(bool(first and first[0].saved))
            first.append(True)
            if memo is not None:
                self._reruns.pop(memo, None)  # it vectorises again: try it every call
            return out
        except BaseException as e:
            return self._recover(e, first, guarded, leaves, axes, treedef, kwargs, size,
                                 offset, chunks, report, tick)

    def _recover(self, e: BaseException, first: list[Any], guarded: Sequence[Any],
                 leaves: Sequence[Any], axes: list[Any], treedef: TreeDef | None,
                 kwargs: dict[str, Any], size: int, offset: int, chunks: list[bool] | None,
                 report: list[Any] | None, tick: int) -> Any:
        """What follows a vectorised pass that raised ``e`` (``_run_pass``): the error as it
        is, or the same examples again per example, in groups, or with what ``e`` taught.
        Called while ``e`` is being handled (a bare ``raise`` re-raises it)."""
        # (not None where it is read: mypy cannot follow ``ours`` and ``guard_hit``)
        found: Any = rerun_reason(e) or _datetime_store(e, first)
        ours = found is not None and found[0] is not None and first \
            and found[0].id >= first[0].id
        if ours and (type(e) is SharedWriteError or _is_conversion(e)) \
                and _into_shared_state(e, self.func, leaves, axes):
            # the caller's shared state: a clear error, not the loop's overwrites
            if type(e) is SharedWriteError:
                raise
            raise _shared_write(e, found[0]) from e
        guard_hit = not ours and _writes_into_guard(e, guarded, leaves)
        speculative = not (ours or guard_hit) and first and _foreign_refusal(e, first[0])
        if speculative:
            found, ours = (first[0], f"code outside NumPy's dispatch raised "
                                     f"{type(e).__name__} on a batched value or a buffer"), True
        if not (ours or guard_hit) or (ours and size == 0):
            raise
        if ours and first and (_is_conversion(e) or type(e) is SharedWriteError) and \
                self._learn(e):
            # a module the function calls converts through a name it bound at import: a
            # new pass swaps that name too
            return self._again(first[0], tick, leaves, axes, treedef, kwargs, size, offset,
                               chunks)
        if first:
            restore_inputs(first[0])  # the rerun starts from the caller's values
            resume_session(first[0])
        if chunks is not None and guard_hit and not any(chunks):
            raise _Unchunk(e, None) from e
        with random_scope() as scope:
            scope.start = tick
            scope.rewind()
            if guard_hit:
                if chunks is not None:
                    chunks.append(True)
                return self._unmapped_writes(leaves, axes, treedef, kwargs, size, offset,
                                             e, scope)
            if type(e) is ControlFlowError and e.level is first[0] and e.truth is not None:
                out = self._split(leaves, axes, treedef, kwargs, size, offset, e.truth,
                                  scope)
                if out is not _NO_SPLIT:
                    if chunks is not None:
                        chunks.append(False)  # the groups ran on copies: nothing written
                    _warn_rerun(self.func, found[1], e, split=out[1])
                    return out[0]
                scope.rewind()
            if chunks is not None:
                if not any(chunks):
                    raise _Unchunk(e, found[1]) from e
                chunks.append(True)  # the rerun writes as the loop does
            _warn_rerun(self.func, found[1], e)
            try:
                out = self._per_example(leaves, axes, treedef, kwargs, size, offset, scope)
            except _Unstackable as join_error:
                # the examples' results differ in shape (the loop's np.stack fails too):
                # the first pass's error where it was about those shapes says best where
                # they come from; where it stopped at something else (a conversion), the
                # stacking's, a BatchingError as the loop's failure calls for
                if isinstance(e, DataDependentError):
                    raise e from join_error
                raise
            if chunks is None and report is None:
                _remember_rerun(self._reruns, _call_signature(leaves, axes, kwargs),
                                found[1], e)
            return out

    def _pass(self, leaves: Sequence[Any], axes: list[Any], treedef: TreeDef | None,
              kwargs: dict[str, Any], size: int, offset: int, first: list[Any],
              tick: int) -> Any:
        """``_vectorised``, lean where ``_lean`` allows: without the replacements of
        ``conversions.LEAN_SKIPS``, nor the function's module's names for NumPy
        (``buffers``), which were most of what a vmap call costs. Without them a batched value
        that needed one meets a refusal (``errors.refusal_mark`` changes, whether the error
        came out, the function caught it or NumPy swallowed it; or the per-op loop would
        serve an op), or raises a BatchingError (examples that disagree at a ``bool()`` may
        be NumPy's writing a batched value into a plain array, which a full pass makes a
        buffer): the lean pass's result is not used, the caller's values and the draws are put
        back, and a full pass runs, as every pass of the same code will (``_FULL``). Any other
        error with no refusal before it is the function's own, which a full pass would meet
        there too: raised from the lean pass."""
        if not self._lean(leaves, kwargs):
            return self._vectorised(leaves, axes, treedef, kwargs, size, offset, first)
        mark = refusal_mark()
        logged = record_mark() if RECORDERS else None
        try:
            out = self._vectorised(leaves, axes, treedef, kwargs, size, offset, first,
                                   lean=True)
            if refusal_mark() == mark:
                return out
        except Exception as e:
            if _own_error(e, first, mark):
                raise  # (a full pass would meet it there too)
        return self._full_after_lean(leaves, axes, treedef, kwargs, size, offset, first, tick,
                                     logged)

    def _full_after_lean(self, leaves: Sequence[Any], axes: list[Any],
                         treedef: TreeDef | None, kwargs: dict[str, Any], size: int,
                         offset: int, first: list[Any], tick: int, logged: Any) -> Any:
        """A full pass in place of the lean one in ``first`` that met a refusal (``_pass``):
        from the caller's values and the same draws; every later pass of the code is full."""
        with _lock:
            _FULL[id(self._key)] = self._key
        level = first[0]
        del first[:]
        if logged is not None:
            record_rewind(logged)  # (bt.explain shows the full pass's calls only)
        restore_inputs(level)
        resume_session(level)
        rewind_session(tick)
        return self._vectorised(leaves, axes, treedef, kwargs, size, offset, first)

    def _one_pass(self, args: tuple[Any, ...], axes: list[Any], kwargs: dict[str, Any],
                  size: int, lean: bool, guarded: Sequence[Any] | None,
                  guards: list[int] | None) -> Any:
        """The common call in one pass: ``_run`` where anything needs its general handling;
        otherwise ``_run``, ``_run_pass`` and ``_pass`` for a lean pass written out in one
        frame (the same steps in the same order, the layers' checks answered once here), as
        the fixed cost of a vmap call is most of what a small batch costs. ``lean``: every
        argument is of ``_LEAN_TYPES``; ``guarded``, ``guards``: the arguments with read-only
        views of the unmapped writeable ndarrays, and where those are (``_common_axes``)."""
        if not lean or kwargs or not size or self._reruns or self._learnt or self._floats \
                or RECORDERS or id(self._key) in _FULL:
            return self._run(args, axes, None, kwargs, size)
        everywhere = config.lean_everywhere
        if not (config.lean_passes and config.fallback != "error" if everywhere is None
                else everywhere):
            return self._run(args, axes, None, kwargs, size)
        # (no argument of a backend without read-only arrays: _run's snapshots are none)
        if guarded is None:
            guarded = args
        level, tick = open_lean_level(size, self.randomness, VmapLevel)
        if level is None:  # inside a full pass: this pass is full too
            return self._run(args, axes, None, kwargs, size)
        first: list[Any] = [level]
        try:
            mark = refusal_counter.count  # (refusal_mark(), read in place)
            try:
                out = self._lean_pass(level, guarded, axes)
                lean = refusal_counter.count == mark
            except Exception as e:
                if _own_error(e, first, mark):
                    raise  # (a full pass would meet it there too)
                lean = False
            if not lean:
                out = self._full_after_lean(guarded, axes, None, kwargs, size, 0, first, tick,
                                            None)
            if guards is not None:  # (_synced in place; a view keeps its argument's dtype)
                for i in guards:
                    g, x = guarded[i], args[i]
                    if g.shape != x.shape or g.dtype is not x.dtype:
                        _synced(None, guarded, args, axes, (i,))
            return out
        except BaseException as e:
            return self._recover(e, first, guarded, args, axes, None, kwargs, size, 0, None,
                                 None, tick)

    def _lean_pass(self, level: Level, args: Sequence[Any], axes: list[Any]) -> Any:
        """``_vectorised(lean=True)`` at ``level`` (open, closed here) for ``_one_pass``'s
        call (positional ndarrays, BatchedTensors and scalars, nothing learnt, no kwargs), in
        one frame: the steps that do nothing for such a call are left out, and the common
        input and output (an ndarray in, one BatchedTensor of this level out) are wrapped and
        unwrapped in place."""
        # (open_lean_level made ``level`` with buffers on and writes watched)
        # (inside a lean pass of this thread, which holds them, the replacements stay in)
        entered = level.outermost or not conversions.always_installed
        if entered:
            conversions.enter(False)
        # (no buffers.pass_begins, and pyfloat.leave(None) after: they record what a pass
        # swapped in for the modules it learnt, which a lean pass has none of; learn_from
        # reads the record only after a full pass, which a lean pass's refusal is followed by)
        try:
            func = self.func
            func = PRIMITIVES.get(func, func) if self._hashable else stand_in(func)
            wrapped = list(args)
            inputs = level.inputs
            for i, ax in enumerate(axes):
                if ax is not None:
                    leaf = args[i]
                    if type(leaf) is np.ndarray:
                        inputs.append(leaf)
                        wrapped[i] = t = _new_object(BatchedTensor)  # (new_batched, in place)
                        t._value = leaf
                        t._bdim = ax
                        t._level = level
                    else:
                        wrapped[i] = _wrap_input(leaf, ax, level)
            level.pass_frame = sys._getframe()
            out = func(*wrapped)
            if level.caught is not None:
                raise _caught_refusal(level)
            if level.returned:  # return float(score): the batched score (take_returned)
                out = take_returned(level, out)
            out_axes = self.out_axes
            if type(out) is BatchedTensor and out._level is level and type(out_axes) is int \
                    and out._bdim == out_axes:
                out = out._value  # (batch axis already where out_axes puts it)
                # (_not_a_view_of_inputs in place; inside other vmaps ``out`` is a value of
                # their levels, and its innermost physical value is what may be an input's)
                v = out
                while type(v) is BatchedTensor:
                    v = v._value
                if type(v) is np.ndarray:
                    if v.base is not None:
                        return out.copy() if _shares_a_mapped_root(v, args, axes) else out
                    # an array that owns its memory is a view of no input; only a mapped input
                    # itself is copied
                    for x in inputs:
                        while type(x) is BatchedTensor:
                            x = x._value
                        if x is v:
                            return out.copy()
                    return out
            elif type(out) is np.ndarray and type(out_axes) is int and \
                    -1 - out.ndim <= out_axes <= out.ndim:  # (_unwrap_leaf's, in place)
                out = _broadcast_out(out, out_axes % (out.ndim + 1), level.size)
            else:
                out = unwrap_outputs(level, out, out_axes, "out_axes")
            return _not_a_view_of_inputs(out, args, axes)
        finally:
            level.pass_frame = level.returned = None
            close_level(level)
            if entered:
                conversions.leave(False)

    def _lean(self, leaves: Sequence[Any], kwargs: dict[str, Any]) -> bool:
        """Whether a pass may be lean (``_pass``): an outermost vmap call, or one inside lean
        passes only (inside a full one the swaps are in already, and a closure may hold a
        batched value of any kind, masked ones too), no pass of the same code has needed a
        full one, nothing has been learnt for it, and every
        argument is an ndarray, a BatchedTensor or a Python scalar (a masked array, a
        Generator or any other object takes full passes: what it meets without the
        replacements was not checked)."""
        if kwargs or self._learnt or self._floats or id(self._key) in _FULL or \
                not config.lean_passes:
            return False
        return lean_levels() and all(map(_LEAN_TYPES.__contains__, map(type, leaves)))

    def _learn(self, e: BaseException) -> bool:
        """Whether ``e`` taught something a new pass gets past (``pyfloat.learn_from``,
        ``buffers.learn_from``)."""
        floats = pyfloat.learn_from(e, self._floats)
        return buffers.learn_from(e, self._learnt, self._module) or floats

    def _again(self, level: Level, tick: int, leaves: Sequence[Any], axes: list[Any],
               treedef: TreeDef | None, kwargs: dict[str, Any], size: int, offset: int,
               chunks: list[bool] | None) -> Any:
        """A new vectorised pass over the same examples (``buffers.learn_from`` learnt what
        stopped the last one), from the caller's values and drawing what it drew."""
        restore_inputs(level)
        resume_session(level)
        with random_scope() as scope:
            scope.start = tick
            scope.rewind()
            return self._run(leaves, axes, treedef, kwargs, size, offset, chunks)

    def _split(self, leaves: Sequence[Any], axes: list[Any], treedef: TreeDef | None,
               kwargs: dict[str, Any], size: int, offset: int, truth: NDArray[np.bool_],
               scope: Any) -> Any:
        """The examples disagree at an ``if`` / ``while`` (``truth``: each one's answer): run
        ``f`` again on each group of examples that agree, vectorised, splitting a group again
        where its examples disagree further on, and put the groups' results back in the
        examples' order, as the loop's ``np.stack`` would (dtypes promoted alike). Each group
        gets copies of its examples (read-only where the argument is). A group's pass goes on
        past a disagreement with the side more of its examples took (``GroupPass``) and
        leaves the others as groups of their own; a pass whose results cannot be used (it
        raised, or met a floating-point error) leaves every group it made (``_left_behind``).

        Inside other vmaps the examples are cells, one example of this vmap for one of every
        level open around it (``dispatch.truth_value``): only this vmap splits, the levels
        around it see one pass. A group is then a set of cells, which a pass runs as the
        examples of this vmap they hold, for every outer example, only its own cells active
        (``GroupPass``); the results are put back cell by cell.

        A group of one example, a group whose pass stopped where only a run per example goes
        on (a conversion, a shape that depends on the data: ``_needs_run_alone``), and every
        example still waiting once splitting stops paying, run once per example instead
        (``_one_by_one``), on copies too, and join the groups' results (inside other vmaps a
        cell alone gets a pass of its own). Splitting stops
        paying past ``max(8, size // 16)`` passes, or, past 8 (or
        before, while no group of two or more has finished), once the passes took more than
        the examples that groups finished would have taken alone, plus a twentieth of what
        all of them would (the time per example of the first ``min(16, size // 8)`` run
        alone, the second half of them timed, which go with the groups). Examples that each
        take a path of their own finish no group, so they cost the rerun and a twentieth
        more; a solver whose examples stop after one of a few step counts finishes a group
        in every pass, which pays for the next ones.

        ``_NO_SPLIT`` where that cannot give the loop's result or gains nothing: randomness
        other than "error" (each example's draws are keyed by its index), a group whose pass
        raised anything else, a group that writes into an argument (the loop's
        examples are views of the caller's arrays, with their layout, which copies cannot
        stand for), results that do not line up, no group finished vectorised. Otherwise
        ``(result, groups)``. An error that an outer level's vmap handles is raised."""
        outer = active_levels()  # (this vmap's level is closed: the levels around it)
        n_out = int(np.prod([lv.size or 0 for lv in outer]))
        if self.randomness != "error" or len(truth) != n_out * size or any(
                ax is not None and not _splittable(leaf) for leaf, ax in zip(leaves, axes)):
            return _NO_SPLIT
        cells = len(truth)
        every = np.arange(cells)
        clock = time.perf_counter
        # (the cells, the result of their pass, its examples of this vmap, the pass's cells
        # that are theirs or None for all)
        groups: list[_Group] = []
        # what one example costs run alone (a few run, for a fixed cost spread over them;
        # the first half untimed: a process's first per-example run can cost tens of times
        # the next, which would let splitting take that many times too long)
        k = min(_PROBE, size // _MIN_GROUPS) if n_out == 1 else 0
        per_example = np.inf
        for probe_part in (every[:k // 2], every[k // 2:k]):
            if not len(probe_part):
                continue
            start = clock()
            probe = self._one_by_one(leaves, axes, treedef, kwargs, probe_part, offset, scope)
            if probe is _NO_SPLIT:
                return _NO_SPLIT
            per_example = (clock() - start) / len(probe_part)
            groups.append((probe_part, probe, probe_part, None))
        # (a stack: the examples that answered False go first, which leave a `while`, so that
        # groups finish, and pay for later passes, early; each with whether its pass may go on
        # past a disagreement, ``GroupPass``)
        parts = [(p, True) for p in (every[k:][truth[k:]], every[k:][~truth[k:]]) if len(p)]
        budget = max(_MIN_GROUPS, cells // _EXAMPLES_PER_GROUP)
        alone = []  # the examples to run one by one
        passes = finished = 0
        spent = 0.0
        sub = leaves
        while parts:
            part, goes_on = parts.pop()
            if (len(part) == 1 and n_out == 1) or passes >= budget or (
                    (passes >= _MIN_GROUPS or not finished)
                    and spent > per_example * (_SPLIT_SHARE * cells + finished)):
                alone.append(part)
                continue
            passes += 1
            # the examples of this vmap the cells hold, and the cells of a pass over them
            cols = np.unique(part % size) if n_out > 1 else part
            in_pass = (np.arange(n_out)[:, None] * size + cols).reshape(-1)
            active = np.searchsorted(in_pass, part) if len(part) < len(in_pass) else None
            sub = [_read_only(leaf) if ax is None else _examples(leaf, cols, ax)
                   for leaf, ax in zip(leaves, axes)]
            first: list[Level] = []
            group_pass = GroupPass(active, goes_on) if goes_on or active is not None else None
            start = clock()
            try:
                out = self._vectorised(sub, axes, treedef, kwargs, len(cols), offset, first,
                                       group_pass)
            except Exception as e:  # noqa: BLE001 -- the per-example run gives the loop's answer
                if _outer_error(e):
                    raise  # the vmap around this one handles it
                if group_pass is not None and group_pass.left:
                    # it may be an example left behind that raised: each group on its own
                    parts.extend(_left_behind(in_pass, group_pass, e, first))
                    continue
                if type(e) is not ControlFlowError or not first or e.level is not first[0] \
                        or e.truth is None:
                    if first and _needs_run_alone(e, first[0]):
                        alone.append(part)  # (each its own run: the loop's result or error)
                        continue
                    return _NO_SPLIT
                mine = in_pass if active is None else in_pass[active]
                said = e.truth if active is None else e.truth[active]
                parts.extend((p, True) for p in (mine[said], mine[~said]) if len(p))
                continue
            finally:
                spent += clock() - start
            if first[0].saved:  # it wrote into its copies of the arguments
                return _NO_SPLIT
            rows = None
            if group_pass is not None and group_pass.active is not None:
                if group_pass.floating_error:
                    if not group_pass.left:  # (from cells it did not run for: no telling)
                        return _NO_SPLIT
                    parts.extend(_left_behind(in_pass, group_pass, None, first))
                    continue
                rows = group_pass.active
                parts.extend((in_pass[g], True) for g in group_pass.left)
            done = in_pass if rows is None else in_pass[rows]
            groups.append((done, out, cols, rows))
            if len(done) > 1:  # (one example a pass finishes alone does not pay for the pass)
                finished += len(done)
        if not finished:  # every example alone: the plain per-example rerun, on the arguments
            return _NO_SPLIT
        if alone:
            rest = np.sort(np.concatenate(alone))
            cols = np.unique(rest % size) if n_out > 1 else rest
            out = self._one_by_one(leaves, axes, treedef, kwargs, cols, offset, scope)
            if out is _NO_SPLIT:
                return _NO_SPLIT
            in_pass = (np.arange(n_out)[:, None] * size + cols).reshape(-1)
            groups.append((rest, out, cols, np.searchsorted(in_pass, rest)))
        merged = _merge_groups(groups, self.out_axes, outer, cells)
        if merged is _NO_SPLIT:
            return _NO_SPLIT
        return _synced(merged, sub, leaves, axes), len(groups)

    def _one_by_one(self, leaves: Sequence[Any], axes: list[Any], treedef: TreeDef | None,
                    kwargs: dict[str, Any], part: NDArray[np.intp], offset: int, scope: Any) -> Any:
        """The examples ``part`` run once per example, on copies of them, their results
        stacked; ``_NO_SPLIT`` where one raises or writes into its copy (the per-example rerun
        on the caller's arrays then does what the loop does)."""
        sub = [_read_only(leaf) if ax is None else _examples(leaf, part, ax)
               for leaf, ax in zip(leaves, axes)]
        before = [None if ax is None else _innermost(leaf).copy()
                  for leaf, ax in zip(sub, axes)]
        try:
            out = self._per_example(sub, axes, treedef, kwargs, len(part), offset, scope)
        except Exception as e:  # noqa: BLE001 -- the per-example run raises the loop's error
            if _outer_error(e):
                raise  # the vmap around this one handles it
            return _NO_SPLIT
        if not all(b is None or _same(b, _innermost(leaf)) for b, leaf in zip(before, sub)):
            return _NO_SPLIT
        return out

    def _unmapped_writes(self, leaves: Sequence[Any], axes: list[Any], treedef: TreeDef | None,
                         kwargs: dict[str, Any], size: int, offset: int, e: BaseException,
                         scope: Any) -> Any:
        """``f`` writes into an argument that is not mapped, which the loop does once per
        example: ``a += 1`` accumulates, and each example reads what the ones before it wrote.

        The pass runs on copies of the array arguments. A value that differs per example
        written into an unmapped one is the caller's shared state: the clear error. Otherwise,
        with at most one example, that pass did what the loop does. With more, a second pass
        on the copies as the first left them tells whether the writes are idempotent (the same
        state, the same results: the loop's later examples see what its first one saw); if so
        the copies' state goes into the arguments and the first pass's results are returned.
        Anything else runs ``f`` once per example on the arguments themselves, writing as the
        loop writes (``fallback="error"`` raises instead)."""
        arrays = [j for j, leaf in enumerate(leaves) if type(leaf) is np.ndarray]
        if size and (any(type(leaf) is BatchedTensor for leaf in leaves)
                     or _aliased(leaves, arrays, self.func)):
            return self._loop_for_unmapped_writes(leaves, axes, treedef, kwargs, size, offset,
                                                  e, scope, None)
        state = list(leaves)
        for j in arrays:
            state[j] = _same_layout_copy(leaves[j])
            state[j].flags.writeable = leaves[j].flags.writeable  # a read-only one refuses too
        try:
            out = self._trial(state, axes, treedef, kwargs, size, offset, e)
            if size > 1:
                before = [state[j].copy(order="K") for j in arrays]
                scope.rewind()
                again = self._trial(state, axes, treedef, kwargs, size, offset, e)
                if not (all(map(_same, before, (state[j] for j in arrays)))
                        and _same_tree(out, again)):
                    return self._loop_for_unmapped_writes(leaves, axes, treedef, kwargs, size,
                                                          offset, e, scope, None)
        except SharedWriteError:
            raise
        except BaseException as trial:
            if size == 0:
                raise
            return self._loop_for_unmapped_writes(leaves, axes, treedef, kwargs, size, offset,
                                                  e, scope, trial)
        if any(state[j].shape != leaves[j].shape or state[j].dtype != leaves[j].dtype
               for j in arrays):  # a.shape = ... set on a copy: the loop sets it on a
            return self._loop_for_unmapped_writes(leaves, axes, treedef, kwargs, size, offset,
                                                  e, scope, None)
        if size:  # with no example the loop writes nothing
            for j in arrays:
                if not _same(state[j], leaves[j]):
                    np.copyto(leaves[j], state[j])
        return out

    def _trial(self, state: list[Any], axes: list[Any], treedef: TreeDef | None,
               kwargs: dict[str, Any], size: int, offset: int, guard_error: BaseException) -> Any:
        """A pass on the copies ``state``; a value that differs per example written into an
        array the caller shares raises the clear error, as a SharedWriteError: a
        SharedWriteError into one, the conversion ``TypeError`` of ``out[i] = x`` into one, or
        a conversion at the very call or store that met the read-only view in the first pass
        (``guard_error``: ``a.fill(v)`` converts ``v`` to write it into ``a``)."""
        first: list[Level] = []
        try:
            return self._vectorised(state, axes, treedef, kwargs, size, offset, first)
        except BaseException as trial:
            found = rerun_reason(trial)
            if found is not None and first and found[0] is not None \
                    and found[0].id >= first[0].id \
                    and (_into_shared_state(trial, self.func, state, axes)
                         or (_is_conversion(trial)
                             and user_instruction(trial) is not None
                             and user_instruction(trial) == user_instruction(guard_error))):
                if type(trial) is SharedWriteError:
                    raise
                raise _shared_write(trial, found[0]) from trial
            raise

    def _loop_for_unmapped_writes(self, leaves: Sequence[Any], axes: list[Any],
                                  treedef: TreeDef | None, kwargs: dict[str, Any], size: int,
                                  offset: int, e: BaseException, scope: Any,
                                  trial: BaseException | None) -> Any:
        if config.fallback == "error":
            if trial is not None:
                raise trial
            raise BatchingError(
                f"vmap({_func_name(self.func)}): the function writes into an argument that is "
                f"not mapped ({_first_line(e)}), which the loop does once per example, each "
                f"example reading what the ones before it wrote; only a run once per example "
                f"does that, and fallback='error' forbids it. Copy the argument before writing "
                f"into it (a = a.copy()), or map it") from e
        scope.rewind()
        _warn_rerun(self.func, "the function writes into an argument that is not mapped, as "
                               "the loop does once per example", e)
        return self._per_example(leaves, axes, treedef, kwargs, size, offset, scope)

    def _vectorised(self, leaves: Sequence[Any], axes: list[Any], treedef: TreeDef | None,
                    kwargs: dict[str, Any], size: int, offset: int,
                    first: list[Level] | None = None, group_pass: GroupPass | None = None,
                    lean: bool = False) -> Any:
        level = open_level(size, self.randomness, offset, VmapLevel)
        level.buffers = False  # the arrays f creates are buffers (batchtensor.buffers)
        level.group_pass = group_pass
        level.lean = lean
        full = not lean
        conversions.enter(full)
        func = stand_in(self.func)  # bt.vmap(scipy.signal.lfilter): its Primitive
        module = None
        if full:
            inner = self.func
            while isinstance(inner, VmapFunction):  # (a vmap of a vmap of one)
                inner = inner.func
            # a Primitive's rule or per-op loop calls the function on plain arrays: its
            # module's names for NumPy stay NumPy's there
            if stand_in(inner) is inner:
                module = buffers.enter(self._module)
        buffers.pass_begins(self._learnt)
        learnt = [buffers.enter(g, whole=False) for g in self._learnt] if self._learnt else ()
        floats = pyfloat.enter(self._floats) if self._floats else None
        if first is not None:
            level.watches_writes = True
            first.append(level)
        try:
            # a NumPy Generator / RandomState passed in draws as the loop draws from it
            wrapped = [stream_argument(leaf) if ax is None else _wrap_input(leaf, ax, level)
                       for leaf, ax in zip(leaves, axes)]
            args = wrapped if treedef is None else unflatten(treedef, wrapped)
            if kwargs:
                kwargs = {k: stream_argument(v) for k, v in kwargs.items()}
            level.pass_frame = sys._getframe()
            out = func(*args, **kwargs)
            if level.caught is not None:
                raise _caught_refusal(level)
            if level.returned:  # return float(score): the batched score (take_returned)
                out = take_returned(level, out)
            return _not_a_view_of_inputs(unwrap_outputs(level, out, self.out_axes, "out_axes"),
                                         leaves, axes)
        finally:
            level.pass_frame = level.returned = None
            if group_pass is not None:
                group_pass.close()
            close_level(level)
            pyfloat.leave(floats)
            for g in learnt:
                buffers.leave(g, whole=False)
            if module is not None:
                buffers.leave(module)
            conversions.leave(full)

    def _per_example(self, leaves: Sequence[Any], axes: list[Any], treedef: TreeDef | None,
                     kwargs: dict[str, Any], size: int, offset: int, scope: Any) -> Any:
        """``f`` once per example, on the example's own (writeable) views of the arguments, and
        the results stacked as the loop stacks them. The examples run at one level of size
        one (``Level.per_example``), its offset moved to each example in turn: ``bt.random``
        draws example i's numbers there, and its values convert to Python scalars as that
        example would. Nothing else is batched, so ``f`` runs on plain arrays, as fast as the
        loop (``bench/rerun.py``)."""
        level = open_level(1, self.randomness, offset, VmapLevel)
        # (no conversions.enter(): a value of this level converts itself, as its one example)
        level.per_example = True
        level.like = _backend(leaves, axes)
        # the examples themselves, as the loop's `for x in xs` gives them (views; NumPy scalars
        # of a 1-d argument); a value of an outer level stays batched there
        mapped = [iter(leaf if ax == 0 else np.moveaxis(leaf, ax, 0))
                  for leaf, ax in zip(leaves, axes) if ax is not None]
        # a NumPy Generator passed in: the same stand-in as in the first pass (a vmap inside
        # f that captures it draws from it per example)
        example = [stream_argument(leaf) if ax is None else leaf
                   for leaf, ax in zip(leaves, axes)]
        if kwargs:
            kwargs = {k: stream_argument(v) for k, v in kwargs.items()}
        slots = [j for j, ax in enumerate(axes) if ax is not None]
        func, outs, rewind, nd = self.func, [], scope.rewind, np.ndarray
        # each example draws bt.random's numbers from where the first began: rewound only
        # where the last one drew (a thread-local look-up per example is ~5% of a tiny f)
        rewind()
        session, start = current_session(), scope.start
        try:
            if len(example) == len(mapped) == 1 and treedef is None and not kwargs:  # f(x)
                for i, x in enumerate(mapped[0], offset):
                    if session.tick != start:
                        rewind()
                    level.offset = i
                    out = func(x)
                    outs.append(out if type(out) is nd or isinstance(out, _SCALARS)
                                else _the_examples(out, level))
            else:
                for i in range(size):
                    if session.tick != start:
                        rewind()
                    level.offset = offset + i
                    for j, it in zip(slots, mapped):
                        example[j] = next(it)
                    out = func(*(example if treedef is None else unflatten(treedef, example)),
                               **kwargs)
                    outs.append(out if type(out) is nd or isinstance(out, _SCALARS)
                                else _the_examples(out, level))
        finally:
            close_level(level)
        return self._stack(outs)

    def _stack(self, outs: list[Any]) -> Any:
        """The examples' results stacked along their out axes, as the loop's ``np.stack``;
        an ``out_axes=None`` output is the first example's."""
        kinds = set(map(type, outs))  # (one look per type, not per example: B may be 10^4)
        td: TreeDef | None
        if type(self.out_axes) is int and all(t is np.ndarray or issubclass(t, _SCALARS)
                                              for t in kinds):
            outs = [outs]  # one array or scalar per example (the common case): no pytree walk
            first, td = [outs[0][0]], None
            columns = outs
        else:
            first, td = flatten(outs[0])
            columns = self._columns(outs, first, td)
        oaxes = _leaf_out_axes(self.out_axes, outs[0], len(first))
        stacked = []
        for col, ax in zip(columns, oaxes):
            if ax is None:
                stacked.append(col[0])
                continue
            # masked examples keep their masks (np.stack keeps only the data; the data is the
            # same either way): docs/semantics.md, "Masked arrays"
            masked = any(issubclass(t, np.ma.MaskedArray) or t is BatchedMaskedArray
                         for t in (kinds if columns is outs else set(map(type, col))))
            stack = np.ma.stack if masked else np.stack
            try:
                stacked.append(stack(col, axis=ax))
            except ValueError as e:
                raise _unstackable(col, "") from e
        return stacked[0] if td is None else unflatten(td, stacked)

    @staticmethod
    def _columns(outs: list[Any], first: list[Any], td: TreeDef) -> list[list[Any]]:
        """The examples' output leaves, one list per leaf (a dict's by key, whatever order
        each example built it in, as the loop's results are read by key)."""
        columns = [[x] for x in first]
        for out in outs[1:]:
            leaves = flatten_as(out, td)
            if leaves is None:
                raise _Unstackable("vmap: the examples return results of different structures "
                                   "(other containers, keys or numbers of arrays), so they "
                                   "cannot be stacked, as in the per-example loop")
            for col, x in zip(columns, leaves):
                col.append(x)
        return columns

    def _chunked(self, leaves: Sequence[Any], axes: list[Any], treedef: TreeDef | None,
                 kwargs: dict[str, Any], size: int, chunk: int | np.integer[Any] | None,
                 offset: int = 0, measure: bool = False, auto: bool = False) -> Any:
        """Run ``[start, start + chunk)`` slices one after the other and join the results
        (``chunking.Joined``: written into results allocated once for the whole batch).

        ``measure``: the first chunk is a few examples (``chunking.probe_examples``) whose
        peak allocation sizes the others to ``max_memory`` (``chunk``, where given, caps them:
        the cache-sized chunks of ``_auto_plan``, or an executor's share). With an executor,
        the chunks after the first run there, where the first shows that they may
        (``_parallel_ok``).

        ``auto``: the plan is ``chunk_size="auto"``'s. Its measurement (``_ChunkMemo``) also
        tells whether ``chunk``'s cache-sized chunks can pay: not where an example's
        intermediates take less than its inputs (a LAPACK-bound function, whose time is one
        batched call the chunks only cut into passes), and calls like this one reuse it, with
        no chunk measured again.

        Every pass rewinds the random session, so ``bt.random`` keys example i the same way
        whatever the split (``offset`` is the global index of ``leaves``' first example)."""
        memo = self._chunk_memo(leaves, axes, kwargs) if auto and measure else None
        budget = chunking.budget_of(self.max_memory) if measure else 0
        own = sum(leaf.nbytes for leaf, ax in zip(leaves, axes) if ax is not None)
        if memo is not None and measure and memo.peak is not None:
            # sized from the last measurement of such a call
            measure = False
            planned = chunking.planned_chunk(memo.peak, memo.examples,
                                             int(memo.output_per_example * size), budget,
                                             memo.floor)
            chunk = planned if chunk is None or not memo.cache else min(planned, int(chunk))
            if chunk >= size:
                return self._run(leaves, axes, treedef, kwargs, size, offset)
        chunks: list[bool] | None = [] if any(  # see _run
            ax is None and type(leaf) is np.ndarray and leaf.flags.writeable
            for leaf, ax in zip(leaves, axes)) else None
        joined = chunking.Joined(size, lambda r, n: _leaf_out_axes(self.out_axes, r, n),
                                 flatten, flatten_as, unflatten, _concatenate,
                                 lambda: _Unstackable(_DIFFERENT_STRUCTURES))
        step = int(chunk) if chunk is not None else size
        if measure:
            step = min(step, chunking.probe_examples(size, own / size, budget))
        probe = step
        executor = self.executor if not active_levels() else None
        bar = chunking.ProgressBar(self.progress, size, _func_name(self.func))
        began = time.perf_counter()
        measuring = measure
        with random_scope() as scope:
            try:
                start = 0
                while start < size:
                    stop = min(start + step, size)
                    scope.rewind()
                    report: list[Any] = []
                    try:
                        if measuring:
                            with chunking.PeakMeter() as meter:
                                out = self._run(self._part(leaves, axes, start, stop), axes,
                                                treedef, kwargs, stop - start, offset + start,
                                                chunks, report)
                        else:
                            out = self._run(self._part(leaves, axes, start, stop), axes,
                                            treedef, kwargs, stop - start, offset + start,
                                            chunks, report)
                    except _Unchunk as unchunk:
                        scope.rewind()
                        return self._unchunked(leaves, axes, treedef, kwargs, size, offset,
                                               scope, *unchunk.args)
                    joined.add(out, start, stop)
                    bar.update(stop, stop - start, time.perf_counter() - began)
                    if measuring:
                        step = chunking.planned_chunk(meter.peak, stop - start,
                                                      joined.output_bytes(stop), budget, probe)
                        if memo is not None:
                            memo.measured(meter.peak, stop - start,
                                          joined.output_bytes(stop) / size, probe, own / size)
                            if not memo.cache:
                                chunk = None
                        if executor is not None:  # its chunks run at once: the budget shared
                            step = max(probe, step // _workers(executor))
                        if chunk is not None:
                            step = min(step, int(chunk))
                        # the second chunk too, unless it is the last (nothing to size)
                        measuring = start == 0 and stop + step < size
                    start = stop
                    if executor is not None and start < size:
                        if _parallel_ok(report, chunks, leaves, axes):
                            self._on_executor(executor, leaves, axes, treedef, kwargs, size,
                                              offset, start, step, scope, joined, bar, began)
                            break
                        executor = None  # the chunks run here, in order, as the loop would
            finally:
                bar.close()
        return joined.result()

    def _chunk_memo(self, leaves: Sequence[Any], axes: list[Any],
                    kwargs: dict[str, Any]) -> _ChunkMemo:
        """The ``_ChunkMemo`` of calls like this one (made now if there is none)."""
        key = _call_signature(leaves, axes, kwargs)
        memo = self._chunk_memos.get(key)
        if memo is None:
            if len(self._chunk_memos) >= _CHUNK_MEMOS:  # (the oldest goes)
                _forget_oldest(self._chunk_memos)
            memo = self._chunk_memos[key] = _ChunkMemo()
        return memo

    @staticmethod
    def _part(leaves: Sequence[Any], axes: list[Any], start: int, stop: int) -> list[Any]:
        return [leaf if ax is None else leaf[(slice(None),) * ax + (slice(start, stop),)]
                for leaf, ax in zip(leaves, axes)]

    def _unchunked(self, leaves: Sequence[Any], axes: list[Any], treedef: TreeDef | None,
                   kwargs: dict[str, Any], size: int, offset: int, scope: Any,
                   error: BaseException, reason: str | None) -> Any:
        """A chunk raised ``_Unchunk`` (see ``_run``): the whole batch at once instead."""
        if reason is None:  # a write into the unmapped argument
            return self._run(leaves, axes, treedef, kwargs, size, offset)
        _warn_rerun(self.func, reason, error)
        try:  # every example, the results stacked once all have run
            return self._per_example(leaves, axes, treedef, kwargs, size, offset, scope)
        except _Unstackable as join_error:  # as in _run
            if isinstance(error, DataDependentError):
                raise error from join_error
            raise

    def _on_executor(self, executor: Any, leaves: Sequence[Any], axes: list[Any],
                     treedef: TreeDef | None, kwargs: dict[str, Any], size: int, offset: int,
                     start: int, step: int, scope: Any, joined: chunking.Joined,
                     bar: chunking.ProgressBar, began: float) -> None:
        """The chunks from ``start`` on, run on ``executor``, their results joined in order.

        Each runs in one ``_run`` with this thread's settings (``bt.config``) and random
        session as they were at the call, so it gives what it gives here. A chunk that
        writes into its mapped arguments in another process sends them back, and they are
        copied into the caller's arrays. An error names the chunk's examples and is raised as
        it is (its type kept)."""
        unmapped = [_read_only(leaf) if ax is None else leaf for leaf, ax in zip(leaves, axes)]
        settings = (config.fallback, config.intercept_numpy, scope.start, session_epochs(),
                    os.getpid())
        futures = []
        for a, b in chunking.chunk_ranges(start, size, step):
            part = self._part(unmapped, axes, a, b)
            futures.append((a, b, executor.submit(_run_chunk, self, part, axes, treedef, kwargs,
                                                  b - a, offset + a, settings)))
        for n, (a, b, future) in enumerate(futures):
            try:
                out, written = future.result()
            except BaseException as e:
                for _, _, later in futures[n + 1:]:
                    later.cancel()
                e.add_note(f"(in vmap({_func_name(self.func)})'s chunk of examples {a} to "
                           f"{b - 1} of {size}, run on {type(executor).__name__})")
                raise
            if written is not None:
                for leaf, ax, back in zip(leaves, axes, written):
                    if back is not None:
                        np.copyto(leaf[(slice(None),) * ax + (slice(a, b),)], back)
            joined.add(out, a, b)
            bar.update(b, b - a, time.perf_counter() - began)



_DIFFERENT_STRUCTURES = ("vmap: the parts of the batch return results of different structures "
                         "(other containers, keys or numbers of arrays), so they cannot be "
                         "joined, as in the per-example loop")


def _workers(executor: Any) -> int:
    """How many chunks ``executor`` runs at once (its ``max_workers``, else the CPUs)."""
    n = getattr(executor, "_max_workers", None)
    return n if isinstance(n, int) and n > 0 else (os.cpu_count() or 1)


def _parallel_ok(report: list[Any], chunks: list[bool] | None, leaves: Sequence[Any],
                 axes: list[Any]) -> bool:
    """Whether the chunks after one that left ``report`` may run on an executor, out of
    order: that chunk ran vectorised, wrote into no argument (the loop's later examples read
    what earlier ones wrote) and drew no plain NumPy randomness (the loop draws a stream
    example after example)."""
    if len(report) < 2 or report[-1] is not True:
        return False
    level = report[0]
    return not (level.saved or level.drew_numpy or (chunks and chunks[-1]))


def _run_chunk(vfunc: VmapFunction, part: list[Any], axes: list[Any], treedef: TreeDef | None,
               kwargs: dict[str, Any], size: int, offset: int,
               settings: tuple[Any, ...]) -> tuple[Any, list[Any] | None]:
    """One chunk of ``vfunc``'s call on an executor's worker (``VmapFunction._on_executor``):
    the result, and in another process the mapped arguments where the chunk wrote into them."""
    fallback, intercept, tick, epochs, pid = settings
    if os.getpid() != pid:  # copies of the caller's generators, or a module's own imported here
        epochs = PortableEpochs(epochs)
    report: list[Any] = []
    with config(fallback=fallback, intercept_numpy=intercept), borrowed_session(tick, epochs):
        out = vfunc._run(part, axes, treedef, kwargs, size, offset, None, report)
    if os.getpid() != pid and report and report[0].saved:
        return out, [None if ax is None else leaf for leaf, ax in zip(part, axes)]
    return out, None


#: what one example may return that is a leaf of no level (a rerun's examples return them as is)
_SCALARS = (np.generic, float, int, complex)


def _the_examples(out: Any, level: Level) -> Any:
    """``out`` of one example of a rerun, each value batched at its level (a ``bt.random``
    draw) replaced by the one example it holds."""
    leaves, td = flatten(out)
    if not any(type(x) is BatchedTensor and x._level is level for x in leaves):
        return out
    return unflatten(td, [x._value[(slice(None),) * x._bdim + (0,)]
                          if type(x) is BatchedTensor and x._level is level else x
                          for x in leaves])


def _backend(leaves: Sequence[Any], axes: list[Any]) -> Any:
    """A mapped argument that is not a NumPy array (CuPy, the ONNX recorder), or the one an
    outer level draws on: where bt.random draws (``Level.like``)."""
    for leaf, ax in zip(leaves, axes):
        if ax is None:
            continue
        if type(leaf) is BatchedTensor:
            if leaf._level.like is not None:
                return leaf._level.like
        elif type(leaf) is not np.ndarray:
            return leaf
    return None


class FallbackVmapFunction(VmapFunction):
    """A vmap with its own ``fallback=``: the setting holds on this thread while it runs (also
    for the per-op loop fallback inside). A subclass, so that the common vmap pays nothing."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with config(fallback=self.fallback):
            return super().__call__(*args, **kwargs)


class _Unstackable(DataDependentError):
    """The results of the parts of a batch differ in shape (``_concatenate``)."""


def _concatenate(parts: list[Any], axis: int) -> Any:
    """The parts of one output along its out axis; parts whose other dimensions differ are the
    per-example results' shapes differing, which the loop's np.stack refuses too."""
    try:
        return np.concatenate(parts, axis=axis)
    except ValueError as e:
        raise _unstackable(parts, " with the batch axis") from e


def _unstackable(parts: list[Any], which: str) -> _Unstackable:
    shapes = ", ".join(map(str, sorted({tuple(np.shape(p)) for p in parts})))
    return _Unstackable(f"vmap: the examples' results have different shapes ({shapes}{which}), "
                        f"so they cannot be stacked into one array, as the per-example loop's "
                        f"np.stack cannot stack them")


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"


def _into_shared_state(e: BaseException, func: Any, leaves: Sequence[Any], axes: list[Any]) -> bool:
    """Whether the write ``e`` refused goes into an array the caller shares with the function:
    an argument passed unmapped (``in_axes=None``, or batched at an outer level only), or one
    the function reaches through its closure, its defaults, its object's attributes or its
    module's globals. The loop would overwrite it example after example, which is almost
    always a mistake: it gets the clear error. An array made during the call (by library code
    vmap cannot see) is per example, as in the loop: that write reruns the function."""
    targets = [t for t in map(_innermost, _written(e)) if _is_physical(t)]
    if not targets:
        return False
    shared = [_innermost(x) for x, ax in zip(leaves, axes) if ax is None] + _reachable(func)
    arrays = [a for a in map(_innermost, shared) if _is_physical(a)]
    return any(_overlap(t, a) for t in targets for a in arrays)


def _is_physical(x: Any) -> bool:
    """A NumPy array (or a subclass's), a CuPy array or another registered backend's."""
    return isinstance(x, np.ndarray) or is_physical_type(type(x))


def _reachable(func: Any, named_only: bool = False) -> list[Any]:
    """What ``func`` reaches without arguments: its closure, its defaults, its object's
    attributes, its module's globals (``named_only``: those its own code names), through
    partials and bound methods."""
    shared: list[Any] = []
    seen = 0
    while func is not None and seen < 4:  # through partials and bound methods
        seen += 1
        shared += [c.cell_contents for c in getattr(func, "__closure__", None) or ()
                   if c.cell_contents is not None]
        shared += list(getattr(func, "__defaults__", None) or ())
        owner = getattr(func, "__self__", None)
        if owner is not None:
            shared += list(getattr(owner, "__dict__", {}).values())
        g = getattr(func, "__globals__", None)
        if type(g) is dict:
            code = getattr(func, "__code__", None)
            shared += [g[n] for n in getattr(code, "co_names", ()) if n in g] if named_only \
                else list(g.values())
        shared += list(getattr(func, "args", ()) or ())
        func = getattr(func, "func", None) or getattr(func, "__func__", None)
    return shared


def _aliased(leaves: Sequence[Any], arrays: list[int], func: Any) -> bool:
    """Whether copies of the array arguments would lose a link the loop keeps: two arguments
    sharing memory, or one sharing memory with an array ``f`` reaches by itself."""
    plain = [leaves[j] for j in arrays]
    for i, a in enumerate(plain):
        if any(np.may_share_memory(a, b) for b in plain[i + 1:]):
            return True
    reached = [a for a in map(_innermost, _reachable(func, named_only=True))
               if isinstance(a, np.ndarray)]
    return any(np.may_share_memory(a, b) for a in plain for b in reached)


def _same(a: Any, b: Any) -> bool:
    """Bit for bit the same value (NaNs in the same places, -0.0 apart from 0.0)."""
    if type(a) is np.ndarray or type(b) is np.ndarray:
        return type(a) is type(b) and a.shape == b.shape and a.dtype == b.dtype \
            and a.dtype != object and a.tobytes() == b.tobytes()
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b) or (a != a and b != b)
    except Exception:  # noqa: BLE001 -- anything not comparable counts as different
        return False


def _same_tree(a: Any, b: Any) -> bool:
    la, ta = flatten(a)
    lb, tb = flatten(b)
    return ta == tb and len(la) == len(lb) and all(map(_same, la, lb))


def _is_conversion(e: BaseException) -> bool:
    """A conversion of a batched value refused (NumPy may wrap it in a ValueError)."""
    return cast(bool, getattr(e, "batchtensor_conversion", False)  # (set True, or unset)
                or getattr(e.__cause__, "batchtensor_conversion", False))


_NO_SPLIT = object()  # VmapFunction._split: the batch cannot be split into groups


class _Unchunk(Exception):
    """A chunk of a chunked call writes into an argument that is not mapped, or reruns per
    example (``_run``): ``(the error, the rerun's reason or None for the write)``."""
#: group passes before the split gives way to a run per example: a pass costs about what a
#: few examples cost in the loop, so a large batch affords more (a convergence loop whose
#: examples stop after one of k step counts takes 2(k - 1) passes)
_MIN_GROUPS, _EXAMPLES_PER_GROUP = 8, 16
_SPLIT_SHARE = 0.05  # of the examples' time alone, what passes may take unpaid (_split)
_PROBE = 16  # examples run alone to time one (_split)


def _examples(leaf: Any, part: NDArray[np.intp], ax: int) -> Any:
    """A copy of the examples ``part`` of ``leaf`` along ``ax``, read-only where it is (a
    value of a vmap around this one: its examples along that axis of each of its own)."""
    if type(leaf) is BatchedTensor:
        b = leaf._bdim
        return new_batched(_examples(leaf._value, part, ax + (ax >= b)), b, leaf._level)
    taken = np.take(leaf, part, axis=ax)
    taken.flags.writeable = leaf.flags.writeable
    return taken


def _splittable(leaf: Any) -> bool:
    """A mapped argument whose examples ``_examples`` copies: a NumPy array, or a value of
    the vmaps around this one that holds one."""
    return is_plain_array(_innermost(leaf))


def _outer_error(e: BaseException) -> bool:
    """Whether ``e`` is for a level still open once this vmap's pass closed: a vmap around
    this one handles it (its examples disagree, a value of its converts), which a run of this
    vmap's groups or examples would meet again."""
    found = rerun_reason(e)
    return found is not None and found[0] is not None \
        and any(found[0] is lv for lv in active_levels())


def _leaf_out_axes(out_axes: Any, tree: Any, n: int) -> list[Any]:
    """``out_axes`` for each of the ``n`` leaves of one example's output ``tree``."""
    if out_axes is None or isinstance(out_axes, int):
        return [out_axes] * n
    return broadcast_prefix(out_axes, tree, "out_axes", "output")


def _left_behind(part: NDArray[np.intp], group_pass: GroupPass, e: BaseException | None,
                 first: list[Level]) -> list[tuple[NDArray[np.intp], bool]]:
    """The groups of ``part`` (the cells of a pass) that a ``GroupPass`` whose results cannot
    be used had split it into, each to run on its own: the ones it left behind, and the one it
    still followed, split by ``e`` where that is its examples' disagreement (else on a pass
    that stops where its examples disagree)."""
    groups = [(part[g], True) for g in group_pass.left]
    active = cast(NDArray[np.intp], group_pass.active)  # (a pass that went on: it is set)
    if type(e) is ControlFlowError and first and e.level is first[0] and e.truth is not None:
        said = e.truth[active]
        return groups + [(part[g], True) for g in (active[said], active[~said]) if len(g)]
    return groups + [(part[active], False)]


#: one group of ``VmapFunction._split``: its cells, the result of its pass, the examples of the
#: vmap that pass ran, and which of the pass's cells (one per outer example and example run,
#: outermost first) are the group's (None: all)
_Group = tuple[NDArray[np.intp], Any, NDArray[np.intp], NDArray[np.intp] | None]


def _merge_groups(groups: list[_Group], out_axes: Any, outer: Sequence[Level],
                  cells: int) -> Any:
    """The groups' results (each batched along ``out_axes`` over the examples its pass ran,
    and at the ``outer`` levels) as one result over every cell, in their order;
    ``_NO_SPLIT`` where the groups' results do not line up (another structure, a leaf that is
    no array, other shapes)."""
    outs = [g[1] for g in groups]
    sizes = tuple(cast(int, lv.size) for lv in outer)
    n_out = int(np.prod(sizes))
    size = cells // n_out
    first = min(range(len(groups)), key=lambda k: groups[k][0].min())  # holds example 0
    td = flatten(outs[first])[1]  # (its structure, a dict's key order: the loop's result's)
    flat = []
    for o in outs:
        leaves = flatten_as(o, td)  # (a dict's values by key: the groups may order keys apart)
        if leaves is None:
            return _NO_SPLIT
        flat.append(leaves)
    axes = _leaf_out_axes(out_axes, outs[first], len(flat[0]))
    merged = []
    for j, ax in enumerate(axes):
        column = [f[j] for f in flat]
        if ax is None and n_out == 1:  # the loop keeps the first example's
            merged.append(column[first])
            continue
        maybe = [_cells_front(c, ax, outer) for c in column]
        fronts = [f for f in maybe if f is not None]
        if len(fronts) < len(maybe) or any(f.shape[1:] != fronts[0].shape[1:] for f in fronts):
            return _NO_SPLIT
        rest = fronts[0].shape[1:]
        if ax is None:  # each outer example keeps its first example's
            out = np.empty((n_out,) + rest, np.result_type(*fronts))
            for (done, _, cols, rows), f in zip(groups, fronts):
                firsts = done[done % size == 0] // size
                out[firsts] = f[firsts]
            merged.append(_wrap_outer(out.reshape(sizes + rest), outer))
            continue
        out = np.empty((cells,) + rest, np.result_type(*fronts))
        for (done, _, cols, rows), f in zip(groups, fronts):
            out[done] = f if rows is None else f[rows]
        out = _wrap_outer(out.reshape(sizes + (size,) + rest), outer)
        merged.append(np.moveaxis(out, 0, ax % (len(rest) + 1)))
    return unflatten(td, merged)


def _cells_front(c: Any, ax: int | None, outer: Sequence[Level]) -> NDArray[Any] | None:
    """One result leaf of a group's pass as a plain array of a row per cell of that pass
    (outer examples first; ``ax`` None: a row per outer example); None where it is no
    array."""
    for lv in reversed(outer):
        c = unwrap_outputs(lv, c, 0)
    if type(c) is not np.ndarray:
        return None
    a: NDArray[Any] = c
    m = len(outer)
    if ax is not None:
        a = np.moveaxis(a, m + ax % (a.ndim - m), m)
        m += 1
    return a.reshape((int(np.prod(a.shape[:m])),) + a.shape[m:])


def _wrap_outer(out: NDArray[Any], outer: Sequence[Level]) -> Any:
    """``out``, whose leading axes are the ``outer`` levels' examples, batched at them."""
    value: Any = out
    for lv in outer:
        value = new_batched(value, 0, lv)
    return value


def _shared_write(e: BaseException, level: Level) -> SharedWriteError:
    """The conversion error ``e`` of a write into shared state, as a SharedWriteError."""
    cause = e if getattr(e, "batchtensor_conversion", False) else e.__cause__ or e
    return SharedWriteError(str(cause), level)


def _written(e: BaseException) -> tuple[Any, ...]:
    """The arrays a refused write went into: a SharedWriteError's targets, or the plain array
    of ``out[i] = x`` whose conversion of a batched ``x`` failed (NumPy may wrap that error)."""
    if type(e) is SharedWriteError:
        return e.targets or ()
    for err in (e, e.__cause__):
        target = getattr(err, "batchtensor_target", None)
        if target is not None:
            return (target,)
    return ()


def _overlap(a: NDArray[Any], b: NDArray[Any]) -> bool:
    """Whether ``a`` and ``b`` share memory; where the exact answer is too costly, yes."""
    if type(a) is not type(b) and not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return False  # (different backends: different memories)
    if not np.may_share_memory(a, b):
        return False
    if not isinstance(a, np.ndarray):
        return True  # (another backend's bounds: may share is shares)
    try:
        # (NumPy's stubs allow -1 and 0 only, the function any bound; the stubs differ between
        # NumPy versions: unused-ignore)
        shared = np.shares_memory(a, b, max_work=10_000)  # type: ignore[arg-type, unused-ignore]
        return bool(shared)
    except np.exceptions.TooHardError:
        return True


def _innermost(x: Any) -> Any:
    while type(x) is BatchedTensor:
        x = x._value
    return x


def _foreign_refusal(e: BaseException, level: Level) -> bool | None:
    """Whether ``e`` may be code that needs a real ndarray meeting a batched value or a buffer
    (``buffers``), where it would have converted a plain one: a compiled function with a typed
    argument, ``set(x)`` of a value whose elements cannot be hashed, a check of ``type(x)``.
    A TypeError not raised by batchtensor (or, where the pass made buffers, a ValueError) is
    taken so: the rerun per example gives the loop's result, or the loop's own error."""
    t = type(e)
    return (t is TypeError or (t is ValueError and level.buffers)) \
        and not raised_by_batchtensor(e)


def _needs_run_alone(e: BaseException, level: Level) -> bool:
    """Whether a group's pass at ``level`` stopped where only a run per example goes on (a
    conversion, a shape that depends on the data, a branch of no known truth), as the first
    pass reruns there: that group's examples then run one by one beside the other groups. A
    write into shared state is not among them (the clear error, not the loop's overwrites)."""
    if type(e) is SharedWriteError:
        return False
    found = rerun_reason(e)
    if found is not None:
        return found[0] is level
    return bool(_foreign_refusal(e, level))


def _same_layout_copy(a: NDArray[Any]) -> NDArray[Any]:
    """A copy of ``a`` with its strides (a gap between elements kept as a gap): NumPy's checks
    that read the layout (``np.dot``'s C-contiguous ``out=``) answer on it as on ``a``."""
    if a.flags.c_contiguous or a.flags.f_contiguous or a.dtype.hasobject:
        return a.copy(order="K")  # (objects cannot live in a byte buffer: compact, as before)
    lo, hi = np.lib.array_utils.byte_bounds(a)
    buffer = np.empty(hi - lo, dtype=np.uint8)
    copy: NDArray[Any] = np.ndarray(a.shape, a.dtype, buffer=buffer, strides=a.strides,
                                    offset=a.__array_interface__["data"][0] - lo)
    copy[...] = a
    return copy


def _writes_into_guard(e: BaseException, guarded: Sequence[Any], leaves: Sequence[Any]) -> bool:
    """Whether ``e`` may be a write into one of the read-only views of unmapped arguments the
    first pass gave ``f`` (NumPy's "read-only" / "writeable" errors, when one was made)."""
    if not isinstance(e, (ValueError, TypeError)) or all(g is x for g, x in zip(guarded, leaves)):
        return False
    text = str(e)
    return "read-only" in text or "writeable" in text or "not acceptable" in text  # np.dot


def _own_error(e: BaseException, first: list[Any], mark: int) -> bool:
    """Whether ``e``, raised by a lean pass whose level is ``first[0]`` and which began at
    refusal mark ``mark``, is the function's own error (no level opened, or no refusal met,
    caught or raised by batchtensor), not what a full pass would get past."""
    return not first or (refusal_mark() == mark and first[0].caught is None
                         and not _from_batchtensor(e))


def _from_batchtensor(e: BaseException) -> bool:
    """Whether ``e`` is a BatchingError, or an error raised over one (NumPy's "setting an array
    element with a sequence" over the ``bool()`` of a batched value written into a plain
    array)."""
    for _ in range(4):
        if e is None:
            return False
        if isinstance(e, BatchingError):
            return True
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
    return False


#: id(function_key) -> the key, of the code whose lean pass refused something (``_pass``)
_FULL: dict[int, Any] = {}
_lock = threading.Lock()
_LEAN_TYPES = frozenset((np.ndarray, BatchedTensor, bool, int, float, complex, str, type(None)))


class _ChunkMemo:
    """What ``chunk_size="auto"`` measured of a call with one ``_call_signature``
    (``VmapFunction._chunked``): the last measured chunk's peak allocation (``peak`` bytes for
    ``examples`` examples, results of ``output_per_example`` bytes, chunks of at least
    ``floor``), so that a later call sizes its chunks without measuring again; and ``cache``:
    whether an example's intermediates take at least its inputs' bytes, the case the
    cache-sized chunks of ``_auto_plan`` are for (an elementwise chain's temporaries, each the
    size of the inputs). Where they take less, the time goes into a kernel that works on its
    own copy of each example (LAPACK: NumPy's batched ``solve`` measured 1.1 KiB per 128 KiB
    example), and cutting its one batched call into cache-sized passes made it 6-13% slower
    (bench/NOTES.md)."""

    __slots__ = ("peak", "examples", "output_per_example", "floor", "cache")

    def __init__(self) -> None:
        self.peak: int | None = None
        self.examples = self.floor = 1
        self.output_per_example = 0.0
        self.cache = True

    def measured(self, peak: int, examples: int, output_per_example: float, floor: int,
                 input_per_example: float) -> None:
        self.peak, self.examples = peak, examples
        self.output_per_example, self.floor = output_per_example, floor
        self.cache = peak / examples >= input_per_example


_CHUNK_MEMOS = 64  # signatures remembered per vmapped function


class _Rerun:
    """A call that reran per example (``VmapFunction._reruns``, keyed by ``_call_signature``):
    what its warning said, and how many calls like it rerun straight away.

    Reruns of a function mostly repeat (a ``float()`` of a batched value, a write into an
    array made by a method): its next calls skip the vectorised pass that would stop where the
    last one did, which cost up to a third of a small function's loop. Every skip reruns,
    which is the loop, so nothing it returns can differ; the cost of a wrong guess (a call
    that would have vectorised) is bounded by trying again after 1, 3, 7, then every 16 calls,
    and one call that vectorises forgets the rerun."""

    __slots__ = ("reason", "where", "detail", "streak", "skips")

    def __init__(self, reason: str, where: str, detail: str) -> None:
        self.reason, self.where, self.detail = reason, where, detail
        self.streak = self.skips = 0


def _remember_rerun(reruns: dict[Any, _Rerun], signature: Any, reason: str,
                    e: BaseException) -> None:
    rerun = reruns.get(signature)
    if rerun is None:
        if len(reruns) >= 64:  # (calls of many signatures: forget the oldest)
            _forget_oldest(reruns)
        rerun = reruns[signature] = _Rerun(reason, user_line(e), _first_line(e)[:300])
    rerun.streak += 1
    rerun.skips = min(2 ** rerun.streak - 1, 15)


def _forget_oldest(memos: dict[Any, Any]) -> None:
    """Drop ``memos``' oldest entry; nothing where another thread changes the dict meanwhile
    (a vmapped function may be called on several threads at once)."""
    try:
        del memos[next(iter(memos))]
    except (RuntimeError, KeyError, StopIteration):
        pass


def _call_signature(leaves: Sequence[Any], axes: list[Any], kwargs: dict[str, Any]) -> Any:
    """What a call's path through ``f`` may depend on besides its values: each argument's type,
    axis, dtype and example shape, and the value of every Python scalar, string or None among
    the arguments (a flag); the batch size leaves it out, so chunks and calls of other batch
    sizes share it."""
    return (tuple(map(_leaf_signature, leaves, axes)),
            tuple((k, _leaf_signature(v, None)) for k, v in kwargs.items()) if kwargs else ())


def _leaf_signature(leaf: Any, ax: Any) -> Any:
    t = type(leaf)
    if t in (bool, int, float, complex, str, type(None)):
        return t, leaf
    shape = getattr(leaf, "shape", None)
    if type(shape) is tuple and ax is not None:
        shape = shape[:ax] + shape[ax + 1:]
    return t, ax, getattr(leaf, "dtype", None), shape, id(leaf) if shape is None else None


def _warn_rerun(func: Any, reason: str, e: BaseException | None, split: int = 0,
                where: str = "", detail: str = "") -> None:
    """One PerformanceWarning naming the function, the reason and the user's line. Its text
    is the same on every call from one place, so Python's warning filters show it once per
    place by default. ``split``: the function ran again on that many groups of examples that
    agree, each vectorised, instead of once per example. ``e`` None: a call that reran
    straight away (``_Rerun``), with the ``where`` and ``detail`` of the rerun it repeats."""
    if e is not None:
        where, detail = user_line(e), _first_line(e)[:300]
    for log in RECORDERS:  # bt.explain's
        if type(log) is not list:
            log.whole_function(_func_name(func), reason, where, split)
    if config.fallback != "warn":
        return
    how = ("runs again on each group of examples that take the same branches, vectorised, "
           "and the groups' results are put back in order: correct, a few passes" if split else
           "reruns once per example and the results are stacked: correct, as slow as a Python "
           "loop")
    warnings.warn(
        f"vmap({_func_name(func)}): {reason}{f' at {where}' if where else ''}, so the function "
        f"{how}. ({detail}) Pass fallback='error' to raise instead, or "
        f"fallback='silent' to hide this warning.",
        PerformanceWarning, stacklevel=user_stacklevel())


_new_object = object.__new__


def _common_axes(args: tuple[Any, ...], in_axes: Any
                 ) -> tuple[list[Any], int | None, int, bool, list[Any] | None,
                            list[int] | None] | None:
    """``(axes, size, nbytes, lean, guarded, guards)`` when every mapped argument is an
    ndarray or a BatchedTensor (the common call); None sends the call down the general path
    (pytrees, checks, messages).

    ``axes``: one per argument, made non-negative; ``size``: the batch size, None if an axis is
    out of range, the sizes differ or nothing is mapped (the general path raises the error);
    ``nbytes``: the mapped arguments' bytes times the outer levels' examples each of their
    values stands for (as ``_auto_plan`` weighs them); ``lean``: every argument is of
    ``_LEAN_TYPES``; ``guarded``: the arguments as a lean pass gets them, each unmapped
    writeable ndarray a read-only view of it (made here, in the loop that finds them: a
    function with several unmapped weights pays for one walk over them, not two), or None
    where there is none; ``guards``: the positions of those views, or None."""
    n = len(args)
    if type(in_axes) is int:
        axes = [in_axes] * n
    elif type(in_axes) is tuple and len(in_axes) == n:
        axes = list(in_axes)
    else:
        return None
    size: int | None = None
    nbytes = 0
    outer = 1
    lean = ok = True
    guards: list[int] | None = None
    guarded: list[Any] | None = None
    for i, a in enumerate(args):
        ax = axes[i]
        t = type(a)
        if ax is None:
            if t is np.ndarray:
                if a.flags.writeable:
                    if guarded is None:
                        guarded, guards = list(args), [i]
                    else:
                        guards.append(i)
                    guarded[i] = a = a.view()
                    a.setflags(False)  # (write=False: positional, read faster)
            elif t is BatchedTensor:
                v = a._value
                if type(v) is np.ndarray:  # (_outer_examples of one level, in place)
                    if v.shape[a._bdim] > outer:
                        outer = v.shape[a._bdim]
                else:
                    outer = max(outer, _outer_examples(a))
            elif t not in _LEAN_TYPES:
                lean = False
                if is_dask_array(a):
                    return None  # an unmapped dask array: the general path gives it to vmap_dask
            continue
        if type(ax) is not int:
            return None
        if t is np.ndarray:
            nbytes += a.nbytes
        elif t is BatchedTensor:
            nbytes += a.nbytes
            outer = max(outer, _outer_examples(a))
        else:
            return None
        if not ok:
            continue
        shape = a.shape
        nd = len(shape)
        if not -nd <= ax < nd:
            ok = False
            continue
        if ax < 0:
            ax += nd
            axes[i] = ax
        s = shape[ax]
        if size is None:
            size = s
        elif s != size:
            ok = False
    return axes, size if ok else None, nbytes * outer, lean, guarded, guards


def _mapped_input(leaf: Any, func: Callable[..., Any], args: tuple[Any, ...],
                  treedef: TreeDef | None, i: int) -> Any:
    """A mapped argument as vmap batches it: arrays of a backend as they are; ndarray subclasses
    as ``tensor.plain_array`` decides; other objects that NumPy converts to an array (a pandas
    Series or DataFrame, an xarray DataArray, a torch CPU tensor, anything with ``__array__``
    or ``__array_interface__``) converted as NumPy's functions convert them, which is what the
    per-example loop's NumPy calls see; anything else as it is (the size check names it)."""
    t = type(leaf)
    if t is np.ndarray or t is BatchedTensor or is_physical_type(t):
        return leaf
    path = leaf_paths(args)[i] if treedef is not None else (i,)
    if isinstance(leaf, np.ndarray):
        return plain_array(leaf, f"vmap: the mapped {_describe(func, args, path)}")
    if any(hasattr(leaf, a) for a in ("__array__", "__array_interface__", "__array_struct__")):
        return np.asarray(leaf)
    return leaf


def _datetime_store(e: BaseException, first: list[Level]) -> tuple[Level, str] | None:
    """``out[key] = x`` with ``out`` a plain datetime64 / timedelta64 array and ``x`` batched:
    NumPy converts ``x`` without any protocol a BatchedTensor could answer ("Could not convert
    object to NumPy datetime"), so the conversion error that reruns the function per example
    (``errors.rerun_reason``) never comes; the user's store line tells it instead. (A value of
    an outer level fails the same way in the rerun, and that level reruns then.)"""
    if not (first and isinstance(e, ValueError)
            and str(e).startswith("Could not convert object to NumPy")):
        return None
    line = user_store(e)
    if line is None:
        return None
    return first[0], f"a batched value is converted (to a datetime64 / timedelta64) at {line}"


def _is_hashable(x: Any) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


def _func_name(func: Any) -> str:
    return getattr(func, "__name__", None) or type(func).__name__


def _synced(out: Any, guarded: Sequence[Any], leaves: Sequence[Any], axes: list[Any],
            positions: Sequence[int] | None = None) -> Any:
    """``out``, once the shape or dtype the function set on a read-only view of an unmapped
    argument (``a.shape = (4, 3)``, which the loop sets on the argument itself) is set on the
    argument too. ``positions``: where the views may be (all of them by default)."""
    for i in range(len(leaves)) if positions is None else positions:
        g, x = guarded[i], leaves[i]
        if axes[i] is None and g is not x and type(x) is np.ndarray \
                and (g.shape != x.shape or g.dtype != x.dtype):
            # (set on a view of x's own memory, so valid on x; NumPy's stubs leave the setter out,
            # in some versions)
            x.dtype = g.dtype  # type: ignore[misc, unused-ignore]
            x.shape = g.shape
    return out


def _foreign_snapshots(leaves: Sequence[Any], axes: list[Any]) -> list[tuple[int, Any]]:
    """Copies of the unmapped arguments of a backend without read-only arrays (CuPy), for
    ``VmapFunction._run`` to tell whether the pass wrote into them."""
    return [(j, leaf.copy()) for j, (leaf, ax) in enumerate(zip(leaves, axes))
            if ax is None and type(leaf) is not np.ndarray and is_physical_type(type(leaf))
            and not type(leaf).__module__.startswith("batchtensor.")]


def _same_values(a: Any, b: Any) -> bool:
    """Whether ``a`` holds ``b``'s values (NaN where ``b`` has NaN); False where that cannot
    be told, which sends the call down the per-example path that is always right."""
    try:
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fcmM"))  # (NaT too)
    except Exception:  # noqa: BLE001 -- (a dtype without ==)
        return False


def _put_back(leaves: Sequence[Any], snapshots: list[tuple[int, Any]]) -> None:
    for j, before in snapshots:
        np.copyto(leaves[j], before)


def _read_only(leaf: Any) -> Any:
    """A read-only view of a writeable NumPy argument that is not mapped, for a pass that may
    be rerun."""
    if type(leaf) is np.ndarray and leaf.flags.writeable:
        leaf = leaf.view()
        # (write=False; a fifth of the instructions of ``flags.writeable = False``)
        leaf.setflags(False)
    return leaf


_AUTO_CHUNK_BYTES = 2 << 20  # about one L2 cache
_AUTO_MIN_EXAMPLE_BYTES = 64 << 10


def _auto_plan(leaves: Sequence[Any], axes: Sequence[Any], size: int,
               max_memory: int | None) -> tuple[int | None, bool]:
    """chunk_size="auto": ``(chunk, measure)``.

    ``chunk``: examples per chunk so that a chunk's mapped inputs fill about one L2 cache;
    None (one pass) when examples are small and the per-op overhead dominates, or when a chunk
    would hold a single example and nothing else (that is the loop, with its overhead, and an
    example too large for the cache does not stay there anyway: the ensemble workload in
    bench/).

    ``measure``: the mapped inputs are large enough (``chunking.probe_threshold``) that the
    first chunk measures what an example allocates, to size the others to ``max_memory``.

    Inside an outer vmap every value at this level also carries the outer levels' examples
    (pairwise distances: the inner example ``b`` meets every outer ``a``), so an example here
    weighs its own bytes times that many outer examples, and a chunk of one example still
    vectorises over them."""
    if not size:
        return None, False
    own, outer, host = 0, 1, True
    for leaf, ax in zip(leaves, axes):
        if type(leaf) is BatchedTensor:
            outer = max(outer, _outer_examples(leaf))
            host = host and type(_innermost(leaf)) is np.ndarray
        elif ax is not None:
            host = host and type(leaf) is np.ndarray
        if ax is not None:
            own += leaf.nbytes // size
    per_example = own * outer
    # (tracemalloc sees NumPy's memory only: not CuPy's, nor an ONNX recording's)
    measure = host and size > 1 and \
        per_example * size >= chunking.probe_threshold(max_memory)
    if per_example < _AUTO_MIN_EXAMPLE_BYTES:
        return None, measure
    chunk = max(1, _AUTO_CHUNK_BYTES // per_example)
    return (chunk if chunk * outer >= 2 else None), measure


def _outer_examples(leaf: BatchedTensor) -> int:
    """How many examples of outer levels one logical value of ``leaf`` stands for."""
    n, v = 1, leaf
    while type(v) is BatchedTensor:
        size = v._value.shape[v._bdim]
        if type(size) is not int:  # the symbolic batch size of an ONNX recording
            return 1
        n *= size
        v = v._value
    return n


def _wrap_input(leaf: Any, ax: int, level: Level) -> BatchedTensor:
    t = type(leaf)
    if t is BatchedTensor:
        leaf._level.check_alive()
        if leaf._level.like is not None:
            level.like = leaf._level.like
    elif isinstance(leaf, np.generic):
        leaf = np.asarray(leaf)
    elif t is not np.ndarray:
        level.like = leaf  # CuPy, the ONNX recorder: bt.random draws on this backend
    level.inputs.append(leaf)
    return new_batched(leaf, ax, level)


class VmapLevel(Level):
    """A vmap level as users hold it (``bt.vmap_level()``, ``x.level``): a ``Level`` that also
    unwraps its values."""

    __slots__ = ()

    def unwrap(self, tree: Any, out_axes: Any = 0) -> Any:
        """Turn every BatchedTensor of this level in ``tree`` back into a plain array.

        The batch axis goes to ``out_axes`` (an int, or a pytree prefix of ``tree``). Leaves not
        batched at this level are broadcast along a new axis of this level's size (a view).

        >>> import numpy as np, batchtensor as bt
        >>> with bt.vmap_level() as level:
        ...     y = np.sin(bt.BatchedTensor(np.zeros((4, 3)), bdim=0)) + 1
        ...     level.unwrap(y, out_axes=1).shape
        (3, 4)
        """
        return unwrap_outputs(self, tree, out_axes, what="out_axes")


@contextmanager
def vmap_level(size: int | None = None, *, randomness: Randomness = "error",
               offset: int = 0) -> Iterator[VmapLevel]:
    """Open a vmap level by hand (functorch's manual form).

    Inside the block, ``bt.BatchedTensor(x, bdim=...)`` wraps arrays at this level; the level's
    batch size is fixed by the first one wrapped unless ``size`` is given. ``level.unwrap(y)``
    gives plain arrays back. The level closes when the block ends, also on an exception.

    >>> import numpy as np, batchtensor as bt
    >>> xs = np.arange(6.0).reshape(3, 2)
    >>> with bt.vmap_level() as level:
    ...     total = bt.BatchedTensor(xs, bdim=0).sum()
    ...     level.unwrap(total)
    array([1., 5., 9.])
    """
    level = cast(VmapLevel, open_level(size, randomness, offset, VmapLevel))
    conversions.enter()
    try:
        yield level
    finally:
        close_level(level)
        conversions.leave()


@overload
def vmap(func: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0, *,
         axis_size: int | np.integer[Any] | None = None, chunk_size: ChunkSize = "auto",
         max_memory: int | str | None = None, executor: Any = None,
         progress: bool | None = None, randomness: Randomness = "error",
         fallback: FallbackMode | None = None) -> VmapFunction: ...


@overload
def vmap(func: None = None, in_axes: Any = 0, out_axes: Any = 0, *,
         axis_size: int | np.integer[Any] | None = None, chunk_size: ChunkSize = "auto",
         max_memory: int | str | None = None, executor: Any = None,
         progress: bool | None = None, randomness: Randomness = "error",
         fallback: FallbackMode | None = None) -> Callable[[Callable[..., Any]], VmapFunction]: ...


def vmap(func: Callable[..., Any] | None = None, in_axes: Any = 0, out_axes: Any = 0, *,
         axis_size: int | np.integer[Any] | None = None, chunk_size: ChunkSize = "auto",
         max_memory: int | str | None = None, executor: Any = None,
         progress: bool | None = None, randomness: Randomness = "error",
         fallback: FallbackMode | None = None
         ) -> VmapFunction | Callable[[Callable[..., Any]], VmapFunction]:
    """Vectorise a per-example function over a batch.

    ``vmap(f, in_axes, out_axes)(*args)`` equals stacking ``f(example_i)`` along ``out_axes``,
    computed in one pass: every NumPy call inside ``f`` runs once on the whole batch.

    - ``in_axes``: an int (negative allowed), None (not mapped), or a tuple with one entry per
      positional argument, each a pytree prefix (tuples, lists, dicts, namedtuples) of it.
      Keyword arguments are not mapped; they pass through unchanged.
    - ``out_axes``: where the batch axis goes in each output (int or pytree prefix). Outputs
      that do not depend on the batch are broadcast (a view); ``None`` keeps such an output
      as it is, and is an error for a batched one.
    - ``axis_size``: the batch size when no argument is mapped.
    - ``chunk_size``: run at most that many examples at a time and join the results (less
      memory, same result, randomness included); None runs one pass. ``"auto"`` (default):
      where the mapped inputs take 8 MiB or more, a first chunk of a few examples measures
      what ``f`` allocates per example, and the rest runs in chunks that stay within
      ``max_memory``; and examples of 64 KiB to 1 MiB run in chunks of about 2 MiB of mapped
      input (an L2 cache), where the plain loop beats one vectorised pass because each
      example fits in cache. Inside an outer vmap an example counts its bytes times the outer
      batch size, and a chunk of one example (still vectorised over the outer ones) is
      allowed.
    - ``max_memory``: bytes (or a string such as ``"2GiB"``) that the chunks of
      ``chunk_size="auto"`` may allocate at a time, the results of the whole batch included;
      default 1/8 of the memory available when the call starts.
    - ``executor``: a ``concurrent.futures.Executor`` (threads, processes, a dask client's
      executor) that runs the chunks after the first, in parallel; results in order, as in
      one process. A function that writes into its arguments or draws plain NumPy randomness
      (a stream the loop draws example after example) keeps its chunks in this thread, in
      order; inside another vmap the chunks run here too. With processes, ``f`` and its
      arguments must pickle.
    - ``progress``: True shows a progress bar over the examples (tqdm); None (default) shows
      one once a chunked call will take more than 5 s, in a terminal or a notebook; False
      never.
    - ``randomness``: how random draws inside behave: "error" (raise), "different" (each
      example its own draw: for ``numpy.random``'s functions and NumPy generators passed in,
      the loop's numbers; for ``bt.random``, reproducible whatever the batch size or
      chunking) or "same" (one draw shared by the batch). A NumPy generator seeded inside
      ``f`` gives the loop's numbers in every mode (docs/semantics.md, Randomness).
    - ``fallback``: what happens where only a per-example run gives the loop's result (None:
      ``bt.config.fallback``, "warn" by default). An op without a batch rule for its arguments
      runs once per example; a function that converts a batched value to a Python scalar
      (``float(x)``), whose examples take different branches of an ``if``, or that makes values
      whose shape depends on the data, reruns once per example as a whole, and the results are
      stacked. "warn" does so with one ``bt.PerformanceWarning``, "silent" without, "error"
      raises the clear error instead. A function that writes into its arguments is not rerun
      (the write would be applied twice): it gets the clear error.

    >>> import numpy as np, batchtensor as bt
    >>> xs, w = np.ones((5, 3)), np.ones((2, 3))
    >>> bt.vmap(lambda x, w: np.tanh(w @ x).sum(), in_axes=(0, None))(xs, w).shape
    (5,)
    >>> @bt.vmap(in_axes=(None, 0))
    ... def scale(a, x):
    ...     return a * x
    >>> scale(2.0, np.arange(3.0))
    array([0., 2., 4.])
    """
    in_axes, out_axes = _plain_ints(in_axes), _plain_ints(out_axes)
    _check_axes_spec(in_axes, "in_axes")
    if isinstance(out_axes, (bool, np.bool_)):
        raise ValueError(f"vmap: out_axes must be an int, None or a tuple, got {out_axes}")
    if chunk_size is not None and chunk_size != "auto" and (
            isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer))
            or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size must be None, 'auto' or a positive int, got "
                         f"{chunk_size!r}")
    if axis_size is not None and (not isinstance(axis_size, (int, np.integer))
                                  or isinstance(axis_size, bool) or axis_size < 0):
        raise ValueError(f"vmap: axis_size must be None or an int >= 0, got {axis_size!r}")
    if randomness not in ("error", "different", "same"):
        raise ValueError(
            f"vmap: randomness must be 'error', 'different' or 'same', got {randomness!r}")
    memory = None if max_memory is None else chunking.parse_memory(max_memory)
    if executor is not None and not callable(getattr(executor, "submit", None)):
        raise TypeError(f"vmap: executor must be a concurrent.futures.Executor (something with "
                        f"submit()), got {type(executor).__name__}")
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise TypeError(f"vmap: progress must be True, False or None, got {progress!r}")
    if fallback is not None and fallback not in FALLBACK_MODES:
        raise ValueError(f"vmap: fallback must be None or one of {FALLBACK_MODES}, got "
                         f"{fallback!r}")
    if func is None:
        return lambda f: vmap(f, in_axes, out_axes, axis_size=axis_size,
                              chunk_size=chunk_size, max_memory=max_memory, executor=executor,
                              progress=progress, randomness=randomness, fallback=fallback)
    if not callable(func):
        raise TypeError(f"vmap: expected a function, got {type(func).__name__}")
    return (VmapFunction if fallback is None else FallbackVmapFunction)(
        func, in_axes, out_axes, None if axis_size is None else int(axis_size),
        chunk_size if chunk_size in (None, "auto") else int(chunk_size), randomness, fallback,
        memory, executor, None if progress is None else bool(progress))


# ---- outputs ------------------------------------------------------------------------------------
def _root(a: NDArray[Any]) -> NDArray[Any]:
    while type(a.base) is np.ndarray:
        a = a.base
    return a


def _not_a_view_of_inputs(out: Any, leaves: Sequence[Any], axes: list[Any]) -> Any:
    """The loop's ``np.stack`` makes new arrays; ``f`` returning its input (or a view of it)
    would hand back the caller's array itself, so that writing into the result changed the
    input. Such outputs are copied (an output merely computed from the inputs is not a view).

    Inside another vmap the output is a value of the outer levels (a BatchedTensor), and the
    inputs may be too: ``y = inner(x); y[0] = 0`` writes into a new array in the loop, so such
    an output is copied where its memory is a mapped input's."""
    if type(out) is BatchedTensor:
        value = out._value
        while type(value) is BatchedTensor:
            value = value._value
        return out.copy() if _shares_a_mapped_root(value, leaves, axes) else out
    if type(out) is np.ndarray:
        if out.base is None:  # owns its memory (the common case): only the input itself
            for x, ax in zip(leaves, axes):
                if x is out and ax is not None:
                    return out.copy()
            return out
        root = _root(out)
        for x, ax in zip(leaves, axes):
            if ax is not None and type(x) is np.ndarray and _root(x) is root:
                return out.copy()
        return out
    if type(out) in (tuple, list, dict) or is_namedtuple(out):
        outs, td = flatten(out)
        return unflatten(td, [_not_a_view_of_inputs(o, leaves, axes) for o in outs])
    return out


def _shares_a_mapped_root(value: Any, leaves: Sequence[Any], axes: list[Any]) -> bool:
    """Whether the physical ndarray ``value`` views the memory of a mapped input (an ndarray,
    or the innermost physical value of a BatchedTensor)."""
    if type(value) is not np.ndarray:
        return False
    root = value
    while type(root.base) is np.ndarray:  # (_root, in place: a nested vmap's every call)
        root = root.base
    for x, ax in zip(leaves, axes):
        if ax is not None:
            while type(x) is BatchedTensor:
                x = x._value
            if type(x) is np.ndarray:
                while type(x.base) is np.ndarray:
                    x = x.base
                if x is root:
                    return True
    return False


def unwrap_outputs(level: Level, tree: Any, out_axes: Any, what: str = "out_axes") -> Any:
    """Unwrap every leaf of ``tree`` at ``level``, batch axis to ``out_axes`` (see Level.unwrap)."""
    if type(tree) is BatchedTensor and type(out_axes) is int:  # fast path: one array out
        if tree._level is level:
            v, bdim = tree._value, tree._bdim
            nd = v.ndim
            if -nd <= out_axes < nd:
                return v if bdim == out_axes % nd else np.moveaxis(v, bdim, out_axes % nd)
        return _unwrap_leaf(level, tree, out_axes, lambda: what)
    leaves, td = flatten(tree)
    if out_axes is None or type(out_axes) is int:
        axes = [out_axes] * len(leaves)
    elif td.kind is LEAF and isinstance(out_axes, (tuple, list)) and len(out_axes) == 1 \
            and (out_axes[0] is None or type(out_axes[0]) is int):
        axes = [out_axes[0]]
    else:
        axes = broadcast_prefix(out_axes, tree, what, "output")

    def where(i: int) -> Callable[[], str]:
        return lambda: f"{what}{keystr(leaf_paths(tree)[i])}"

    return unflatten(td, [_unwrap_leaf(level, leaf, ax, where(i))
                          for i, (leaf, ax) in enumerate(zip(leaves, axes))])


def _out_of_range(where: Callable[[], str], ax: int, nd: int) -> ValueError:
    return ValueError(f"vmap: {where()}={ax} is out of range for an output with {nd - 1} dims "
                      f"per example (expected {-nd} <= axis < {nd})")


def _caught_refusal(level: Level) -> TypeError:
    """The error for a pass in which the function's own code caught a batched value's refusal
    (``Level.caught``): a rerun reason, as the refused conversion would have been."""
    what = (f"{level.caught}, and the function's own try/except caught the error and went on "
            f"along a path none of the loop's examples takes")
    err = TypeError(f"vmap: {what}; the result of that pass cannot be used.")
    # (the attributes errors.rerun_reason reads)
    err.batchtensor_conversion = True  # type: ignore[attr-defined]
    err.batchtensor_level = level  # type: ignore[attr-defined]
    err.batchtensor_what = what  # type: ignore[attr-defined]
    return err


def _batch_axis_at(v: Any, bdim: int, ax: Any, where: Callable[[], str]) -> Any:
    """The physical ``v`` (batch axis ``bdim``) with its batch axis at the out axis ``ax``."""
    if ax is None:
        raise ValueError(f"vmap: {where()} is None but this output is batched (it "
                         f"differs per example); give it an int out axis")
    nd = v.ndim
    if not -nd <= ax < nd:
        raise _out_of_range(where, ax, nd)
    ax %= nd
    return v if bdim == ax else np.moveaxis(v, bdim, ax)


def _unwrap_leaf(level: Level, x: Any, ax: Any, where: Callable[[], str]) -> Any:
    """One output leaf: ``where()`` describes its out_axes entry for error messages."""
    x = pyfloat.as_batched(returned_count(x))
    if is_masked_batch(x) and x._level is level:  # one masked array, batch axes first
        outer = len(x._levels) - 1
        if not outer:
            return _batch_axis_at(x._ma, 0, ax, where)
        # a nested vmap: the examples of the outer levels stay a masked batch of theirs
        if ax is None:
            _batch_axis_at(x._ma, 0, ax, where)  # (raises)
        nd = x._ma.ndim - outer
        if not -nd <= ax < nd:
            raise _out_of_range(where, ax, nd)
        return BatchedMaskedArray(x._levels[:-1], np.moveaxis(x._ma, outer, outer + ax % nd))
    if type(x) is BatchedTensor:
        lv = x._level
        if lv is level:
            return _batch_axis_at(x._value, x._bdim, ax, where)
        lv.check_alive()
        if lv.id > level.id:
            raise BatchingError(
                f"vmap level {level.id} cannot unwrap an output batched at the inner level "
                f"{lv.id}, which is still open: unwrap the inner level first"
            )
    if is_ragged(x):
        raise x.no_batched_meaning(f"returning it from the function ({where()})")
    x = buffers.plain_of(x)
    if ax is None:
        return x
    if not _is_array(x):
        if not isinstance(x, _PY_SCALARS):
            raise ValueError(
                f"vmap: the function returned {_a(type(x).__name__)} where {where()}={ax} "
                f"expects an array; only arrays and numbers can be batched (use None in "
                f"out_axes to return it as it is)")
        x = np.asarray(x)
    nd = x.ndim + 1
    if not -nd <= ax < nd:
        raise _out_of_range(where, ax, nd)
    ax %= nd
    return _broadcast_out(x, ax, level.size)


def _broadcast_out(x: Any, ax: int, size: Any) -> Any:
    """An output not batched at this level, as a broadcast view with a batch axis of ``size``
    at ``ax`` (non-negative)."""
    shape = tuple(x.shape)
    # (np.expand_dims of an ndarray is this reshape, a view, without its axis checks)
    x = x.reshape(shape[:ax] + (1,) + shape[ax:]) if type(x) is np.ndarray \
        else np.expand_dims(x, ax)
    return np.broadcast_to(x, shape[:ax] + (size,) + shape[ax:])
