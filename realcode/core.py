"""The corpus's machinery: an entry per library function, the four ways of mapping it, and one
run of an entry against the per-example loop.

An :class:`Entry` names a library function by module and attribute (imported on first use, never
re-typed) and draws one example's array arguments with ``gen(rng, dtype, size)``; every draw
is a different example. A run stacks such examples into a batch, calls the function once per
example (the reference: the loop's ``np.stack``, ``np.ma.stack`` for masked results), then ``bt.vmap`` with ``fallback="error"``
(fully vectorised or not) and with the default fallback (per-op loop or whole-function rerun
allowed), and compares each with the reference as the tests do: same tree, shape, dtype, NaN
places, values to rounding.
"""

from __future__ import annotations

import functools
import importlib
import linecache
import operator
import os
import traceback
import warnings
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable

import numpy as np

import batchtensor as bt
from batchtensor.pytree import flatten
from batchtensor.registry import record_paths
from batchtensor.tensor import is_plain_array

__all__ = ["Entry", "Status", "Outcome", "VARIANTS", "BATCH", "NESTED", "run_case", "run_entry",
           "cases", "compare", "Unavailable"]

#: examples per batch; the nested variant maps a (2, 3) grid of examples
BATCH = 3
NESTED = (2, 3)
#: in_axes 0, batch axis last, some arguments shared (in_axes None), vmap of vmap
VARIANTS = ("in_axes=0", "in_axes=-1", "partial", "nested")

#: pip names of the libraries, for the skip reasons
PIP_NAMES = {"sklearn": "scikit-learn", "skimage": "scikit-image", "scipy": "scipy",
             "astropy": "astropy"}


class Unavailable(Exception):
    """The entry's library is not installed (its entries skip with this reason)."""


class Status(str, Enum):
    VECTORISED = "vectorised"  # fallback="error" gives the loop's result
    PER_OP_LOOP = "per-op loop"  # vectorised but for ops the per-op loop served
    GROUPS = "groups"  # vectorised per group of examples that take the same branches
    RERUN = "rerun"  # the whole function reran once per example
    WRONG = "WRONG"  # a result that differs from the loop, with no error
    ERROR = "error"  # the default path raised
    INVALID = "invalid example"  # the per-example loop itself raised: a bug of the corpus
    SKIPPED = "skipped"  # the library is missing


@dataclass(frozen=True)
class Entry:
    """One library function and how to draw its examples.

    - ``module``, ``attr``: where it lives (``attr`` may be dotted: ``"norm.pdf"``).
    - ``gen(rng, dtype, size)``: one example's array arguments (a tuple); each call draws a
      different example. ``dtypes`` and ``sizes`` are the cases it is drawn for.
    - ``args``, ``kwargs``: fixed, unmapped arguments bound in front of the arrays and as
      keywords (``functools.partial``).
    - ``shared``: positions of ``gen``'s tuple left unmapped (``in_axes=None``, example 0's
      value for every example) in the partial variant; default all but the first, and no
      partial variant for one argument.
    - ``rtol``: tolerance of float comparisons where the default (1e-10 for 64-bit, 1e-4 for
      32-bit floats) is too tight for a library's own iterative arithmetic.
    - ``not_applicable``: ``{variant: reason}`` for a variant whose per-example loop itself
      cannot run (the library refuses the loop's views), so there is nothing to compare with.
    """

    module: str
    attr: str
    gen: Callable[..., tuple]
    dtypes: tuple = (np.float64,)
    sizes: tuple = (8,)
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    shared: tuple | None = None
    rtol: float | None = None
    label: str = ""
    not_applicable: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        """``module.attr`` plus the label that tells two entries of one function apart."""
        return f"{self.module}.{self.attr}" + (f"[{self.label}]" if self.label else "")

    @property
    def function_name(self) -> str:
        return f"{self.module}.{self.attr}"

    @property
    def library(self) -> str:
        return self.module.split(".")[0]

    def function(self) -> Callable:
        """The library's function, with ``args`` and ``kwargs`` bound."""
        try:
            obj: Any = importlib.import_module(self.module)
        except ImportError as e:
            lib = self.library
            raise Unavailable(f"{PIP_NAMES.get(lib, lib)} is not installed (pip install "
                              f"{PIP_NAMES.get(lib, lib)}): {e}") from e
        for part in self.attr.split("."):
            obj = getattr(obj, part)
        if self.args or self.kwargs:
            return functools.partial(obj, *self.args, **self.kwargs)
        return obj

    def shared_positions(self, nargs: int) -> tuple:
        return tuple(range(1, nargs)) if self.shared is None else self.shared

    def nargs(self) -> int:
        """How many arrays one example passes (0 where drawing one needs a missing library)."""
        try:
            return len(self.gen(np.random.default_rng(0), self.dtypes[0], self.sizes[0]))
        except ImportError:
            return 0

    def variants(self) -> tuple:
        """The variants that apply: no partial mapping of a single argument."""
        n = self.nargs()
        if n and not self.shared_positions(n):
            return tuple(v for v in VARIANTS if v != "partial")
        return VARIANTS


