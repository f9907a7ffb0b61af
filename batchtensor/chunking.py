"""How ``vmap`` splits a batch into chunks: the memory budget, the measured first chunk, the
joined results, the progress bar and the chunks run on an executor.

``chunk_size="auto"`` (the default) runs a large batch in two steps. A first chunk of a few
examples runs while ``tracemalloc`` (to which NumPy reports its allocations) measures how much
memory it takes at its peak; the rest of the batch then runs in chunks that each stay within
``max_memory``, written into results allocated once for the whole batch. A batch whose mapped
inputs are small (under ``PROBE_INPUT_BYTES``) runs in one pass without a measurement: its
intermediates would have to be thousands of times its inputs to reach the budget, and a
measured first chunk costs one more pass, which the per-op overhead of small examples makes
dear: the measured chunk runs under ``tracemalloc``, which traces Python's allocations too, and
the ensemble workload of bench/ (1.7 MB of inputs, 1024 examples) took 2.4x as long with a
1 MiB threshold; from 8 MiB, every op of a pass handles enough data that one more pass costs a
few per cent at most.

>>> from batchtensor.chunking import parse_memory
>>> parse_memory("2GiB"), parse_memory("512 MB"), parse_memory(1 << 20)
(2147483648, 512000000, 1048576)
"""

from __future__ import annotations

import os
import re
import sys
import threading
import tracemalloc
from typing import Any, Callable, Iterator

import numpy as np

__all__ = ["parse_memory", "default_budget", "budget_of", "PeakMeter", "planned_chunk",
           "probe_examples", "Joined", "ProgressBar", "PROBE_INPUT_BYTES", "BUDGET_FRACTION"]

#: mapped inputs below this many bytes run in one pass, unmeasured (``min`` with 1/64 of an
#: explicit ``max_memory``)
PROBE_INPUT_BYTES = 8 << 20
#: the default ``max_memory``: this fraction of the memory available when the call starts
BUDGET_FRACTION = 1 / 8
#: where the available memory cannot be read (no /proc/meminfo, no sysconf)
_FALLBACK_BUDGET = 1 << 30
#: the share of the budget chunks are sized to fill: a measured peak is one chunk's, and the
#: next chunk's examples may need a little more (other sizes, other branches)
_HEADROOM = 0.9
#: the first measured chunk holds at most this fraction of the batch
_PROBE_FRACTION = 64

_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9,
          "gb": 10**9, "t": 10**12, "tb": 10**12, "kib": 1 << 10, "mib": 1 << 20,
          "gib": 1 << 30, "tib": 1 << 40}


def parse_memory(value: int | float | str) -> int:
    """Bytes from an int or a string such as ``"2GiB"``, ``"512 MB"`` or ``"1.5e9"``.

    >>> parse_memory("1.5 KiB")
    1536
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"vmap: max_memory must be a number of bytes or a string such as "
                        f"'2GiB', got {value!r}")
    if isinstance(value, (int, np.integer, float, np.floating)):
        n = int(value)
    elif isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", value)
        if m is None or m.group(2).lower() not in _UNITS:
            raise ValueError(f"vmap: max_memory={value!r} is not a size: give bytes (an int) "
                             f"or a number and a unit, such as '2GiB', '500MB' or '1e9'")
        n = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    else:
        raise TypeError(f"vmap: max_memory must be a number of bytes or a string such as "
                        f"'2GiB', got {type(value).__name__}")
    if n <= 0:
        raise ValueError(f"vmap: max_memory must be positive, got {value!r}")
    return n


def available_memory() -> int | None:
    """The memory the system could give now, in bytes (None where it cannot be read)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def default_budget() -> int:
    """``max_memory``'s default: ``BUDGET_FRACTION`` of the memory available now."""
    free = available_memory()
    return _FALLBACK_BUDGET if free is None else max(1 << 26, int(free * BUDGET_FRACTION))


def budget_of(max_memory: int | None) -> int:
    return default_budget() if max_memory is None else max_memory


