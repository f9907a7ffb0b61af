"""Why a run was not fully vectorised: each outcome's first error (or the ops the per-op loop
served) sorted into a cause, with a line that says why it happens.

The table is ordered: the first cause whose pattern matches the message or the library line
wins. A message that matches none is its own cause (its type and first words)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .core import Outcome, Status

__all__ = ["Cause", "CAUSES", "cause_of"]


@dataclass(frozen=True)
class Cause:
    key: str
    title: str
    why: str
    pattern: str = ""  # searched in "message | library line"


CAUSES = [
    # ---- errors: the default path fails (no rerun reason is raised) ----------------------------
    Cause("issubclass-ndarray", "array-API helpers do not take a BatchedTensor for a NumPy array",
          "SciPy's and scikit-learn's array-API layer (array_api_compat) classifies arrays by "
          "`issubclass(type(x), numpy.ndarray)`. BatchedTensor passes `isinstance(x, "
          "np.ndarray)` but not that class check, and has no `__array_namespace__` or "
          "`device`, so the layer reads `x.device` (absent), finds no namespace, or "
          "(array_api_extra's `at`) takes it for a read-only array. The error is not a "
          "rerun reason, so the call fails.",
          r"no attribute 'device'|is not a supported array type|Can't update read-only array"),
    Cause("flags", "`x.flags` is missing",
          "scipy.fft (pocketfft) and scipy.linalg's BLAS lookup read `x.flags` "
          "(ALIGNED, fortran) of the batched value; BatchedTensor has no `flags`, and the "
          "AttributeError is not a rerun reason.",
          r"no attribute 'flags'"),
    Cause("flat", "`x.flat` is missing",
          "The library reads or writes through `x.flat` (`D.flat[::n+1] = 0`, `x.flat[0]`, "
          "`np.cov(...).flat`); BatchedTensor has no `flat`.",
          r"no attribute 'flat'"),
    Cause("base", "`x.base` is missing",
          "scipy.spatial.distance.squareform checks `a.base`; BatchedTensor has no `base`.",
          r"no attribute 'base'"),
    Cause("scalar-target", "a write into a 0-d value taken for a NumPy scalar per example",
          "`x[idx] = y` into a value vmap keeps a NumPy scalar per example (a reduction's "
          "result, `x[i]`), which NumPy cannot write into: the write is refused. "
          "array_api_extra's `at(x, idx).set(y)` no longer gets here (vmap answers its "
          "`is_writeable_array` False for a scalar per example, as NumPy's scalar does, so it "
          "copies into a 0-d array first, as the loop's example does); a run here writes into "
          "a 0-d result that vmap takes for a scalar where the loop's is an array.",
          r"the target is a NumPy scalar in each example"),
    Cause("array-interface", "`x.__array_interface__` read where vmap does not reach "
          "`as_strided`",
          "Code that reads the memory interface of a batched value itself (NumPy's "
          "`as_strided` bound to a local name) needs one example's memory, which each example "
          "of the loop has: vmap reruns the function per example.",
          r"memory interface"),
    Cause("strided-layout", "`as_strided` of a value whose examples lie interleaved in memory",
          "A value computed from an input mapped along its last axis holds its examples "
          "interleaved in the batch's memory, while each example of the loop owns its memory: "
          "no view of the batch reads what the loop's `as_strided` would, so vmap reruns.",
          r"laid out differently in the batch"),
    Cause("unhashable", "elements of a batched array are hashed (`set(y)`)",
          "scikit-learn's `unique_labels` builds a `set` of the labels by iterating the "
          "array. Iterating a 1-d ndarray gives hashable NumPy scalars; iterating a batched "
          "one gives batched 0-d values, which are unhashable. The TypeError is not a rerun "
          "reason (a hash is a conversion to a Python scalar, as int() is).",
          r"unhashable type"),
    Cause("compiled-rejects", "compiled code rejects a BatchedTensor without converting it",
          "Cython typed memoryviews and fused functions, Pythran, pybind11 and f2py "
          "wrappers take their argument through the buffer protocol or a type check, not "
          "`__array__`, so no conversion error (no rerun reason) is raised: the call fails "
          "with the extension's own TypeError or ValueError.",
          r"No matching signature found|bytes-like object is required|incorrect type "
          r"\(expected numpy\.ndarray|pythranized function|must be numpy\.ndarray|"
          r"incompatible function arguments|C contiguous array|could not convert b, a, and x"),
    Cause("result-bunch", "SciPy's result objects cannot be rebuilt",
          "SciPy's results (`KstestResult`, ...) are tuples with extra keyword-only fields. "
          "The pytree takes them for namedtuples and rebuilds them with `type(r)(*fields)`, "
          "which misses the keyword fields, so stacking the rerun's results fails.",
          r"missing keyword argument"),
    Cause("plain-out", "a batched result written into a plain array through `out=`, "
          "`np.add.at` or `np.copyto`",
          "The library writes a batched result through a NumPy function's `out=` / `ufunc.at` "
          "/ `np.copyto` into an array a module other than the function's own made with a "
          "plain shape (`b = np.empty(n)` in scikit-image's `dtype._scale`). Into a buffer "
          "these writes promote it (`out[i] += v` too); here the dispatcher's SharedWriteError "
          "reruns the function, and unlike the conversion error of `out[i] = v` it does not "
          "teach vmap the array's call site (vmap asks `buffers.learn_from` about conversions "
          "only).",
          r"cannot write a batched result into|cannot write into `dst`"),
    Cause("roots-dtype", "`np.roots` is real for some examples and complex for others",
          "NumPy returns real roots when all are real; the examples disagree, so the batch "
          "cannot hold one dtype. The loop's np.stack promotes to complex; the vectorised "
          "pass raises a BatchingError instead, which is not a rerun reason.",
          r"numpy\.roots: the result is real"),
    Cause("masked-view", "masked arrays made of a batched value (`numpy.ma`)",
          "`numpy.ma` on a batched value is vectorised, in nested vmaps across every level "
          "(`batchtensor/masked.py`); a masked array meeting a value batched on another "
          "backend, or a value of a level the masked batch is not batched at written into "
          "it, reruns per example.",
          r"descriptor 'view'|viewed as an ndarray subclass|masked array meets|"
          r"vmap level that this masked value"),
    # ---- reruns: only a per-example run gives the loop's result ---------------------------------
    Cause("write-into-plain", "a batched value written into an array created inside `f` "
          "with a plain shape",
          "The library fills by indexing an array made with a plain shape where vmap does not "
          "make it a buffer (batched at the first batched write). In a module the function "
          "calls into, the failed write teaches vmap the call `out = np.zeros(...)` that made "
          "it (`buffers.MakerSites`: a buffer there in every pass after) or the module's "
          "makers bound by name (`zeros(n)`); a run still here wrote into an array made "
          "otherwise (by a method or an op: `w.copy()`, `np.asarray` of a list), kept beyond "
          "the call (a cache, a global, an attribute: shared state), or made at import. The "
          "write raises a conversion error and the function reruns.",
          r"cannot write a batched value or index into"),
    Cause("bound-asarray", "`asarray` bound at import (`from numpy import asarray`)",
          "The library calls NumPy's conversion through a name bound when it was imported, "
          "so swapping the `numpy` module's attributes while a level is open does not reach "
          "it; `__array__` raises. vmap then learns the module and runs the pass again with "
          "its names swapped (`buffers.learn_from`); a run still here converted through "
          "such a name on a line the learning could not tell (it reruns).",
          r"map\(asarray|= asarray\(|asarray\(t\)|tuple\(map\(asarray"),
    Cause("compiled-converts", "compiled code converts a batched value",
          "scipy.ndimage, scipy.signal's `_sigtools`, scipy.sparse, scipy.spatial's `cdist` "
          "and BLAS (`nrm2`) take their arguments as plain arrays in C; the conversion "
          "raises and the function reruns. A batch rule (`bt.primitive`) for the compiled "
          "function would keep it vectorised.",
          r"_nd_image\.|_sigtools\.|_rank_filter_1d|cdist_fn|coo_tocsr|nrm2\(|_medfilt2d"),
    Cause("float", "`float()` of a batched value",
          "The library converts to a Python float (scikit-learn's metrics return "
          "`float(score)`; scipy.signal's filter design and windows convert their "
          "parameters). One Python float cannot hold one value per example: rerun.",
          r"float\(\) on a BatchedTensor|converted \(float\(\)\)"),
    Cause("int", "`int()` of a batched value",
          "The library converts to a Python int (an image's minimum, a histogram size, a "
          "count): rerun.",
          r"int\(\) on a BatchedTensor|converted \(int\(\)\)"),
    Cause("index", "a batched value used as an index or size (`__index__`)",
          "`operator.index(np.max(idx))` for a sparse matrix's shape, a slice bound: the "
          "size differs per example, so only a per-example run can use it.",
          r"__index__"),
    Cause("control-flow", "a Python `if`/`while` on a batched value whose examples disagree",
          "Branching (`if a > 50`, `if xp.any(mask)`, `max(abs(u - v))`, a root finder's "
          "convergence test) takes different paths per example. vmap runs each group of "
          "examples that agree vectorised (status groups) unless groups cannot give the "
          "loop's result (a nested vmap's variant, randomness keyed per example, a group that "
          "writes into an argument) or would cost more than the loop: then it reruns.",
          r"ControlFlowError"),
    Cause("data-dependent", "a shape that depends on the data",
          "`np.nonzero`, `np.unique`, `np.flatnonzero`, a boolean mask or `np.bincount`'s "
          "length give each example a different size; where the ragged selection "
          "(values plus per-example counts) has no meaning for what follows, the function "
          "reruns.",
          r"DataDependentError"),
    Cause("numpy-converts", "a NumPy function without a batch rule for a batched argument",
          "`np.arange` with a batched bound, `np.transpose` of a list of batched values, "
          "`ndarray.searchsorted`, `np.float64(x)`, `np.linalg`'s `_makearray`, "
          "fancy indexing with a batched index array: NumPy converts the argument itself, "
          "`__array__` raises and the function reruns.",
          r"Converting to a NumPy array \(__array__\)|has no batch rule"),
]
BY_KEY = {c.key: c for c in CAUSES}


def cause_of(o: Outcome) -> tuple[str, str]:
    """``(key, title)`` of the cause of a run that was not fully vectorised: the default
    path's error for an error, the strict pass's error for a rerun, the loop-served ops for
    a per-op loop."""
    if o.status is Status.PER_OP_LOOP:
        ops = ", ".join(o.loop_ops) or "?"
        return f"loop:{ops}", f"per-op loop fallback: {ops} has no batch rule for its arguments"
    if o.status is Status.WRONG:
        return "wrong", "WRONG: " + o.detail
    if o.status is Status.INVALID:
        return "invalid", o.detail
    if o.status is Status.ERROR:
        text = o.detail
    elif o.status in (Status.RERUN, Status.GROUPS):
        # the reason of the rerun itself, and the strict pass's error, which is more precise
        # where it stopped at the same place (and may have stopped earlier, at an op the
        # per-op loop serves)
        text = o.rerun_warning + " || " + o.strict_error
    else:
        text = o.strict_error
    text += " | " + o.where
    for c in CAUSES:
        if c.pattern and re.search(c.pattern, text):
            return c.key, c.title
    first = re.sub(r"\d+", "N", text.split(" | ")[0])[:90]
    return f"other:{first}", first