def cases(entry: Entry) -> list[tuple[str, Any, Any]]:
    """``(label, dtype, size)`` for each case of ``entry``."""
    return [(f"{np.dtype(dt).name} {size}", dt, size)
            for dt in entry.dtypes for size in entry.sizes]


@dataclass
class Outcome:
    """One entry, variant and case: its status, and the first error of the strict
    (``fallback="error"``) pass with the library line it came from."""

    entry: str
    variant: str
    case: str
    status: Status
    strict_error: str = ""  # "TypeError: message" of the fallback="error" pass
    where: str = ""  # "sklearn/metrics/_regression.py:604: return float(...)"
    loop_ops: tuple = ()  # the ops the per-op loop served in the default pass
    detail: str = ""  # what differed (WRONG) or the default pass's error (error)
    rerun_warning: str = ""  # the whole-function rerun's PerformanceWarning


# ---- comparison with the loop -------------------------------------------------------------------
def _tolerance(dtype: np.dtype, rtol: float | None) -> float:
    if rtol is not None:
        return rtol
    return 1e-4 if dtype in (np.float32, np.complex64, np.float16) else 1e-10


def compare(got: Any, want: Any, rtol: float | None = None, kind: type | None = None,
            computed_in: Any = None) -> str:
    """'' when ``got`` is the loop's ``want`` (same tree, shapes, dtypes; integers and booleans
    exact, floats to rounding, NaN and inf in the same places), else what differs. ``kind``:
    the type of one example's result where it is a tuple (the batched result keeps it).
    ``computed_in``: the dtype of the inputs, whose rounding bounds the results' too (a
    float32 computation returned as a Python float is a float64 result)."""
    if kind is not None and type(got) is not kind:
        return f"the result is a {type(got).__name__}, the loop's a {kind.__name__}"
    gl, _ = flatten(got)
    wl, _ = flatten(want)
    if len(gl) != len(wl):
        return f"{len(gl)} result arrays, the loop has {len(wl)}"
    for k, (g, w) in enumerate(zip(gl, wl)):
        at = f"result {k}: " if len(wl) > 1 else ""
        if isinstance(g, np.ma.MaskedArray) or isinstance(w, np.ma.MaskedArray):
            # masked results: the same elements masked, the same data elsewhere (numpy.ma
            # leaves the data under a mask unspecified: np.ma.masked holds 0)
            mg, mw = np.ma.getmaskarray(g), np.ma.getmaskarray(w)
            if mg.shape == mw.shape and not np.array_equal(mg, mw):
                return f"{at}masked in other places than the loop's"
            g = np.where(mg, 0, np.ma.getdata(g)) if mg.shape == mw.shape else np.ma.getdata(g)
            w = np.where(mw, 0, np.ma.getdata(w))
        if not is_plain_array(g):
            return f"{at}a {type(g).__name__}, not an ndarray"
        if g.shape != w.shape:
            return f"{at}shape {g.shape}, the loop's {w.shape}"
        if g.dtype != w.dtype:
            return f"{at}dtype {g.dtype}, the loop's {w.dtype}"
        if w.dtype.kind in "fc":
            if not np.array_equal(np.isnan(g), np.isnan(w)):
                return f"{at}NaN in other places than the loop's"
            tol = _tolerance(w.dtype, rtol)
            if computed_in is not None:
                tol = max(tol, _tolerance(np.dtype(computed_in), rtol))
            try:
                np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True)
            except AssertionError as e:
                lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
                return f"{at}values differ: " + "; ".join(lines[1:4])
        elif w.dtype.kind == "O":
            return f"{at}an object array (cannot be compared)"
        elif not np.array_equal(g, w):
            return f"{at}values differ: {np.count_nonzero(g != w)} of {w.size}"
    return ""


