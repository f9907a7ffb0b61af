"""The exhaustive sweep: every sample of every OpInfo, under many vmap variants,
compared with the per-example loop.

For each sample the sweep draws distinct examples (one ``sample_inputs`` call per example, with
its own seed), then runs:

- in_axes combinations over the array arguments from {None, 0, last, a middle axis} (capped per
  sample, always including all-0, all-last and each argument unbatched), at batch sizes 1 and 4;
- a non-contiguous physical layout (a strided view);
- a nested two-level vmap (each argument batched at both levels, or only at the outer level),
  and an inner vmap under an outer level that batches nothing (``axis_size``);
- a chunked run (``chunk_size=3`` over 4 examples);
- the layout / alias dimension (``run_layout``): the mapped inputs laid out C or F ordered,
  transposed, with negative strides, broadcast along the batch axis (stride 0, read-only) or
  read-only (``LAYOUTS``), with every argument at axis 0 or every one last. The loop then runs
  over views of the same physical arrays (``np.moveaxis(xs, ax, 0)[i]``, what a user's loop
  gets), and besides the values a wrapper writes into every array output: whether each write
  raises (and its exception type), the outputs after the writes and the inputs after the
  writes must be the loop's. A view where the loop copies, a copy where it views, or another
  writeability shows there. ``python -m opinfo`` runs every case; ``tests/test_opinfo.py``
  ``LAYOUT_SUBSET`` per sample, rotating.

With ``backend="duck"`` the same variants (the layout dimension aside) run with the mapped
arrays made DuckArrays (``opinfo/duck.py``, CuPy's contract without a GPU), against the loop on
NumPy; ``opinfo/backends.py`` lists what that backend leaves out and why.

The reference is the loop: ``op`` per example, stacked. vmap must give the same shapes, dtypes
and values (NaN where NaN), or raise an exception of the same type where the loop raises. Ops
whose expected path is not "loop" run with ``bt.config.fallback = "error"``, and the path
that served the op is recorded and checked.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import batchtensor as bt
from batchtensor.errors import swallowed_refusal
from batchtensor.registry import record_paths
from batchtensor.pytree import flatten, unflatten
from batchtensor.tensor import is_plain_array

from . import duck
from .backends import HOST_OUTPUTS, duck_expected
from .core import OpInfo, SampleInput

#: Physical backends the sweep runs on: plain NumPy, or the strict duck array of
#: ``opinfo/duck.py`` (CuPy's contract): the mapped inputs are made DuckArrays, the loop still runs
#: on NumPy, and vmap's array outputs must come back as DuckArrays.
BACKENDS = ("numpy", "duck")
BATCH_SIZES = (1, 4)
N_EXAMPLES = 6  # enough for the nested 2 x 3 run
MAX_COMBOS = 8


#: OpInfo entries whose loop over strided views meets a NumPy bug: run_variant's loop runs
#: over contiguous copies of the examples for them.
NUMPY_STRIDED_BUGS = {
    "ufunc.negative.out": "NumPy 2.4's SIMD np.negative writes wrong values into an out whose "
                          "stride is 4 or 8 elements (boxed/pointwise.py _staging_for)",
}


class SweepFailure(AssertionError):
    pass


@dataclass
class SweepResult:
    opinfo: OpInfo
    dtype: Any
    samples: int = 0
    runs: int = 0
    layout_runs: int = 0
    paths: set = field(default_factory=set)
    failures: list = field(default_factory=list)
    expected: int = 0  # samples left out (or their nested variants) as expected differences

    @property
    def ok(self) -> bool:
        return not self.failures


# ---- examples -----------------------------------------------------------------------------------
def _is_array(x) -> bool:
    return isinstance(x, np.ndarray)


def _structure(sample: SampleInput):
    leaves, td = flatten((sample.args, sample.kwargs))
    return leaves, td


def draw_examples(info: OpInfo, dtype, n: int = N_EXAMPLES) -> list[list[SampleInput]]:
    """``n`` independent draws of the op's samples: result[k][i] is example i of sample k."""
    base = int(hashlib.sha256(f"{info.name}:{np.dtype(dtype)}".encode()).hexdigest()[:8], 16)
    draws = [info.samples(np.random.default_rng(base + i), dtype) for i in range(n)]
    counts = {len(d) for d in draws}
    if len(counts) != 1:
        raise SweepFailure(f"{info.name}: sample_inputs yields {sorted(counts)} samples for "
                           f"different seeds; it must yield the same structure for every rng")
    return [[d[k] for d in draws] for k in range(len(draws[0]))]


def check_structure(info: OpInfo, examples: list[SampleInput]) -> list[int]:
    """Same structure in every example; returns the indices of the array leaves."""
    leaves0, td0 = _structure(examples[0])
    arrays = [j for j, x in enumerate(leaves0) if _is_array(x)]
    for i, ex in enumerate(examples[1:], 1):
        leaves, _ = _structure(ex)
        if len(leaves) != len(leaves0):
            raise SweepFailure(f"{info.name} {examples[0]!r}: example {i} has another structure")
        for j, (a, b) in enumerate(zip(leaves0, leaves)):
            if _is_array(a):
                if not _is_array(b) or a.shape != b.shape or a.dtype != b.dtype:
                    raise SweepFailure(
                        f"{info.name} {examples[0]!r}: array argument {j} differs in shape/dtype "
                        f"between examples ({a.shape}/{a.dtype} vs {getattr(b, 'shape', b)})")
            elif not _same_static(a, b):
                raise SweepFailure(
                    f"{info.name} {examples[0]!r}: non-array argument {j} differs between "
                    f"examples ({a!r} vs {b!r}); only arrays may depend on the rng")
    return arrays


