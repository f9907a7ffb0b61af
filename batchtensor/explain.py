"""``bt.explain``: which path served each op of one vmap call, and what it cost.

The dispatcher logs ``(op, path)`` for every call on a batched value while a log is open
(``registry.record_paths``); ``explain`` opens one that also keeps, per call, the time it was
made and, for the per-op loop, why the loop served it, and that hears of a whole-function
fallback (``api._warn_rerun``). The time of a call is the time from it to the next logged call
(or to the end of the run): the op and the Python code of ``f`` that runs before the next one.
"""

from __future__ import annotations

import threading
import time
import warnings
from typing import Any, Callable, NamedTuple

from .api import vmap
from .errors import PerformanceWarning
from .registry import RECORDERS, Path, op_name

__all__ = ["explain", "Explanation", "ExplainedOp"]

#: what the table says of each path
_PATHS = {Path.RULE: "rule", Path.BOXED: "boxed", Path.DECOMPOSITION: "decomposition",
          Path.LOOP: "per-op loop"}
_ADD_A_RULE = ("add one with bt.batch_rule(op) or bt.decomposition(op) "
               "(docs/writing_rules.md)")


class ExplainedOp(NamedTuple):
    """One row of ``Explanation.ops``: an op and the path that served it."""

    op: str  # as error messages name it: numpy.add, ndarray.sum, numpy.linalg.solve
    path: str  # rule, boxed, decomposition or per-op loop
    calls: int
    seconds: float  # from each call to the next logged one, summed
    share: float  # of the whole run's time
    note: str  # for the per-op loop: why, and how to add a rule


class _Log(list[tuple[Any, Path]]):
    """A ``record_paths`` log of the calls of the thread that opened it, with each call's
    time and the loop's reasons."""

    def __init__(self) -> None:
        super().__init__()
        self.thread = threading.get_ident()
        self.times: list[float] = []
        self.notes: dict[int, str] = {}
        self.whole: list[tuple[str, str, str, int]] = []

    def add(self, op: Any, path: Path, note: str | None) -> None:
        if threading.get_ident() != self.thread:
            return
        self.append((op, path))
        self.times.append(time.perf_counter())
        if note:
            self.notes[len(self) - 1] = note

    def rewind(self, n: int) -> None:
        """Forget the calls after the first ``n`` (``registry.record_rewind``)."""
        del self[n:], self.times[n:]
        self.notes = {i: note for i, note in self.notes.items() if i < n}

    def whole_function(self, func: str, reason: str, where: str, groups: int) -> None:
        if threading.get_ident() == self.thread:
            self.whole.append((func, reason, where, groups))


class Explanation:
    """What ``bt.explain`` found: ``result`` (what the vmap returned), ``ops`` (a row per op
    and path, in the order first called), ``whole_function`` (how the function as a whole ran,
    in words), ``seconds`` (the run's time). ``str()`` of it is a table."""

    def __init__(self, result: Any, ops: list[ExplainedOp], whole_function: str,
                 seconds: float) -> None:
        self.result = result
        self.ops = ops
        self.whole_function = whole_function
        self.seconds = seconds

    def __str__(self) -> str:
        head = ("op", "path", "calls", "time", "share", "note")
        rows = [(r.op, r.path, str(r.calls), f"{r.seconds * 1e3:.3f} ms", f"{r.share:.0%}",
                 r.note) for r in self.ops]
        widths = [max(len(x) for x in col) for col in zip(head, *rows)]
        lines = [f"{self.whole_function} ({self.seconds * 1e3:.3f} ms)"]
        for row in [head, *rows]:
            lines.append("  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip())
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)


def explain(f: Callable[..., Any], *args: Any, **vmap_kwargs: Any) -> Explanation:
    """Run ``bt.vmap(f, **vmap_kwargs)(*args)`` once and tell which path served each op.

    Each op called on a batched value is served by a batch rule, a boxed fallback, a
    decomposition into other ops, or the per-op loop (once per example, slow; the row says
    why). Where the function as a whole ran once per example, or per group of examples that
    take the same branches, ``whole_function`` says so and why, and the rows are the ops of
    every pass. Warnings of batchtensor's slow paths are not shown (this says it all); only
    the calls of the thread that called ``explain`` count.

    >>> import numpy as np, batchtensor as bt
    >>> report = bt.explain(lambda x: np.tanh(x).sum(), np.ones((4, 3)))
    >>> [(r.op, r.path, r.calls) for r in report.ops]
    [('numpy.tanh', 'boxed', 1), ('numpy.sum', 'boxed', 1)]
    >>> report.whole_function
    'vectorised in one pass'
    >>> report.result
    array([2.28478247, 2.28478247, 2.28478247, 2.28478247])
    """
    log = _Log()
    RECORDERS.append(log)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PerformanceWarning)
            start = time.perf_counter()
            result = vmap(f, **vmap_kwargs)(*args)
            end = time.perf_counter()
    finally:
        RECORDERS.remove(log)
    return Explanation(result, _rows(log, start, end), _whole_function(log), end - start)


def _rows(log: _Log, start: float, end: float) -> list[ExplainedOp]:
    """A row per (op, path), in the order first called. A call that a rule or boxed kind took
    and then handed to the per-op loop is logged twice: it counts once, as the loop's."""
    total = max(end - start, 1e-12)
    found: dict[tuple[str, Path], list[Any]] = {}
    times = log.times + [end]
    for i, (op, path) in enumerate(log):
        if i + 1 < len(log) and path is not Path.LOOP and log[i + 1] == (op, Path.LOOP):
            continue  # the next entry is this call, handed to the loop
        name = op_name(op)
        key = (name, path)
        row = found.get(key)
        if row is None:
            row = found[key] = [0, 0.0, ""]
        row[0] += 1
        row[1] += times[i + 1] - times[i]
        if path is Path.LOOP and not row[2]:
            row[2] = f"{log.notes.get(i, 'no batch rule for these arguments')}; {_ADD_A_RULE}"
    return [ExplainedOp(name, _PATHS[path], n, s, s / total, note)
            for (name, path), (n, s, note) in found.items()]


def _whole_function(log: _Log) -> str:
    if not log.whole:
        loops = len({op_name(op) for op, path in log if path is Path.LOOP})
        return "vectorised in one pass" + (
            f", {loops} op{'s' * (loops > 1)} through the per-op loop" if loops else "")
    func, reason, where, groups = log.whole[0]
    at = f" at {where}" if where else ""
    if groups:
        return f"vmap({func}) ran on {groups} groups of examples that branch alike: {reason}{at}"
    return f"vmap({func}) reran once per example: {reason}{at}"
