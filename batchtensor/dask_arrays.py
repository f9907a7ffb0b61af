"""Dask arrays in, lazy dask arrays out: ``vmap`` over a batch larger than one machine's memory.

A vmapped function called with a ``dask.array.Array`` (``vmap_dask``, which ``VmapFunction``
calls first where an argument is one) returns lazy dask arrays, one per output leaf, in the
output's pytree: nothing runs until ``.compute()`` (or ``dask.compute``), on whatever
scheduler dask is given (threads, processes, a ``distributed`` cluster). dask is imported only
then: ``is_dask_array`` knows a dask array by its type's module.

- Blocks: one task per block of examples. The blocks are the batch axis's chunks of the first
  mapped dask argument (``chunk_size=N`` makes them N examples); every mapped dask argument is
  rechunked to them, with its other axes in one chunk; a NumPy array mapped beside is cut the
  same way (``da.from_array``); an unmapped dask array (and an unmapped NumPy array of 64 KiB
  or more) is one chunk that every block reads. Each block is one vectorised pass of the vmap
  over its examples, numbered from the block's first example, so ``bt.random`` draws what the
  in-process call draws, whatever the blocks.
- Outputs: a first pass in the caller over no example gives their structure, shapes and
  dtypes (over the first example where that cannot tell: control flow on values, a size that
  depends on the data; that computes the first example of the inputs). Every block checks its
  results against them, so a shape that depends on the data raises instead of making a dask
  array whose chunks lie.
- Graph: one blockwise layer whose blocks are tuples of a block's output leaves, and one
  layer per output leaf that picks its item. Blockwise layers rather than ``dask.delayed``:
  one layer for any number of blocks (delayed objects make one per block and output), and
  the outputs are ordinary chunked arrays that dask fuses with what follows. Compute the
  outputs together (``dask.compute(*outputs)``): computed one by one, each runs the blocks.
- Writes: a block's arguments are read-only; where ``f`` writes into its (mapped) examples,
  the block runs again on copies of them (dask never changes its inputs, so the caller's
  array does not change, unlike the loop's). Unmapped arguments stay read-only: the loop's
  writes into them reach later examples, which a block in another process cannot see.
"""

from __future__ import annotations

import math
import re
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from .config import config
from .errors import BatchingError
from .levels import active_levels, borrowed_session, current_session, random_scope, session_tick
from .pytree import TreeDef, broadcast_prefix, flatten, flatten_as, keystr, leaf_paths, unflatten
from .random import PortableEpochs

__all__ = ["is_dask_array", "has_dask_array", "vmap_dask"]

#: unmapped NumPy arrays at least this large travel as one graph key each (sent once to a
#: worker), not inside every block's task
_SHARED_BYTES = 64 << 10


class Vmapped(Protocol):
    """What ``vmap_dask`` reads of a ``VmapFunction``."""

    func: Callable[..., Any]
    in_axes: Any
    out_axes: Any
    axis_size: int | None
    chunk_size: Any
    randomness: Any  # ("error", "different" or "same")

    def _run(self, leaves: Sequence[Any], axes: list[Any], treedef: TreeDef | None,
             kwargs: dict[str, Any], size: int, offset: int = 0,
             chunks: list[bool] | None = None, report: list[Any] | None = None) -> Any: ...


def is_dask_array(x: Any) -> bool:
    """Whether ``x`` is a ``dask.array.Array`` (known by its type, without importing dask).

    >>> import numpy as np, batchtensor as bt
    >>> bt.dask_arrays.is_dask_array(np.ones(3))
    False
    """
    t = type(x)
    return t.__module__.startswith("dask.array") and hasattr(t, "__dask_graph__")


def has_dask_array(tree: Any) -> bool:
    """Whether a leaf of the pytree ``tree`` is a dask array.

    >>> import numpy as np, batchtensor as bt
    >>> bt.dask_arrays.has_dask_array({"x": np.ones(3), "n": 2})
    False
    """
    return any(map(is_dask_array, flatten(tree)[0]))