def _same_static(a, b) -> bool:
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b) if not isinstance(a, float) or a == a else b != b
    except Exception:  # noqa: BLE001
        return a is b


def examples_differ(examples: list[SampleInput], arrays: list[int]) -> bool:
    """Whether the examples are not all copies of one (vacuous if every array is empty)."""
    l0, _ = _structure(examples[0])
    if all(l0[j].size == 0 for j in arrays):
        return True
    for ex in examples[1:]:
        li, _ = _structure(ex)
        if any(not np.array_equal(l0[j], li[j], equal_nan=l0[j].dtype.kind in "fc")
               for j in arrays):
            return True
    return False


# ---- in_axes combinations -----------------------------------------------------------------------
def axis_choices(ndim: int) -> list:
    """None, 0, last and a middle position for the batch axis of a ``ndim``-d example."""
    choices = [None, 0]
    if ndim >= 1:
        choices.append(ndim)
    if ndim >= 2:
        choices.append(ndim // 2 if ndim // 2 not in (0, ndim) else 1)
    return list(dict.fromkeys(choices))


def in_axes_combos(ndims: list[int], rng: np.random.Generator, cap: int = MAX_COMBOS) -> list:
    n = len(ndims)
    per = [axis_choices(d) for d in ndims]
    must = [tuple(0 for _ in ndims), tuple(d for d in ndims)]
    if n > 1:
        for j in range(n):
            must.append(tuple(None if k == j else 0 for k in range(n)))
            must.append(tuple(0 if k == j else None for k in range(n)))
    total = 1
    for p in per:
        total *= len(p)
    if total <= 4 * cap:
        pool = list(itertools.product(*per))
    else:
        pool = [tuple(p[rng.integers(len(p))] for p in per) for _ in range(4 * cap)]
    combos = list(dict.fromkeys(c for c in must + [pool[i] for i in rng.permutation(len(pool))]
                                if any(a is not None for a in c)))
    cap = max(cap, len(dict.fromkeys(must)))  # never drop "only this argument batched"
    return combos[:cap] if len(combos) > cap else combos


# ---- running ------------------------------------------------------------------------------------
def _noncontiguous(a: np.ndarray) -> np.ndarray:
    if a.ndim == 0:
        return a
    b = np.empty(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    b[..., ::2] = a
    return b[..., ::2]


def _call(info: OpInfo, td, leaves):
    args, kwargs = unflatten(td, leaves)
    return info.op(*args, **kwargs)


def _reference(info, td, example_leaves: list[list], axes,
               views=()) -> tuple[Any, Exception | None, list]:
    """The loop: returns (stacked outputs, exception, per-example leaves after the call). The
    leaves are copied, except those at the indices ``views`` (views the loop owns)."""
    outs, after = [], []
    for leaves in example_leaves:
        leaves = [x if j in views else np.array(x, copy=True) if _is_array(x)
                  else copy.deepcopy(x) for j, x in enumerate(leaves)]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outs.append(_call(info, td, leaves))
        except Exception as e:  # noqa: BLE001  (the loop's exception is the expectation)
            return None, e, []
        after.append(leaves)
    return outs, None, after


def _stack_outputs(outs: list, axis_levels: int = 1):
    leaves0, td = flatten(outs[0])
    cols = [flatten(o)[0] for o in outs]
    stacked = []
    for j, x in enumerate(leaves0):
        items = [c[j] for c in cols]
        if x is None:
            stacked.append(None)
        elif isinstance(x, (np.ndarray, np.generic, int, float, complex, bool)):
            stacked.append(np.stack([np.asarray(i) for i in items]))
        else:
            stacked.append(x)
    return unflatten(td, stacked)


def compare(info: OpInfo, dtype, got, want, where: str) -> None:
    gl, gtd = flatten(got)
    wl, wtd = flatten(want)
    if len(gl) != len(wl):
        raise SweepFailure(f"{where}: vmap returned {len(gl)} outputs, the loop {len(wl)}")
    rtol, atol = info.tolerances(dtype)
    for k, (g, w) in enumerate(zip(gl, wl)):
        if w is None or not isinstance(w, np.ndarray):
            if not (g is w or g == w):
                raise SweepFailure(f"{where}: output {k}: vmap gave {g!r}, the loop {w!r}")
            continue
        if not is_plain_array(g):
            raise SweepFailure(f"{where}: output {k} is a {type(g).__name__}, not an ndarray")
        if g.shape != w.shape:
            raise SweepFailure(f"{where}: output {k} has shape {g.shape}, the loop {w.shape}")
        if g.dtype != w.dtype:
            raise SweepFailure(f"{where}: output {k} has dtype {g.dtype}, the loop {w.dtype}")
        if not info.check_values:
            continue
        if w.dtype.kind in "fc":
            try:
                np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
            except AssertionError as e:
                raise SweepFailure(f"{where}: output {k} differs from the loop:{e}") from None
            if not np.array_equal(np.isnan(g), np.isnan(w)):
                raise SweepFailure(f"{where}: output {k} has NaN in other places than the loop")
        elif not np.array_equal(g, w):
            bad = np.argwhere(g != w)[:3].tolist() if g.shape else []
            raise SweepFailure(f"{where}: output {k} differs from the loop (exact dtype "
                               f"{w.dtype}) at {bad}: got {g.ravel()[:8]}, want {w.ravel()[:8]}")


def on_backend(arrays: list, backend: str) -> list:
    """The physical inputs of one vmap call on ``backend`` (the duck backend shares memory, so
    in-place writes show in the NumPy arrays the sweep keeps)."""
    return [duck.from_numpy(a) for a in arrays] if backend == "duck" else arrays


def from_backend(got, backend: str, where: str, example=None, info=None):
    """vmap's outputs read back to NumPy. On the duck backend an output must be a DuckArray
    where the loop's ``example`` output is an array or a NumPy scalar (a plain ndarray means
    that an array was made without ``like=``); where the example gives a Python value (a bool,
    a shape), vmap stacks the Python values into a plain ndarray on any backend, and so do
    the ops of ``backends.HOST_OUTPUTS``."""
    if backend != "duck" or got is None:
        return got
    leaves, td = flatten(got)
    wanted = flatten(example)[0] if example is not None else None
    host_ok = info is not None and info.name in HOST_OUTPUTS
    for k, g in enumerate(leaves):
        device = wanted is None or k >= len(wanted) or isinstance(wanted[k],
                                                                   (np.ndarray, np.generic))
        if is_plain_array(g) and device and not host_ok:
            raise SweepFailure(f"{where}: output {k} is a plain ndarray on the duck backend: "
                               f"an array was made without like=<physical value>")
    return unflatten(td, [duck.to_numpy(g) if duck.is_duck(g) else g for g in leaves])


class _Run:
    """One vmap execution with the fallback mode and path recording of the sweep."""

    def __init__(self, info: OpInfo, sample: SampleInput):
        self.loop_expected = info.path == "loop" or sample.loop_reason is not None
        self.paths: list = []

    def __call__(self, fn):
        old = bt.config.fallback
        bt.config.fallback = "silent" if self.loop_expected else "error"
        try:
            with record_paths() as log, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    return fn(), None
                except Exception as e:  # noqa: BLE001
                    return None, e
                finally:
                    self.paths.extend(log)
        finally:
            bt.config.fallback = old


def _conversion_error(exc) -> bool:
    """Whether ``exc`` is (or was caused by) the clear error NumPy's own code meets with a
    batched value it was not asked about: the TypeError a BatchedTensor raises when a plain
    array's method tries to convert it, or, where ``np.asarray`` inside NumPy's Python code
    kept it batched (``batchtensor.conversions``), the BatchingError for writing it into a
    plain array NumPy made."""
    while exc is not None:
        if isinstance(exc, TypeError) and "BatchedTensor" in str(exc):
            return True
        if swallowed_refusal(exc) is not None:  # NumPy replaced the TypeError by its own
            return True
        if isinstance(exc, bt.BatchingError) and "not batched at this vmap level" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _undispatched(info: OpInfo, axes) -> bool:
    """Only arguments that NumPy's dispatcher ignores are batched in this combination."""
    if info.unbatched_self and axes[0] is None:
        return True
    if not info.undispatched:
        return False
    ignored = {k % len(axes) for k in info.undispatched if -len(axes) <= k < len(axes)}
    return all(k in ignored for k, ax in enumerate(axes) if ax is not None)


def _expect_error(where, got_exc, ref_exc, got):
    if got_exc is None:
        raise SweepFailure(f"{where}: the loop raises {type(ref_exc).__name__}({ref_exc}) but "
                           f"vmap returned {flatten(got)[0][:1]}")
    if not isinstance(got_exc, type(ref_exc)):
        raise SweepFailure(f"{where}: the loop raises {type(ref_exc).__name__}({ref_exc}) but "
                           f"vmap raised {type(got_exc).__name__}({got_exc})")


def _documented_error(sample: SampleInput, exc) -> bool:
    """A sample marked ``vmap_error`` may raise BatchingError where the loop returns (where
    the examples disagree in a way vmap cannot represent: docs/semantics.md)."""
    return sample.vmap_error is not None and isinstance(exc, bt.BatchingError)


def _fail_exc(where, exc):
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:])
    raise SweepFailure(f"{where}: vmap raised {type(exc).__name__}: {exc}\n{tb}") from None