# ---- batches ------------------------------------------------------------------------------------
def _stack_results(results: list) -> Any:
    """The loop's result: each leaf of the per-example results stacked on axis 0 (a plain
    tuple of them where the example's result is a tuple, a single array otherwise)."""
    leaves = [flatten(r)[0] for r in results]
    stacked = []
    for j in range(len(leaves[0])):
        col = [np.asarray(ex[j]) for ex in leaves]
        if col[0].dtype.kind not in "biufc":
            raise TypeError(f"result {j} is a {type(leaves[0][j]).__name__}, not numbers: "
                            f"the corpus takes functions that return arrays")
        if any(isinstance(ex[j], np.ma.MaskedArray) for ex in leaves):
            stacked.append(np.ma.stack([ex[j] for ex in leaves]))  # as vmap stacks them
            continue
        stacked.append(np.stack(col))
    return tuple(stacked) if isinstance(results[0], (tuple, list)) else stacked[0]


def _stack_args(examples: list[tuple], axis: int) -> list:
    return [np.stack([np.asarray(ex[j]) for ex in examples], axis=axis)
            for j in range(len(examples[0]))]


def _draw(entry: Entry, rng, dtype, size, n: int) -> list[tuple]:
    return [tuple(entry.gen(rng, dtype, size)) for _ in range(n)]


def _example(batch: list, axes: tuple, i: int) -> list:
    """Example ``i`` as the loop sees it: a view of each mapped argument at ``i``."""
    return [b if ax is None else b[(slice(None),) * (ax % b.ndim) + (i,)]
            for b, ax in zip(batch, axes)]


def _copy(batch: list) -> list:
    return [np.copy(b, order="K") for b in batch]


def _variant_call(entry: Entry, variant: str, f: Callable, rng, dtype, size):
    """``(reference, call, batch, kind, after)``: the loop's result (``f`` on views of each
    example of a copy of the batch, as ``for x in xs`` gives them, stacked); a function that
    runs ``bt.vmap`` of ``f`` on given arguments with given keyword arguments; the batch; the
    type of one example's result where it is a tuple; and the loop's arguments after it ran
    (a write into them must reach vmap's arguments alike)."""
    if variant == "nested":
        grid = [_draw(entry, rng, dtype, size, NESTED[1]) for _ in range(NESTED[0])]
        batch = _stack_args([tuple(_stack_args(row, 0)) for row in grid], 0)
        zeros = (0,) * len(batch)
        mine = _copy(batch)
        results = [[f(*_example(outer, zeros, j)) for j in range(NESTED[1])]
                   for outer in (_example(mine, zeros, i) for i in range(NESTED[0]))]
        want = _stack_results([_stack_results(row) for row in results])

        def call(args, **kw):
            return bt.vmap(bt.vmap(f, **kw), **kw)(*args)
        return want, call, batch, _kind(results[0][0]), mine
    examples = _draw(entry, rng, dtype, size, BATCH)
    nargs = len(examples[0])
    axis = -1 if variant == "in_axes=-1" else 0
    shared = entry.shared_positions(nargs) if variant == "partial" else ()
    batch = [examples[0][j] if j in shared else b
             for j, b in enumerate(_stack_args(examples, axis))]
    in_axes = tuple(None if j in shared else axis for j in range(nargs))
    mine = _copy(batch)
    results = [f(*_example(mine, in_axes, i)) for i in range(BATCH)]

    def call(args, **kw):
        return bt.vmap(f, in_axes, **kw)(*args)
    return _stack_results(results), call, batch, _kind(results[0]), mine


def _kind(result) -> type | None:
    return type(result) if isinstance(result, (tuple, list)) else None


# ---- one run ------------------------------------------------------------------------------------
def _library_frame(e: BaseException) -> str:
    """``path:line: source`` of the innermost Python frame of the traceback outside
    batchtensor, NumPy and this package (the library's line that met the error)."""
    skip = (os.sep + "batchtensor" + os.sep, os.sep + "numpy" + os.sep,
            os.sep + "realcode" + os.sep, os.sep + "functools.py", os.sep + "contextlib.py")
    best = ""
    for fr in traceback.extract_tb(e.__traceback__):
        if any(s in fr.filename for s in skip) or not fr.filename.endswith(".py"):
            continue  # (compiled frames, "<stringsource>", name no source line)
        path = fr.filename
        for marker in ("site-packages" + os.sep, "dist-packages" + os.sep):
            if marker in path:
                path = path.split(marker, 1)[1]
        src = (fr.line or linecache.getline(fr.filename, fr.lineno)).strip()
        best = f"{path}:{fr.lineno}: {src}"
    return best


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"