def probe_threshold(max_memory: int | None) -> int:
    """Mapped input bytes from which the auto chunking measures a first chunk."""
    return PROBE_INPUT_BYTES if max_memory is None else min(PROBE_INPUT_BYTES, max_memory // 64)


def probe_examples(size: int, input_bytes_per_example: float, budget: int) -> int:
    """How many examples the first measured chunk holds: at most 1/64 of the batch, and few
    enough that their inputs take at most 1/4096 of the budget (an intermediate thousands of
    times the inputs then still fits it). The second chunk, sized from the first's
    measurement, is measured too: its larger count weighs the fixed allocations less."""
    by_memory = int(budget // (4096 * max(input_bytes_per_example, 1.0)))
    return max(1, min(size // _PROBE_FRACTION, by_memory))


def planned_chunk(peak: int, examples: int, output_bytes: int, budget: int, floor: int) -> int:
    """Examples per chunk after a first chunk of ``examples`` peaked at ``peak`` bytes: the
    chunks share the budget with the results of the whole batch (``output_bytes``, allocated
    once). At least ``floor`` (where the results alone take the budget, chunks as large as the
    measured one: smaller ones would only add passes)."""
    per_example = max(peak, 1) / examples
    room = budget * _HEADROOM - output_bytes
    return max(floor, int(room // per_example)) if room > 0 else floor


_meter_lock = threading.Lock()
_meters = 0  # PeakMeters measuring now, in any thread
_started_here = False  # whether tracemalloc was started by a PeakMeter (and stops with the last)


class PeakMeter:
    """``with PeakMeter() as m: ...`` then ``m.peak``: the bytes allocated at the peak of the
    block above what was allocated when it began (NumPy reports its arrays to ``tracemalloc``).

    Starts ``tracemalloc`` if it is off, and stops it when the last meter ends; where the user
    traces already, it reads the traced memory without resetting the user's peak. The peak is
    an upper bound: other threads' allocations meanwhile count too, as does a peak the user's
    tracing had already reached.
    """

    __slots__ = ("base", "peak")

    def __enter__(self) -> PeakMeter:
        global _meters, _started_here
        with _meter_lock:
            if _meters == 0 and not tracemalloc.is_tracing():
                tracemalloc.start()
                _started_here = True
            _meters += 1
            if _started_here and _meters == 1:
                tracemalloc.reset_peak()
            self.base = tracemalloc.get_traced_memory()[0]
        self.peak = 0
        return self

    def __exit__(self, *exc: Any) -> None:
        global _meters, _started_here
        with _meter_lock:
            self.peak = max(0, tracemalloc.get_traced_memory()[1] - self.base)
            _meters -= 1
            if _meters == 0 and _started_here:
                tracemalloc.stop()
                _started_here = False


class Joined:
    """The results of consecutive chunks joined along their out axes. Arrays are written into
    results allocated once for the whole batch (``like=`` the first chunk's, so on its
    backend); where that cannot give ``np.concatenate``'s result (a later chunk of another
    dtype or shape, a subclass, a non-array) the parts are kept and concatenated at the end."""

    def __init__(self, size: int, leaf_axes: Callable[[Any, int], list[Any]],
                 flatten: Callable[[Any], tuple[list[Any], Any]],
                 flatten_as: Callable[[Any, Any], list[Any] | None],
                 unflatten: Callable[[Any, list[Any]], Any],
                 concatenate: Callable[[list[Any], int], Any],
                 unstackable: Callable[[], Exception]) -> None:
        self.size = size
        self._leaf_axes, self._flatten, self._flatten_as = leaf_axes, flatten, flatten_as
        self._unflatten, self._concatenate, self._unstackable = (unflatten, concatenate,
                                                                 unstackable)
        self.treedef: Any = None
        self.first: list[Any] = []
        self.axes: list[Any] = []
        self.buffers: list[Any] = []  # per leaf: a whole-batch array, or a list of parts
        self.filled = 0

    def output_bytes(self, examples: int) -> int:
        """What the results of the whole batch take, from the first ``examples`` ones'."""
        total = 0
        for leaf, ax in zip(self.first, self.axes):
            if ax is not None and hasattr(leaf, "nbytes"):
                total += int(leaf.nbytes) * self.size // max(examples, 1)
        return total

    def add(self, result: Any, start: int, stop: int) -> None:
        if self.treedef is None:
            self.first, self.treedef = self._flatten(result)
            self.axes = self._leaf_axes(result, len(self.first))
            self.buffers = [self._allocate(leaf, ax, start, stop)
                            for leaf, ax in zip(self.first, self.axes)]
            leaves: list[Any] = self.first
        else:
            matched = self._flatten_as(result, self.treedef)
            if matched is None:
                raise self._unstackable()
            leaves = matched
        for j, (leaf, ax) in enumerate(zip(leaves, self.axes)):
            if ax is None:
                continue
            buf = self.buffers[j]
            if type(buf) is list:
                buf.append(leaf)
                continue
            ax %= buf.ndim  # (a whole-batch array: its out axis is in range)
            if type(leaf) is type(buf) and leaf.dtype == buf.dtype and \
                    leaf.shape[:ax] + leaf.shape[ax + 1:] == buf.shape[:ax] + buf.shape[ax + 1:] \
                    and leaf.shape[ax] == stop - start:
                buf[(slice(None),) * ax + (slice(start, stop),)] = leaf
            else:  # keep what is filled as the first part; concatenate from here on
                self.buffers[j] = [buf[(slice(None),) * ax + (slice(0, start),)], leaf]
        self.filled = stop

    def _allocate(self, leaf: Any, ax: Any, start: int, stop: int) -> Any:
        if ax is None:
            return None
        if start != 0 or stop >= self.size or type(leaf) is not np.ndarray \
                and not _allocatable(leaf):
            return []
        shape = list(leaf.shape)
        if not -len(shape) <= ax < len(shape) or shape[ax] != stop - start:
            return []
        shape[ax % len(shape)] = self.size
        return np.empty(tuple(shape), dtype=leaf.dtype, like=leaf)

    def result(self) -> Any:
        joined = []
        for j, (leaf, ax) in enumerate(zip(self.first, self.axes)):
            buf = self.buffers[j]
            if ax is None:
                joined.append(leaf)
            elif type(buf) is list:
                joined.append(buf[0] if len(buf) == 1 else self._concatenate(buf, ax))
            else:
                joined.append(buf)
        return self._unflatten(self.treedef, joined)


def _allocatable(leaf: Any) -> bool:
    """A physical array of another backend (CuPy) that ``np.empty(like=)`` makes alike."""
    t = type(leaf)
    return t.__module__.split(".")[0] == "cupy" and t.__name__ == "ndarray"


class ProgressBar:
    """A progress bar over the examples of a chunked call (tqdm's, in a terminal or a
    notebook). ``progress=True`` shows it from the start; ``None`` (the default) once the
    first chunk says the whole call will take longer than ``AFTER_SECONDS``, where stderr
    is a terminal or a notebook shows output; ``False`` never."""

    AFTER_SECONDS = 5.0

    def __init__(self, mode: bool | None, total: int, name: str) -> None:
        self.mode, self.total, self.name = mode, total, name
        self.bar: Any = None
        if mode:
            self.bar = _tqdm(total, name, required=True)

    def update(self, done: int, n: int, elapsed: float) -> None:
        """``n`` more examples ran; ``done`` in all after ``elapsed`` seconds."""
        if self.bar is None and self.mode is None and done < self.total and done > 0 \
                and elapsed * self.total / done > self.AFTER_SECONDS and _interactive():
            self.bar = _tqdm(self.total, self.name, required=False)
            if self.bar is not None:
                self.bar.update(done - n)
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _interactive() -> bool:
    if "ipykernel" in sys.modules:
        return True
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _tqdm(total: int, name: str, required: bool) -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:
        if required:
            raise ImportError("vmap(progress=True) shows its bar with tqdm, which is not "
                              "installed: pip install tqdm (or batchtensor[progress])") from None
        return None
    return tqdm(total=total, desc=f"vmap({name})", unit="example", leave=False)


def chunk_ranges(start: int, size: int, chunk: int) -> Iterator[tuple[int, int]]:
    for a in range(start, size, chunk):
        yield a, min(a + chunk, size)