def run_variant(info, dtype, examples, arrays, td, axes, batch, *, noncontig=False,
                chunk=None, where="", backend="numpy") -> list:
    """vmap over ``batch`` examples with ``axes`` per array leaf; compare with the loop."""
    sample = examples[0]
    ex_leaves = [_structure(e)[0] for e in examples[:batch]]

    def build():
        out = []
        for j, ax in zip(arrays, axes):
            if ax is None:
                out.append(np.array(ex_leaves[0][j], copy=True))
            else:
                a = np.stack([ex_leaves[i][j] for i in range(batch)], axis=ax)
                out.append(_noncontiguous(a) if noncontig else a)
        return out

    # The loop runs over views of its own copy of the mapped arrays, as ``for x in xs`` does
    # (an example's strides are the batch's, which decides some views, copies and errors).
    mapped, loop_mapped = build(), build()
    ref_leaves = []
    for i in range(batch):
        leaves = list(ex_leaves[0])
        for j, ax, m in zip(arrays, axes, loop_mapped):
            leaves[j] = ex_leaves[0][j] if ax is None else np.moveaxis(m, ax, 0)[i, ...]
        ref_leaves.append(leaves)
    views = {j for j, ax in zip(arrays, axes) if ax is not None}
    if info.name in NUMPY_STRIDED_BUGS:
        views = set()
    want, ref_exc, after = _reference_as_looped(info, td, ref_leaves, axes, arrays, axes, views)
    static = list(ex_leaves[0])

    def fn(*arrs):
        leaves = list(static)
        for j, a in zip(arrays, arrs):
            leaves[j] = a
        return _call(info, td, leaves)

    run = _Run(info, sample)
    inputs = on_backend(mapped, backend)
    if info.inplace is not None and axes[arrays.index(info.inplace)] is None \
            and any(a is not None for a in axes):
        if backend != "numpy":
            return run.paths  # UNMAPPED_WRITES_GAP (opinfo/backends.py)
        got, exc = run(lambda: bt.vmap(fn, in_axes=tuple(axes))(*inputs))
        if _undispatched(info, axes) and _conversion_error(exc):
            # a plain array's own method (x[i] = v, x.fill(v)), or only arguments NumPy does
            # not dispatch on are batched: a clear error
            return run.paths
        if ref_exc is not None and isinstance(exc, type(ref_exc)):
            return run.paths  # NumPy's own argument error comes first, as in the loop
        if not isinstance(exc, bt.BatchingError):
            raise SweepFailure(f"{where}: writing batched values into the unbatched argument "
                               f"{info.inplace} must raise BatchingError, got "
                               f"{type(exc).__name__ if exc else 'no error'}")
        return run.paths
    got, exc = run(lambda: bt.vmap(fn, in_axes=tuple(axes), chunk_size=chunk)(*inputs))
    if _undispatched(info, axes) and _conversion_error(exc):
        # only arguments NumPy does not dispatch on are batched: NumPy never asks us, and its
        # own code meets a BatchedTensor it cannot convert (a clear TypeError, never a result)
        return run.paths
    if ref_exc is not None:
        _expect_error(where, exc, ref_exc, got)
        return run.paths
    try:
        stacked = _stack_outputs(want)
    except ValueError as e:  # the examples' results differ in shape: no batch can hold them
        if not isinstance(exc, bt.BatchingError):
            raise SweepFailure(f"{where}: the per-example results cannot be stacked ({e}), so "
                               f"vmap must raise BatchingError; it gave "
                               f"{type(exc).__name__ if exc else 'a result'}") from None
        return run.paths
    if exc is not None:
        if _documented_error(sample, exc):
            return run.paths
        _fail_exc(where, exc)
    compare(info, dtype, from_backend(got, backend, where, want[0], info), stacked, where)
    if info.inplace is not None:
        j = arrays.index(info.inplace)
        ax = axes[j]
        written = np.stack([a[info.inplace] for a in after], axis=ax)
        compare(info, dtype, mapped[j], written, f"{where}: the in-place write")
    return run.paths


