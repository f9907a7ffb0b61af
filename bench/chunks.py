"""Chunking: the memory-aware default against one pass, and chunks on a thread pool.

``memory``: a function whose intermediates are ``n**2`` per example of ``n`` inputs
(``np.tanh(np.outer(x, x)).sum(0)``), at a batch size where one pass (``chunk_size=None``)
peaks at several GiB. The default (``chunk_size="auto"``, ``max_memory`` 1/8 of the memory
available) is timed against it, interleaved round by round, medians of ``--repeat`` rounds;
each method's peak allocation is measured once more with ``tracemalloc`` (NumPy reports its
arrays there), untimed.

``executor``: bench/workloads.py's compute-bound workloads with the default against
``executor=ThreadPoolExecutor(2)`` (NumPy releases the GIL inside its kernels), interleaved
the same way.

``auto``: bench/workloads.py's compute-bound workloads, the default against one pass, each
vmap object called once before the rounds (so the default runs as every call after a
signature's first does: sized from the remembered measurement), with what that measurement
decided (an example's peak against its inputs' bytes: the cache-sized chunks kept or not).

    python bench/chunks.py [--only memory|executor|auto] [--repeat 5] [--batch 2000] [--n 400]

Figures are ratios within one run (these machines drift up to 2.5x within a minute).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import batchtensor as bt  # noqa: E402
from batchtensor import chunking  # noqa: E402
from workloads import WORKLOADS  # noqa: E402


def outer_sum(x):
    return np.tanh(np.outer(x, x)).sum(0)


def timed_rounds(methods: dict, repeat: int) -> dict[str, float]:
    """Median seconds per method, the methods interleaved in every round."""
    times: dict[str, list[float]] = {name: [] for name in methods}
    for _ in range(repeat):
        for name, call in methods.items():
            t = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def peak_of(call) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def memory(repeat: int, batch: int, n: int) -> None:
    xs = np.random.default_rng(0).normal(size=(batch, n))
    methods = {
        "one pass (chunk_size=None)": lambda: bt.vmap(outer_sum, chunk_size=None)(xs),
        "default (chunk_size='auto')": lambda: bt.vmap(outer_sum)(xs),
    }
    want = methods["one pass (chunk_size=None)"]()
    np.testing.assert_allclose(methods["default (chunk_size='auto')"](), want)
    budget = chunking.default_budget()
    print(f"memory: batch {batch} x {n}; default max_memory {budget / 2**30:.2f} GiB "
          f"(1/8 of {budget / chunking.BUDGET_FRACTION / 2**30:.1f} GiB available)")
    times = timed_rounds(methods, repeat)
    base = times["one pass (chunk_size=None)"]
    print("| method | median s | time / one pass | peak GiB (tracemalloc) |")
    print("|---|---:|---:|---:|")
    for name, call in methods.items():
        print(f"| {name} | {times[name]:.2f} | {times[name] / base:.2f} | "
              f"{peak_of(call) / 2**30:.2f} |")


def executor(repeat: int) -> None:
    rng = np.random.default_rng(0)
    print(f"executor: compute-bound workloads, ThreadPoolExecutor(2) against one thread "
          f"(OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
          f"load {os.getloadavg()[0]:.1f})")
    print("| workload | one thread ms | 2 threads ms | speed-up |")
    print("|---|---:|---:|---:|")
    with ThreadPoolExecutor(2) as pool:
        for w in WORKLOADS:
            args, in_axes = w.make(rng, "compute")
            if in_axes == "nested":  # the outer level's chunks run on the pool
                inner = bt.vmap(w.per_example, (None, 0))
                one = bt.vmap(inner, (0, None))
                two = bt.vmap(inner, (0, None), executor=pool)
            else:
                one = bt.vmap(w.per_example, in_axes=in_axes)
                two = bt.vmap(w.per_example, in_axes=in_axes, executor=pool)
            np.testing.assert_allclose(two(*args), one(*args), rtol=w.rtol)
            t = timed_rounds({"one": lambda: one(*args), "two": lambda: two(*args)}, repeat)
            print(f"| {w.name} | {t['one'] * 1e3:.1f} | {t['two'] * 1e3:.1f} | "
                  f"{t['one'] / t['two']:.2f} |")


def auto(repeat: int) -> None:
    rng = np.random.default_rng(0)
    print("auto: compute-bound workloads, the default after its first call against one pass")
    print("| workload | default ms | one pass ms | default / one pass | peak / inputs per "
          "example | cache-sized chunks |")
    print("|---|---:|---:|---:|---:|---|")
    for w in WORKLOADS:
        args, in_axes = w.make(rng, "compute")
        if in_axes == "nested":
            inner = bt.vmap(w.per_example, (None, 0))
            default = bt.vmap(inner, (0, None))
            one = bt.vmap(bt.vmap(w.per_example, (None, 0), chunk_size=None), (0, None),
                          chunk_size=None)
        else:
            inner = default = bt.vmap(w.per_example, in_axes=in_axes)
            one = bt.vmap(w.per_example, in_axes=in_axes, chunk_size=None)
        np.testing.assert_allclose(default(*args), one(*args), rtol=w.rtol)
        t = timed_rounds({"default": lambda: default(*args), "one": lambda: one(*args)},
                         repeat)
        memos = list(inner._chunk_memos.values())
        if memos and memos[0].peak is not None:
            m = memos[0]
            # (the inner vmap's own inputs where nested: one example of b per example)
            axes = (None, 0) if in_axes == "nested" else in_axes
            mapped = [a for a, ax in zip(args, axes) if ax is not None]
            size = mapped[0].shape[0]
            ratio = f"{m.peak / m.examples / (sum(a.nbytes for a in mapped) / size):.3g}"
            kept = "kept" if m.cache else "dropped"
        else:
            ratio, kept = "(not measured)", "(as _auto_plan sizes them)"
        print(f"| {w.name} | {t['default'] * 1e3:.2f} | {t['one'] * 1e3:.2f} | "
              f"{t['default'] / t['one']:.2f} | {ratio} | {kept} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["memory", "executor", "auto"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--batch", type=int, default=5000)
    parser.add_argument("--n", type=int, default=256)
    a = parser.parse_args(argv)
    if a.only in (None, "memory"):
        memory(a.repeat, a.batch, a.n)
    if a.only in (None, "executor"):
        executor(a.repeat)
    if a.only in (None, "auto"):
        auto(a.repeat)


if __name__ == "__main__":
    main()