def run_case(entry: Entry, variant: str, case: tuple, seed: int = 0,
             strict: bool = True) -> Outcome:
    """Run ``entry`` mapped as ``variant`` on one case against the per-example loop.
    ``strict=False`` skips the ``fallback="error"`` pass (the tests need only the default
    path; a run that passes is then reported as a per-op loop or a rerun, or vectorised)."""
    label, dtype, size = case
    out = Outcome(entry.name, variant, label, Status.SKIPPED)
    try:
        f = entry.function()
    except Unavailable as e:
        out.detail = str(e)
        return out
    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the libraries' own warnings, as in the loop
        try:
            want, call, batch, kind, after = _variant_call(entry, variant, f, rng, dtype, size)
        except Exception as e:  # noqa: BLE001
            out.status, out.detail = Status.INVALID, "the loop raised: " + _first_line(e)
            return out
        args = _copy(batch)
        # 1. fully vectorised: no per-op loop, no rerun
        if strict:
            try:
                got = call(args, fallback="error")
            except Exception as e:  # noqa: BLE001  (any error is the finding)
                out.strict_error = _first_line(e)[:400]
                out.where = _library_frame(e)[:300]
            else:
                diff = compare(got, want, entry.rtol, kind, dtype)
                out.status = Status.WRONG if diff else Status.VECTORISED
                out.detail = f"fallback='error': {diff}" if diff else ""
    # a pass that returns must leave its arguments as the loop left its own
    written = [] if out.status is Status.SKIPPED else _written(args, after)
    # 2. the default fallback, with its warnings and the ops the per-op loop served
    if out.status is Status.SKIPPED:
        args = _copy(batch)
        with warnings.catch_warnings(record=True) as caught, record_paths() as paths:
            warnings.simplefilter("always")
            try:
                got = call(args)
            except Exception as e:  # noqa: BLE001
                out.status = Status.ERROR
                out.detail = _first_line(e)[:400]
                out.where = _library_frame(e)[:300]  # where the default pass failed
                return out
        diff = compare(got, want, entry.rtol, kind, dtype)
        reruns = [str(w.message) for w in caught if issubclass(w.category, bt.PerformanceWarning)
                  and "reruns once per example" in str(w.message)]
        rerun = bool(reruns)
        grouped = [str(w.message) for w in caught if issubclass(w.category, bt.PerformanceWarning)
                   and "each group of examples" in str(w.message)]
        out.rerun_warning = (reruns or grouped or [""])[0][:600]
        out.loop_ops = tuple(sorted({_op_name(op) for op, path in paths if path == "loop"}))
        if diff:
            out.status, out.detail = Status.WRONG, diff
        elif rerun:
            out.status = Status.RERUN
        elif grouped:
            out.status = Status.GROUPS
        elif out.loop_ops or strict:
            out.status = Status.PER_OP_LOOP
        else:
            out.status = Status.VECTORISED
        written += _written(args, after)
    if written:
        out.status = Status.WRONG
        out.detail = (out.detail + "; " if out.detail else "") + \
            f"argument(s) {sorted(set(written))} differ from the loop's after the call"
    return out


def _written(args: list, after: list) -> list[int]:
    return [j for j, (a, b) in enumerate(zip(args, after)) if not _same_array(a, b)]


def _same_array(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


def _op_name(op) -> str:
    name = getattr(op, "__name__", None) or repr(op)
    if isinstance(op, np.ufunc):  # NumPy's, or a library's own (astropy's gufuncs)
        return f"np.{name}" if getattr(np, name, None) is op else f"ufunc {name}"
    if op is operator.getitem or op is operator.setitem:
        return f"x[...] ({name})"
    mod = (getattr(op, "__module__", None) or "").replace("numpy", "np")
    return f"{mod}.{name}" if mod else name


def run_entry(entry: Entry, seed: int = 0) -> list[Outcome]:
    """Every variant and case of ``entry``."""
    try:
        entry.function()
    except Unavailable as e:
        return [Outcome(entry.name, "all", "", Status.SKIPPED, detail=str(e))]
    out = []
    for v in entry.variants():
        if v in entry.not_applicable:
            out.append(Outcome(entry.name, v, "", Status.SKIPPED,
                               detail=entry.not_applicable[v]))
            continue
        out += [run_case(entry, v, c, seed) for c in cases(entry)]
    return out