def _reference_as_looped(info, td, example_leaves, axes, arrays, batched, views=()):
    """The loop as ``for x in xs`` runs it: a 0-d example of a batched argument is a NumPy
    scalar (``z += 1`` rebinds, ``bool ** 2`` is int64). Where NumPy refuses the scalar but
    takes a 0-d array (``like=``, ``.dot``), vmap may be the more lenient: the reference is
    then the loop over 0-d arrays, except for ops that write into an argument, where vmap
    refuses a scalar target as NumPy does."""
    scalars, changed = [], False
    for leaves in example_leaves:
        leaves = list(leaves)
        for j, b in zip(arrays, batched):
            x = leaves[j]
            if b is not None and type(x) is np.ndarray and x.ndim == 0:
                leaves[j] = x[()]
                changed = True
        scalars.append(leaves)
    res = _reference(info, td, scalars, axes, views)
    if changed and res[1] is not None and info.inplace is None:  # writes: scalars refuse
        return _reference(info, td, example_leaves, axes, views)
    return res


def run_nested(info, dtype, examples, arrays, td, axes, where: str, inner_only=False,
               backend="numpy") -> list:
    """vmap(vmap(op, axes), 0) over 2 x 3 examples; leaves with inner axis None are batched at
    the outer level only. ``inner_only``: the outer level batches nothing (axis_size=2)."""
    if info.inplace is not None and axes[arrays.index(info.inplace)] is None:
        return []  # a target shared by the inner examples: the flat variants expect the error
    ex_leaves = [_structure(e)[0] for e in examples[:6]]
    n_out, n_in = 2, 3

    def build():
        out = []
        for j, ax in zip(arrays, axes):
            if inner_only:
                out.append(np.array(ex_leaves[0][j], copy=True) if ax is None else
                           np.stack([ex_leaves[k][j] for k in range(n_in)], axis=ax))
            elif ax is None:
                out.append(np.stack([ex_leaves[i * n_in][j] for i in range(n_out)]))
            else:
                out.append(np.stack([np.stack([ex_leaves[i * n_in + k][j]
                                               for k in range(n_in)], axis=ax)
                                     for i in range(n_out)]))
        return out

    mapped = build()
    # As in run_variant, the loop runs over views of its own copy of the mapped arrays (with
    # an outer level that batches nothing, over copies: each outer run writes anew).
    loop_mapped = None if inner_only else build()
    views = () if inner_only else set(arrays)
    wants = []
    for i in range(n_out):
        per = []
        for k in range(n_in):
            leaves = list(ex_leaves[0])
            for j, ax, m in zip(arrays, axes, loop_mapped or [None] * len(arrays)):
                if inner_only:
                    leaves[j] = ex_leaves[k if ax is not None else 0][j]
                elif ax is None:
                    leaves[j] = m[i, ...]
                else:
                    leaves[j] = np.moveaxis(m[i], ax, 0)[k, ...]
            per.append(leaves)
        batched = [0 if ax is not None or not inner_only else None for ax in axes]
        want, ref_exc, _ = _reference_as_looped(info, td, per, axes, arrays, batched, views)
        if ref_exc is not None:
            return []  # error samples are covered by the flat variants
        wants.append(_stack_outputs(want))
        example = want[0]
    static = list(ex_leaves[0])

    def fn(*arrs):
        leaves = list(static)
        for j, a in zip(arrays, arrs):
            leaves[j] = a
        return _call(info, td, leaves)

    run = _Run(info, examples[0])
    if inner_only:
        outer = bt.vmap(lambda *arrs: bt.vmap(fn, in_axes=tuple(axes))(*arrs),
                        in_axes=None, axis_size=n_out)
    else:
        outer = bt.vmap(bt.vmap(fn, in_axes=tuple(axes)), in_axes=0)
    before = [np.copy(m) for m in mapped]
    inputs = on_backend(mapped, backend)
    got, exc = run(lambda: outer(*inputs))
    if inner_only and (isinstance(exc, bt.BatchingError) and "not mapped" in str(exc) or any(
            m.tobytes() != b.tobytes() for m, b in zip(mapped, before))):
        if backend == "numpy":  # else UNMAPPED_WRITES_GAP (opinfo/backends.py)
            _compare_repeated_writes(info, dtype, fn, axes, before, n_out, where)
        return run.paths
    if info.inplace is not None and axes[arrays.index(info.inplace)] is None \
            and any(a is not None for a in axes):
        # The target is batched at the outer level only: shared by the inner examples.
        if not isinstance(exc, bt.BatchingError) and not (
                info.unbatched_self and axes[0] is None and _conversion_error(exc)):
            raise SweepFailure(f"{where}: writing inner-batched values into argument "
                               f"{info.inplace}, batched at the outer level only, must raise "
                               f"BatchingError, got {type(exc).__name__ if exc else 'no error'}")
        return run.paths
    if exc is not None:
        if _documented_error(examples[0], exc):
            return run.paths
        _fail_exc(where, exc)
    if inner_only:
        want = _stack_outputs([wants[0]] * n_out)
    else:
        want = _stack_outputs(wants)
    compare(info, dtype, from_backend(got, backend, where, example, info), want, where)
    return run.paths