def vmap_dask(vfunc: Vmapped, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``vfunc(*args, **kwargs)`` as lazy dask arrays where an argument (or a keyword
    argument) is a dask array; ``NotImplemented`` where none is.

    >>> import numpy as np, batchtensor as bt
    >>> import dask.array as da
    >>> x = da.ones((6, 3), chunks=(2, 3))
    >>> y = bt.dask_arrays.vmap_dask(bt.vmap(lambda v: np.tanh(v).sum()), (x,), {})
    >>> y.chunks, y.compute().shape
    (((2, 2, 2),), (6,))
    """
    leaves, treedef = flatten(args)
    kw_leaves, kw_treedef = flatten(kwargs)
    if not any(map(is_dask_array, leaves)) and not any(map(is_dask_array, kw_leaves)):
        return NotImplemented
    name = _func_name(vfunc.func)
    if active_levels():
        raise BatchingError(
            f"vmap({name}) got a dask array inside another vmap (or a bt.vmap_level block): "
            f"only the outermost vmap takes dask arrays. Map the outer function over the dask "
            f"array instead, or compute it first (np.asarray(x))")
    import dask.array as da  # (only now: dask is an optional extra)

    axes = _in_axes(vfunc.in_axes, args, len(leaves))
    size = _batch_size(vfunc, name, args, leaves, axes)
    blocks = _blocks(vfunc.chunk_size, leaves, axes, size)
    # every leaf f sees: the positional arguments' and then the keyword arguments'
    every = leaves + kw_leaves
    every_axes = axes + [None] * len(kw_leaves)
    graph: list[tuple[int, Any, tuple[Any, ...]]] = []  # (position, dask array, its index)
    for pos, (leaf, ax) in enumerate(zip(every, every_axes)):
        if ax is not None:
            chunks = tuple(blocks if k == ax else d for k, d in enumerate(leaf.shape))
            arr = leaf.rechunk(chunks) if is_dask_array(leaf) else \
                da.from_array(leaf, chunks=chunks, name=False)
            graph.append((pos, arr, tuple("b" if k == ax else f"a{pos}_{k}"
                                          for k in range(arr.ndim))))
        elif is_dask_array(leaf) or (type(leaf) is np.ndarray and leaf.nbytes >= _SHARED_BYTES):
            arr = leaf if is_dask_array(leaf) else da.from_array(leaf, chunks=-1, name=False)
            graph.append((pos, arr.rechunk(-1), tuple(f"a{pos}_{k}" for k in range(arr.ndim))))

    report: list[Any] = []
    with random_scope() as scope:
        tick = session_tick()
        out, how = _first_pass(vfunc, name, every, every_axes, treedef, kw_treedef, len(leaves),
                               size, report, scope)
        epochs = PortableEpochs(dict(current_session().epochs))
    if report and getattr(report[0], "drew_numpy", False):
        raise _numpy_randomness(name)
    out_leaves, out_td = flatten(out)
    specs = _output_specs(vfunc.out_axes, name, out, out_leaves, how)

    in_graph = {pos for pos, _, _ in graph}
    block = _Block(
        vfunc=vfunc, name=name, size=size, n_args=len(leaves), axes=axes, treedef=treedef,
        kw_treedef=kw_treedef if kw_leaves else None, kwargs=kwargs,
        static=[None if pos in in_graph else leaf for pos, leaf in enumerate(every)],
        positions=[pos for pos, _, _ in graph],
        mapped=[every_axes[pos] is not None for pos, _, _ in graph],
        tick=tick, epochs=epochs, settings=(config.fallback, config.intercept_numpy),
        out_td=out_td, specs=[(path, ax, shape, dtype) for path, ax, shape, dtype, _ in specs],
        how=how)
    key = f"vmap-{re.sub(r'[^0-9A-Za-z_]', '_', name)}-{uuid.uuid4().hex}"
    index = da.arange(size, chunks=(blocks,), dtype=np.int64)  # each block's examples
    pairs: list[Any] = [index, ("b",)]
    for _, arr, ind in graph:
        pairs += [arr, ind]
    tuples = da.blockwise(block, ("b",), *pairs, concatenate=False, align_arrays=False,
                          meta=np.empty((0,), dtype=object), name=key)
    outputs = []
    for j, (_, ax, shape, dtype, meta) in enumerate(specs):
        new = {f"o{k}": d for k, d in enumerate(shape)}
        names = list(new)
        if ax is None:  # as the in-process call: the first block's
            outputs.append(da.blockwise(_pick, tuple(names), tuples.blocks[0], ("b",), j, None,
                                        new_axes=new, concatenate=False, meta=meta,
                                        dtype=dtype, name=f"{key}-{j}"))
        else:
            names.insert(ax, "b")
            outputs.append(da.blockwise(_pick, tuple(names), tuples, ("b",), j, None,
                                        new_axes=new, concatenate=False, meta=meta,
                                        dtype=dtype, name=f"{key}-{j}"))
    return unflatten(out_td, outputs)


# ---- the arguments -------------------------------------------------------------------------

def _in_axes(in_axes: Any, args: tuple[Any, ...], n: int) -> list[Any]:
    if in_axes is None or type(in_axes) is int:
        return [in_axes] * n
    spec = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else in_axes
    if len(spec) != len(args):
        raise ValueError(
            f"vmap: in_axes is a {type(in_axes).__name__} of length {len(spec)} but the "
            f"function was called with {len(args)} positional arguments; give one in_axes "
            f"entry per positional argument")
    return broadcast_prefix(spec, args, "in_axes", "args")


def _batch_size(vfunc: Vmapped, name: str, args: tuple[Any, ...], leaves: list[Any],
                axes: list[Any]) -> int:
    """The batch size, with ``axes`` made non-negative and mapped array-likes made arrays (in
    place); the errors say which argument is wrong."""
    paths = leaf_paths(args)
    sizes = []
    for i, (leaf, ax) in enumerate(zip(leaves, axes)):
        if ax is None:
            continue
        where = f"args{keystr(paths[i])}"
        if not is_dask_array(leaf) and not isinstance(leaf, np.ndarray) and any(
                hasattr(leaf, a) for a in ("__array__", "__array_interface__")):
            leaf = leaves[i] = np.asarray(leaf)
        if not all(hasattr(leaf, a) for a in ("shape", "ndim", "dtype")):
            raise ValueError(f"vmap({name}): in_axes maps {where} along axis {ax}, but it is a "
                             f"{type(leaf).__name__}, not an array; use None in in_axes for it")
        nd = leaf.ndim
        if not -nd <= ax < nd:
            raise ValueError(f"vmap({name}): in_axes maps {where} along axis {ax}, but it has "
                             f"shape {tuple(leaf.shape)}; the axis must satisfy "
                             f"{-nd} <= axis < {nd}")
        axes[i] = ax % nd
        if any(isinstance(d, float) and math.isnan(d) for d in leaf.shape):
            raise ValueError(f"vmap({name}): the dask array {where} has unknown chunk sizes "
                             f"(shape {tuple(leaf.shape)}, as after a boolean selection); call "
                             f"its .compute_chunk_sizes() first")
        sizes.append((where, axes[i], tuple(leaf.shape), int(leaf.shape[ax])))
    for i, leaf in enumerate(leaves):
        if axes[i] is None and is_dask_array(leaf) and any(
                isinstance(d, float) and math.isnan(d) for d in leaf.shape):
            raise ValueError(f"vmap({name}): the dask array args{keystr(paths[i])} has unknown "
                             f"chunk sizes; call its .compute_chunk_sizes() first")
    distinct = {s for *_, s in sizes}
    if vfunc.axis_size is not None:
        distinct.add(vfunc.axis_size)
    if not sizes and vfunc.axis_size is None:
        raise ValueError(f"vmap({name}): no argument is mapped, so the batch size is unknown: "
                         f"pass axis_size=N")
    if len(distinct) > 1:
        lines = [f"  {where}: axis {ax} of shape {shape} has size {s}"
                 for where, ax, shape, s in sizes]
        if vfunc.axis_size is not None:
            lines.append(f"  axis_size={vfunc.axis_size}")
        raise ValueError("vmap got inconsistent sizes for the mapped axes:\n" + "\n".join(lines))
    return distinct.pop()


def _blocks(chunk_size: Any, leaves: list[Any], axes: list[Any], size: int) -> tuple[int, ...]:
    """The sizes of the blocks along the batch axis."""
    if isinstance(chunk_size, (int, np.integer)) and not isinstance(chunk_size, bool):
        step = int(chunk_size)
        return tuple(min(step, size - a) for a in range(0, size, step)) or (0,)
    for leaf, ax in zip(leaves, axes):
        if ax is not None and is_dask_array(leaf):
            return tuple(int(c) for c in leaf.chunks[ax])
    return (size,)


# ---- the first pass: the outputs' structure, shapes and dtypes -----------------------------

def _first_pass(vfunc: Vmapped, name: str, every: list[Any], axes: list[Any],
                treedef: TreeDef, kw_treedef: TreeDef, n_args: int, size: int,
                report: list[Any], scope: Any) -> tuple[Any, str]:
    """f over no example (nothing computed; unmapped dask arrays stand in as zeros), or over the
    first example where no example cannot tell (f raised, or an output has a dimension of size
    zero, which is what a size that depends on the data gives there). Unmapped arrays are
    read-only and the first example a copy, as in the blocks: nothing of the caller's changes."""
    every = [_read_only(leaf) if ax is None else leaf for leaf, ax in zip(every, axes)]
    zero = []
    for leaf, ax in zip(every, axes):
        if ax is not None:
            shape = tuple(0 if k == ax else d for k, d in enumerate(leaf.shape))
            zero.append(np.empty_like(_meta_of(leaf), shape=shape) if is_dask_array(leaf)
                        else leaf[(slice(None),) * ax + (slice(0, 0),)])
        elif is_dask_array(leaf):
            zero.append(np.zeros_like(_meta_of(leaf), shape=leaf.shape))
        else:
            zero.append(leaf)
    try:
        with np.errstate(all="ignore"):
            out = _call(vfunc, zero, axes, treedef, kw_treedef, n_args, 0, report)
        if not size or not _suspicious(vfunc.out_axes, out):
            return out, "no example"
    except Exception:
        if not size:
            raise
    import dask

    scope.rewind()  # (the same draws: the blocks' draws are keyed as these)
    report.clear()
    firsts = [leaf[(slice(None),) * ax + (slice(0, 1),)] if ax is not None else leaf
              for leaf, ax in zip(every, axes)]
    firsts = [leaf.copy() if ax is not None and isinstance(leaf, np.ndarray) else leaf
              for leaf, ax in zip(firsts, axes)]
    lazy = [j for j, leaf in enumerate(firsts) if is_dask_array(leaf)]
    for j, value in zip(lazy, dask.compute(*(firsts[j] for j in lazy))):
        firsts[j] = value
    try:
        return _call(vfunc, firsts, axes, treedef, kw_treedef, n_args, 1, report), \
            "the first example"
    except Exception as e:
        _note_read_only(e, name)
        e.add_note(f"(in vmap({name})'s pass over the first example, which finds the shapes "
                   f"and dtypes of its outputs before building the dask graph)")
        raise


def _call(vfunc: Vmapped, every: list[Any], axes: list[Any], treedef: TreeDef,
          kw_treedef: TreeDef, n_args: int, size: int, report: list[Any]) -> Any:
    kwargs = unflatten(kw_treedef, every[n_args:])
    return vfunc._run(every[:n_args], axes[:n_args], treedef, kwargs, size, 0, None, report)


def _meta_of(x: Any) -> Any:
    from dask.array.utils import meta_from_array

    return meta_from_array(x)


def _leaf_axes(out_axes: Any, out: Any, n: int) -> list[Any]:
    if out_axes is None or type(out_axes) is int:
        return [out_axes] * n
    return broadcast_prefix(out_axes, out, "out_axes", "output")


def _suspicious(out_axes: Any, out: Any) -> bool:
    leaves = flatten(out)[0]
    for leaf, ax in zip(leaves, _leaf_axes(out_axes, out, len(leaves))):
        shape = tuple(np.shape(leaf))
        if ax is not None and shape and 0 in shape[:ax % len(shape)] + shape[ax % len(shape) + 1:]:
            return True
    return False


def _output_specs(out_axes: Any, name: str, out: Any, leaves: list[Any],
                  how: str) -> list[tuple[str, int | None, tuple[int, ...], Any, Any]]:
    """Per output leaf: (path, batch axis or None, shape of one example (of the whole leaf for
    an unbatched one), dtype, dask meta)."""
    specs = []
    for leaf, ax, path in zip(leaves, _leaf_axes(out_axes, out, len(leaves)), leaf_paths(out)):
        where = f"output{keystr(path)}"
        if not hasattr(leaf, "shape") or not hasattr(leaf, "dtype"):
            if not isinstance(leaf, (int, float, complex, bool, np.generic)):
                raise TypeError(f"vmap({name}): {where} is a {type(leaf).__name__}, which a dask "
                                f"array cannot hold; return arrays or numbers from the function "
                                f"(or call the vmap on NumPy arrays)")
            leaf = np.asarray(leaf)
        shape = tuple(int(d) for d in leaf.shape)
        if ax is not None:
            ax %= len(shape)
            shape = shape[:ax] + shape[ax + 1:]
        meta = np.empty_like(leaf, shape=(0,) * (len(shape) + (ax is not None)))
        specs.append((where, ax, shape, leaf.dtype, meta))
    return specs


# ---- one block -----------------------------------------------------------------------------

@dataclass(eq=False)
class _Block:
    """The task of one block of examples: ``block(index, *chunks)`` runs the vmap's vectorised
    pass over them (``index``: their global numbers) and returns the tuple of output leaves."""

    vfunc: Vmapped
    name: str  # the function's, for messages
    size: int  # of the whole batch
    n_args: int  # leaves of the positional arguments (the keyword arguments' follow)
    axes: list[Any]  # the positional leaves' batch axes
    treedef: TreeDef  # of the positional arguments
    kw_treedef: TreeDef | None  # of the keyword arguments, where they hold dask arrays
    kwargs: dict[str, Any]
    static: list[Any]  # every leaf that is not in the graph (None where it is)
    positions: list[int]  # where the graph's chunks go among the leaves
    mapped: list[bool]  # for each of them, whether it is mapped
    tick: int  # the random session's, where the caller's first pass began
    epochs: PortableEpochs  # the generators' epochs in that pass
    settings: tuple[Any, Any]  # bt.config's fallback and intercept_numpy at the call
    out_td: TreeDef
    specs: list[tuple[str, int | None, tuple[int, ...], Any]]  # (path, axis, shape, dtype)
    how: str  # what the first pass ran over

    def __call__(self, index: Any, *chunks: Any) -> tuple[Any, ...]:
        n = len(index)
        start = int(index[0]) if n else 0
        parts = [_unnest(c) for c in chunks]
        try:
            try:
                out = self._pass(parts, n, start, copies=False)
            except ValueError as e:
                if "read-only" not in str(e) or not any(self.mapped):
                    raise
                out = self._pass(parts, n, start, copies=True)  # f writes into its examples
            return self._checked(out, n, start)
        except Exception as e:
            _note_read_only(e, self.name)
            e.add_note(f"(in vmap({self.name})'s dask block of examples {start} to "
                       f"{start + n - 1} of {self.size})")
            raise

    def _pass(self, parts: list[Any], n: int, start: int, copies: bool) -> Any:
        every = [_read_only(leaf) for leaf in self.static]  # (unmapped: shared by the blocks)
        made: dict[int, Any] = {}  # (one copy per chunk object: aliases stay aliases)
        for pos, mapped, part in zip(self.positions, self.mapped, parts):
            if copies and mapped:
                if id(part) not in made:
                    made[id(part)] = part.copy()
                every[pos] = made[id(part)]
            else:
                every[pos] = _read_only(part)
        kwargs = self.kwargs if self.kw_treedef is None else unflatten(self.kw_treedef,
                                                                       every[self.n_args:])
        fallback, intercept = self.settings
        report: list[Any] = []
        with config(fallback=fallback, intercept_numpy=intercept), \
                borrowed_session(self.tick, self.epochs):
            out = self.vfunc._run(every[:self.n_args], list(self.axes), self.treedef, kwargs, n,
                                  start, None, report)
        if report and getattr(report[0], "drew_numpy", False):
            raise _numpy_randomness(self.name)
        return out

    def _checked(self, out: Any, n: int, start: int) -> tuple[Any, ...]:
        leaves = flatten_as(out, self.out_td)
        if leaves is None:
            raise ValueError(f"vmap({self.name}): the examples {start} to {start + n - 1} return "
                             f"results of another structure than the pass over {self.how} "
                             f"(other containers, keys or numbers of arrays), so they cannot "
                             f"be joined, as in the per-example loop")
        result = []
        for leaf, (where, ax, shape, dtype) in zip(leaves, self.specs):
            if not hasattr(leaf, "shape") or not hasattr(leaf, "dtype"):
                leaf = np.asarray(leaf)
            expected = shape if ax is None else shape[:ax] + (n,) + shape[ax:]
            if tuple(leaf.shape) != expected or leaf.dtype != dtype:
                raise ValueError(
                    f"vmap({self.name}): {where} of the examples {start} to {start + n - 1} has "
                    f"shape {tuple(leaf.shape)} and dtype {leaf.dtype}, but the pass over "
                    f"{self.how} that built the dask graph gave shape {expected} and dtype "
                    f"{dtype}: its shape or dtype depends on the data, which the chunks of a "
                    f"dask array cannot follow. Make it independent of the values, or compute "
                    f"the inputs and call the vmap on NumPy arrays")
            result.append(leaf)
        return tuple(result)


def _pick(block: Any, j: int) -> Any:
    return _unnest(block)[j]


def _unnest(chunk: Any) -> Any:
    """A chunk as blockwise gives it without concatenating: in one list per axis that is in one
    chunk (and is not the batch axis)."""
    while type(chunk) is list:
        chunk = chunk[0]
    return chunk


def _read_only(x: Any) -> Any:
    if not isinstance(x, np.ndarray) or not x.flags.writeable:
        return x
    view = x.view()
    view.flags.writeable = False
    return view


def _note_read_only(e: Exception, name: str) -> None:
    if isinstance(e, ValueError) and "read-only" in str(e):
        e.add_note(f"(the arguments of vmap({name}) that are not mapped are read-only over dask "
                   f"arrays: the loop's writes into one reach the later examples, which a "
                   f"block in another process cannot see; write into a copy made inside the "
                   f"function)")


def _numpy_randomness(name: str) -> BatchingError:
    return BatchingError(
        f"vmap({name}) over dask arrays draws from NumPy's own random streams (numpy.random's "
        f"functions, or a Generator or RandomState passed in), which the per-example loop draws "
        f"example after example; dask's blocks run apart and cannot continue one stream. Draw "
        f"with bt.random.default_rng(seed) inside the function instead (its numbers are keyed "
        f"by the example, whatever the blocks), or pass the draws in as a mapped argument")


def _func_name(func: Any) -> str:
    return str(getattr(func, "__name__", None) or type(func).__name__)