def _compare_repeated_writes(info, dtype, fn, axes, before, n_out: int, where: str) -> None:
    """An op that writes into its arguments, under an outer level that batches nothing: the
    outer loop runs the inner vmap ``n_out`` times on the same arrays, so a write that
    accumulates (``x += y``, ``np.add.at``) accumulates, and ``fallback="error"`` refuses to
    run that per example. With the rerun allowed, vmap must equal that loop, in its results
    and in what it leaves in the arrays; the inner vmap itself is checked by the other
    variants."""
    inner = bt.vmap(fn, in_axes=tuple(axes))
    theirs = [np.copy(m) for m in before]
    ours = [np.copy(m) for m in before]
    want = _stack_outputs([inner(*theirs) for _ in range(n_out)])
    got = bt.vmap(lambda *arrs: bt.vmap(fn, in_axes=tuple(axes))(*arrs), in_axes=None,
                  axis_size=n_out, fallback="silent")(*ours)
    compare(info, dtype, got, want, where + ", writes repeated by the outer loop")
    for k, (a, b) in enumerate(zip(ours, theirs)):
        if a.dtype != b.dtype or a.tobytes() != b.tobytes():
            raise SweepFailure(f"{where}: after the outer loop, array argument {k} holds "
                               f"{a!r}, where the loop leaves {b!r}")


# ---- the layout / alias dimension ---------------------------------------------------------------
#: Physical layouts of the mapped inputs. "C" / "F": the whole mapped array C / Fortran ordered
#: (with in_axes=0, "F" puts the batch axis innermost in memory; with in_axes=last, "C" does);
#: "transposed": each example's axes reversed in memory, the examples one after another;
#: "negative": every axis reversed in memory (a view with negative strides); "broadcast": one
#: example broadcast along the batch axis (stride 0, read-only; here the examples are equal on
#: purpose); "readonly": C ordered with ``flags.writeable = False``.
LAYOUTS = ("C", "F", "transposed", "negative", "broadcast", "readonly")
#: (layout, in_axes) cases per sample that ``tests/test_opinfo.py`` runs, rotating by entry
#: and sample so that the database as a whole meets every case; ``python -m opinfo`` runs all.
LAYOUT_SUBSET = 2
#: Cases the layout dimension leaves out: (OpInfo name, sample name or None for every sample)
#: -> (layouts, reason). Only where the loop's own answer is not NumPy's contract.
LAYOUT_EXCLUDED = {
    ("sklearn.metrics._pairwise_fast._chi2_kernel_fast", None): (
        ("broadcast", "readonly"),
        "the kernel's typed memoryviews refuse read-only memory (ValueError per example); the "
        "rule hands read-only inputs to the per-example loop, which raises it, since a read-only "
        "physical value may also be vmap's own view of an unmapped argument"),
    ("ma.filled", None): (
        LAYOUTS,
        "per example np.ma.filled returns the data itself (a view) where nothing is masked "
        "and a copy otherwise; where the examples differ, vmap's one copy is read-only, so a "
        "write into it raises where the loop writes (docs/semantics.md, masked arrays; "
        "tests/test_masked.py checks the view, the copy and the refusal)"),
    ("ma.getdata", None): (
        ("readonly",),
        "NumPy's MaskedArray over a read-only strided view is writeable (a NumPy bug: the "
        "loop writes into read-only memory); vmap's stays read-only"),
    ("setitem", "index array"): (
        ("negative", "F", "transposed"),
        "the sample's index repeats positions, and for repeated indices NumPy does not define "
        "which write wins (it follows the memory order, so the loop's winner depends on the "
        "layout)"),
    **{(name, sample): (
        ("negative", "F", "transposed"),
        "the sample's indices repeat positions; NumPy does not define which of the repeated "
        "writes wins, and per example it follows the index's logical order for 1-d indices and "
        "the memory order for some others, so the loop's winner depends on the layout (vmap "
        "writes in the logical order: rules.indexing.in_c_order)")
       for name, sample in [("setitem", "2-d index, broadcast value"),
                            ("setitem", "two indices"),
                            ("put_along_axis", "axis=1"), ("put_along_axis", "axis=0"),
                            ("put_along_axis", "axis=-1, duplicate indices")]},
    **{(name, sample): (
        ("broadcast", "readonly"),
        "NumPy 2.4's ufunc.at writes into a read-only array with these indices (a NumPy bug; "
        "vmap raises NumPy's read-only error, docs/semantics.md)")
       for name, sample in [("add.at", "tuple of index lists"),
                            ("maximum.at", "tuple of index lists"),
                            ("multiply.at", "tuple of index lists"),
                            ("add.at.batched_indices", "batched indices"),
                            ("add.at.batched_indices", "repeated and negative indices"),
                            ("add.at.batched_indices", "0-d b"),
                            ("add.at.batched_indices", "empty index"),
                            ("add.at.batched_index_pair", "two index arrays")]},
}
#: Cases left out while another change fixes them, in the same form (none at present).
FIXED_SEPARATELY: dict = {}


def layout_excluded(info: OpInfo, sample: SampleInput, layout: str) -> bool:
    for table in (LAYOUT_EXCLUDED, FIXED_SEPARATELY):
        for key in ((info.name, sample.name), (info.name, None)):
            if key in table and layout in table[key][0]:
                return True
    return False


def lay_out(a: np.ndarray, ax: int, layout: str) -> np.ndarray:
    """``a`` (batch axis ``ax``) with the same logical values in the physical ``layout``."""
    if layout == "C":
        return np.array(a, order="C", copy=True)
    if layout == "F":
        return np.array(a, order="F", copy=True)
    if layout == "readonly":
        out = np.array(a, order="C", copy=True)
        out.flags.writeable = False
        return out
    if layout == "negative":
        rev = (slice(None, None, -1),) * a.ndim
        return np.ascontiguousarray(a[rev])[rev]
    front = np.moveaxis(a, ax, 0)
    if layout == "transposed":
        perm = (0,) + tuple(range(a.ndim - 1, 0, -1))  # an involution: its own inverse
        buf = np.ascontiguousarray(np.transpose(front, perm))
        return np.moveaxis(np.transpose(buf, perm), 0, ax)
    if layout == "broadcast":
        one = np.ascontiguousarray(front[:1])
        return np.moveaxis(np.broadcast_to(one, front.shape), 0, ax)
    raise ValueError(f"unknown layout {layout!r}")


def layout_cases(ndims: list[int]) -> list[tuple]:
    """Every (layout, in_axes) case of a sample: all arguments at axis 0, or all last."""
    axes = list(dict.fromkeys([tuple(0 for _ in ndims), tuple(ndims)]))
    return [(layout, ax) for ax in axes for layout in LAYOUTS]


def _new_value(o, rounding_safe: bool = True):
    """A value of ``o``'s dtype that differs from ``o`` everywhere (NaN included), for every
    dtype: 0 where ``o`` is 1, else 1 (for bool: ``not o``); field by field for a structured
    dtype."""
    if o.dtype.names:
        new = np.empty_like(o)
        for name in o.dtype.names:
            new[name] = _new_value(o[name], rounding_safe)
        return new
    if o.dtype.kind in "fc" and rounding_safe:
        # (not 0 / 1 by o == 1: a float that is 1 in the loop may be 1 - 1e-16 under vmap,
        # equal to rounding, and would get another value written)
        return np.where(o == 1234.5, 0, 1234.5).astype(o.dtype)
    return np.where(o == 1, 0, 1).astype(o.dtype)


def _rounding_safe(info) -> bool:
    """numpy.ma's outputs keep the 0 / 1 writes: a reduction of an all-masked example returns
    np.ma.masked, which leaves a write alone, and the 0 / 1 values are what this sweep has
    always compared there."""
    return not info.name.startswith("ma.")


def _write_outputs(out, writable: list[int], log: list, rounding_safe: bool = True) -> tuple:
    """Copies of the outputs, then a write into each output leaf in ``writable``, then copies
    again; ``log`` gets, per written leaf, None or the type of the exception the write raised."""
    leaves, td = flatten(out)
    before = list(leaves)
    for k in writable:
        if k < len(leaves):
            before[k] = np.copy(leaves[k])
    raised = []
    for k in writable:
        if k >= len(leaves):
            raised.append(IndexError)
            continue
        o = leaves[k]
        try:
            o[...] = _new_value(o, rounding_safe)
            raised.append(None)
        except Exception as e:  # noqa: BLE001  (the loop's behaviour is the expectation)
            raised.append(type(e))
    log.append(raised)
    after = [np.copy(leaves[k]) for k in writable if k < len(leaves)]
    return unflatten(td, before), after


def _layout_physicals(examples_leaves, arrays, axes, layout) -> list:
    batch = len(examples_leaves)
    return [lay_out(np.stack([examples_leaves[i][j] for i in range(batch)], axis=ax), ax, layout)
            for j, ax in zip(arrays, axes)]


def _layout_loop(info, td, static, arrays, axes, physicals, writable, zero_d_arrays):
    """The loop over views of the physical arrays, as ``for x in np.moveaxis(xs, ax, 0)``
    gives them: (per-example outputs, write logs, inputs after, exception)."""
    fronts = [np.moveaxis(p, ax, 0) for p, ax in zip(physicals, axes)]
    outs, logs, ins = [], [], []
    for i in range(fronts[0].shape[0]):
        leaves = list(static)
        for j, f in zip(arrays, fronts):
            leaves[j] = f[i, ...] if zero_d_arrays else f[i]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = _call(info, td, leaves)
                if writable is None:  # the first example decides which outputs are written
                    ol = flatten(out)[0]
                    writable = [k for k, o in enumerate(ol) if type(o) is np.ndarray]
                ins.append([np.copy(leaves[j]) for j in arrays] if info.inplace is not None
                           else [])
                outs.append(_write_outputs(out, writable, logs, _rounding_safe(info)))
        except Exception as e:  # noqa: BLE001  (the loop's exception is the expectation)
            return None, None, writable, e, ins
    return outs, logs, writable, None, ins


def run_layout(info, dtype, examples, arrays, td, axes, layout, where) -> list:
    """One layout case: the mapped inputs in ``layout``, the loop over views of the same
    physical arrays. Compares the outputs (values, shape, dtype), then writes into every array
    output and compares whether each write raised (and its type) and the inputs after the
    writes: a view where the loop copies, a copy where the loop views, or another
    writeability shows there."""
    batch = 4
    ex_leaves = [_structure(e)[0] for e in examples[:batch]]
    static = list(ex_leaves[0])
    # The loop first (it decides which outputs are arrays and so get written), on its own
    # copy of the physical arrays; 0-d examples are NumPy scalars, as ``for x in xs`` gives.
    zero_d = any(ex_leaves[0][j].ndim == 0 for j in arrays)
    loop_phys = _layout_physicals(ex_leaves, arrays, axes, layout)
    want, logs, writable, ref_exc, ins = _layout_loop(info, td, static, arrays, axes, loop_phys,
                                                      None, False)
    lenient = zero_d and ref_exc is not None and info.inplace is None
    if lenient:
        # NumPy refuses the scalar where it takes a 0-d array (like=, .dot): vmap may be the
        # more lenient. The values are then compared with the loop over 0-d arrays, but not
        # the memory behaviour: a 0-d array example is a view, a scalar shares nothing.
        loop_phys = _layout_physicals(ex_leaves, arrays, axes, layout)
        want, logs, writable, ref_exc, ins = _layout_loop(info, td, static, arrays, axes,
                                                          loop_phys, None, True)
    writable = writable or []
    vmap_phys = _layout_physicals(ex_leaves, arrays, axes, layout)
    log: list = []
    inplace_pos = arrays.index(info.inplace) if info.inplace is not None else None

    def g(*arrs):
        leaves = list(static)
        for j, a in zip(arrays, arrs):
            leaves[j] = a
        out = _call(info, td, leaves)
        written = [np.copy(arrs[inplace_pos])] if inplace_pos is not None else []
        return _write_outputs(out, writable, log, _rounding_safe(info)), written

    run = _Run(info, examples[0])
    got, exc = run(lambda: bt.vmap(g, in_axes=tuple(axes))(*vmap_phys))
    if ref_exc is not None:
        _expect_error(where, exc, ref_exc, got)
        return run.paths
    try:
        stacked = _stack_outputs([o for o, _ in want])
        stacked_after = _stack_outputs([a for _, a in want])
    except ValueError as e:
        if not isinstance(exc, bt.BatchingError):
            raise SweepFailure(f"{where}: the per-example results cannot be stacked ({e}), so "
                               f"vmap must raise BatchingError; it gave "
                               f"{type(exc).__name__ if exc else 'a result'}") from None
        return run.paths
    if exc is not None:
        if _documented_error(examples[0], exc):
            return run.paths
        _fail_exc(where, exc)
    (got_out, got_after), got_written = got
    compare(info, dtype, got_out, stacked, where)
    if inplace_pos is not None:
        compare(info, dtype, got_written[0], np.stack([i[inplace_pos] for i in ins]),
                f"{where}: the in-place write")
    if lenient:
        return run.paths
    if len({tuple(map(str, lg)) for lg in logs}) == 1:  # every example agrees
        want_log, got_log = logs[0], log[-1] if log else None
        if got_log is None or len(got_log) != len(want_log) or any(
                (g is None) != (w is None) or (g is not None and not issubclass(g, w))
                for g, w in zip(got_log, want_log)):  # the loop's type, or a subclass of it
            def show(lg):
                return [("writes" if t is None else f"raises {t.__name__}") for t in lg or []]
            raise SweepFailure(f"{where}: writing into the outputs {writable}: the loop "
                               f"{show(want_log)}, vmap {show(got_log)}")
    compare(info, dtype, got_after, stacked_after, f"{where}: the outputs after the writes")
    for n, (g_phys, w_phys) in enumerate(zip(vmap_phys, loop_phys)):
        if not _same_input(g_phys, w_phys, info, dtype):
            orig = _layout_physicals(ex_leaves, [arrays[n]], [axes[n]], layout)[0]
            moved = {True: "changed", False: "unchanged"}
            raise SweepFailure(
                f"{where}: after writing into the outputs {writable}, array argument {n} is "
                f"{moved[not _same_input(g_phys, orig, info, dtype)]} under vmap but "
                f"{moved[not _same_input(w_phys, orig, info, dtype)]} in the loop: a view "
                f"where the loop copies, or a copy where it views")
    return run.paths


def _same_input(g, w, info, dtype) -> bool:
    """Floats to the op's tolerance (NaN where NaN); every other dtype bit for bit (NaT and
    NaN inside a structured dtype are not equal to themselves)."""
    if g.shape != w.shape or g.dtype != w.dtype:
        return False
    if g.dtype.kind in "fc":
        rtol, atol = info.tolerances(dtype)
        return bool(np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True))
    return g.tobytes() == w.tobytes()


def sweep_op(info: OpInfo, dtype, *, max_samples: int | None = None,
             raise_first: bool = True, layouts: int | None = None, backend: str = "numpy",
             max_combos: int = MAX_COMBOS,
             select: Callable[[int], bool] | None = None) -> SweepResult:
    """Run every variant for every sample of ``info`` at ``dtype``. ``layouts``: how many
    (layout, in_axes) cases of the layout dimension each sample runs, rotating by entry and
    sample (None: all of them). ``backend="duck"``: the physical inputs are DuckArrays
    (``opinfo/duck.py``); the layout dimension, which checks NumPy's memory semantics
    (read-only views, CuPy has none), does not run, nor do the samples that
    ``opinfo/backends.py`` marks as expected differences (the entries it excludes are the
    caller's to leave out: ``backends.duck_excluded``). ``max_combos`` caps the in_axes
    combinations per sample; ``select(k)`` false leaves sample ``k`` out."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    result = SweepResult(info, dtype)
    turn = int(hashlib.sha256(f"{info.name}:{np.dtype(dtype)}".encode()).hexdigest()[:8], 16)
    samples = draw_examples(info, dtype)
    if max_samples is not None:
        samples = samples[:max_samples]
    seed = int(hashlib.sha256(info.name.encode()).hexdigest()[:8], 16)
    rng = np.random.default_rng(seed)
    for k, examples in enumerate(samples):
        if select is not None and not select(k):
            continue
        expected = duck_expected(info, examples[0]) if backend == "duck" else None
        result.expected += expected is not None
        if expected is not None and expected[0] == "all":
            continue
        result.samples += 1
        try:
            arrays = check_structure(info, examples)
            leaves, td = _structure(examples[0])
            if not arrays:
                raise SweepFailure(f"{info.name} {examples[0]!r}: no array argument to map")
            if not examples_differ(examples, arrays):
                raise SweepFailure(f"{info.name} {examples[0]!r}: every example is the same; "
                                   f"draw the arrays from rng so batch slices differ")
            ndims = [leaves[j].ndim for j in arrays]
            combos = in_axes_combos(ndims, rng, max_combos)
            head = f"{info.name}[{np.dtype(dtype)}] sample {k} {examples[0]!r}"
            if backend != "numpy":
                head += f" on the {backend} backend"
            paths: list = []
            for batch in BATCH_SIZES:
                for axes in combos:
                    where = f"{head}, B={batch}, in_axes={axes}"
                    paths += run_variant(info, dtype, examples, arrays, td, list(axes), batch,
                                         where=where, backend=backend)
                    result.runs += 1
            last = combos[1] if len(combos) > 1 else combos[0]
            paths += run_variant(info, dtype, examples, arrays, td, list(last), 4,
                                 noncontig=True, where=f"{head}, non-contiguous, in_axes={last}",
                                 backend=backend)
            paths += run_variant(info, dtype, examples, arrays, td, list(combos[0]), 4, chunk=3,
                                 where=f"{head}, chunk_size=3, in_axes={combos[0]}",
                                 backend=backend)
            result.runs += 2
            if info.skip_nested is None and expected is None:
                for axes in combos[:2]:
                    paths += run_nested(info, dtype, examples, arrays, td, list(axes),
                                        f"{head}, nested, in_axes={axes}", backend=backend)
                paths += run_nested(info, dtype, examples, arrays, td, list(combos[0]),
                                    f"{head}, inner vmap under an empty outer level",
                                    inner_only=True, backend=backend)
                result.runs += 3
            cases = layout_cases(ndims) if backend == "numpy" else []
            if layouts is not None and layouts < len(cases):
                start = (turn + k * layouts) % len(cases)
                cases = [cases[(start + n) % len(cases)] for n in range(layouts)]
            for layout, axes in cases:
                if layout_excluded(info, examples[0], layout):
                    continue
                paths += run_layout(info, dtype, examples, arrays, td, list(axes), layout,
                                    f"{head}, layout {layout}, in_axes={axes}")
                result.layout_runs += 1
            _check_paths(info, examples[0], paths, head)
            result.paths |= {p for op, p in paths if op is info.covers or op == info.covers}
        except SweepFailure as e:
            if raise_first:
                raise
            result.failures.append(str(e))
    return result


def _check_paths(info: OpInfo, sample: SampleInput, paths: list, where: str) -> None:
    mine = {p for op, p in paths if op is info.covers or op == info.covers}
    if not mine:
        return  # every variant raised before dispatch (error samples)
    if sample.loop_reason is not None:
        return
    if info.path != "loop" and "loop" in mine:
        raise SweepFailure(f"{where}: {info.name} took the loop fallback, expected {info.path}")
    # (Some ops have several vectorised paths, e.g. a rule for like= creation and a
    # decomposition for batched arguments: tests/test_opinfo.py checks that the declared path
    # served at least one sample.)
