"""Scaling: speed-up over the per-example loop against the batch size, for every workload.

The workloads and methods are bench/run.py's (bench/workloads.py: loop, hand-vectorised,
np.vectorize, bt.vmap (its default, chunk_size="auto"), bt.vmap in one pass (chunk_size=None),
and torch.func.vmap / eager jax.vmap
when installed). Each workload's inputs are made once, at the size its regime makes, and cut
to every batch size of the sweep (the mapped arguments' first examples; a batch larger than
that repeats them). Nested pairwise distances count pairs: batch size B maps sqrt(B) rows of
each side, so B = 1, 4, ..., 1024 are 1x1 ... 32x32 pairs. For every (workload, batch size)
cell, ``run.run_one`` checks every method against the loop, then times all of them
interleaved round by round, in a shuffled order, and takes the medians. A cell's speed-up is
the loop's median over the method's: compare figures of one cell only (these machines drift
up to 2.5x within a minute).

The "dispatch" regime (tiny examples, the per-op overhead dominates; default sizes 1, 4, 16,
64, 256, 1024) is the one where a vmap has most to win; "compute" (large examples; sizes 1,
4, 16, 64) shows where the arithmetic dominates. chunk_size=None is timed and kept in the
JSON but left out of the table and plot (on tiny examples it runs the same single pass as
the default).

    python bench/scaling.py [--regime dispatch|compute] [--sizes 1 4 16 64 256 1024]
                            [--only NAME ...] [--repeat 5] [--json FILE] [--png FILE]

On a machine that other processes share, run it with ``OMP_NUM_THREADS=1`` (NumPy's OpenBLAS
and torch then use one thread; tiny examples gain nothing from more): a worker thread that is
descheduled mid-call costs torch's batched solve ~8 ms instead of ~0.1 ms on the 2-core
development machine. ``--json`` records the thread settings and the load average.

``--png`` needs matplotlib (``pip install -e ".[bench]"``): one subplot per workload, batch
size against speed-up over the loop, both logarithmic, one line per method.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import io
import json
import math
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import batchtensor as bt  # noqa: E402
import run  # noqa: E402
from workloads import WORKLOADS  # noqa: E402

SIZES = {"dispatch": [1, 4, 16, 64, 256, 1024], "compute": [1, 4, 16, 64]}
# the plotted methods, in legend order, with a fixed style each
SHOWN = {
    "vectorised": ("hand-vectorised NumPy", "black", "s"),
    "bt.vmap": ("bt.vmap", "tab:blue", "o"),
    "torch.func.vmap": ("torch.func.vmap", "tab:red", "^"),
    "jax.vmap (eager)": ("jax.vmap (eager)", "tab:green", "v"),
    "np.vectorize": ("np.vectorize", "tab:gray", "x"),
}


def _take(a, n):
    return a.take(np.arange(n) % a.shape[0], axis=0)


def at_batch(w, regime, size, rng):
    """``w`` with its inputs for ``regime`` cut (or repeated) to ``size`` examples."""
    args, axes = w.make(rng, regime)
    if axes == "nested":
        side = max(1, round(math.sqrt(size)))
        args, size = tuple(_take(a, side) for a in args), side * side
    else:
        # every mapped argument of the workloads is mapped over axis 0
        args = tuple(a if ax is None else _take(a, size) for a, ax in zip(args, axes))
    return dataclasses.replace(w, make=lambda _rng, _regime: (args, axes)), size


def _load_pyplot():
    try:
        import matplotlib
    except ImportError:
        sys.exit("--png needs matplotlib, which is not installed: pip install matplotlib "
                 "(or pip install -e \".[bench]\")")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def speedups(cell) -> dict:
    loop = cell["median_s"]["loop"]
    return {k: loop / v for k, v in cell["median_s"].items()}


def _times(x: float) -> str:
    if round(x, 1) >= 10:
        return f"{x:.0f}×"
    return f"{x:.1f}×" if round(x, 2) >= 1 else f"{x:.2g}×"


def table(results, methods) -> str:
    lines = ["| workload | batch | loop | " + " | ".join(methods) + " |",
             "|---|---|---|" + "---|" * len(methods)]
    for r in results:
        cells = [_times(r["speedup"][m]) if m in r["speedup"] else "—" for m in methods]
        lines.append(f"| {r['workload']} | {r['batch']} | {run._fmt(r['median_s']['loop'])} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(results, meta, path, plt) -> None:
    names = list(dict.fromkeys(r["workload"] for r in results))
    ncols = min(3, len(names))
    nrows = math.ceil(len(names) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols, 2.9 * nrows + 0.6),
                             squeeze=False)
    for ax, name in zip(axes.flat, names):
        rows = [r for r in results if r["workload"] == name]
        for key, (label, color, marker) in SHOWN.items():
            pts = [(r["batch"], r["speedup"][key]) for r in rows if key in r["speedup"]]
            if pts:
                ax.plot(*zip(*pts), label=label, color=color, marker=marker, markersize=4,
                        linewidth=1.6 if key == "bt.vmap" else 1.0)
        ax.axhline(1.0, color="0.6", linewidth=0.8, linestyle="--")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ticks = sorted({r["batch"] for r in rows})
        ax.set_xticks(ticks, [str(n) for n in ticks])
        ax.xaxis.set_minor_locator(plt.NullLocator())
        ax.set_title(name + (" (pairs)" if name == "pairwise" else ""), fontsize=10)
        ax.tick_params(labelsize=8)
        ax.grid(True, which="major", linewidth=0.3)
    for ax in axes.flat[len(names):]:
        ax.set_visible(False)
    fig.supxlabel("batch size (examples; pairwise: pairs)", fontsize=9, y=0.035)
    fig.supylabel("speed-up over the loop", fontsize=9)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 0.0), ncol=len(labels),
               fontsize=9, frameon=False)
    fig.suptitle(f"Speed-up over the per-example loop (above 1: faster; dashed: the loop)\n"
                 f"{meta['regime']} regime, float64, medians of {meta['repeat']} interleaved "
                 f"repeats, {meta['date']}", fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    from PIL import Image  # a dependency of matplotlib's
    # a palette of 64 colours: a quarter of the file, nothing visible lost on lines and text
    Image.open(buf).convert("RGB").quantize(64).save(path, format="png", optimize=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--regime", choices=["dispatch", "compute"], default="dispatch")
    p.add_argument("--sizes", nargs="*", type=int, help="batch sizes (default: per regime)")
    p.add_argument("--only", nargs="*", help="workload names")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--png", metavar="FILE")
    a = p.parse_args(argv)
    plt = _load_pyplot() if a.png else None  # before the run, not after it
    run.load_peers()
    sizes = a.sizes or SIZES[a.regime]
    workloads = [w for w in WORKLOADS if not a.only or w.name in a.only]
    warnings.simplefilter("error", bt.PerformanceWarning)  # no loop fallback inside bt.vmap
    load_start = os.getloadavg()
    started = time.perf_counter()
    results = []
    for w in workloads:
        for size in sizes:
            # the same inputs at every size of a workload: cut from one draw
            wb, batch = at_batch(w, a.regime, size, np.random.default_rng(0))
            cell = run.run_one(wb, a.regime, a.repeat, np.random.default_rng(0))
            cell.update(batch=batch, speedup=speedups(cell))
            results.append(cell)
            print(f"  done {w.name} / {batch}", file=sys.stderr)
    elapsed = time.perf_counter() - started
    environment = {"python": platform.python_version(), "numpy": np.__version__}
    for name, mod in (("torch", run.torch), ("jax", run.jax)):
        if mod is not None:
            environment[name] = mod.__version__
    environment["OMP_NUM_THREADS"] = os.environ.get("OMP_NUM_THREADS")
    if run.torch is not None:
        environment["torch_threads"] = run.torch.get_num_threads()
    meta = {"date": datetime.date.today().isoformat(), "regime": a.regime, "repeat": a.repeat,
            "sizes": sizes, "seconds": round(elapsed), "environment": environment,
            # other processes on the machine slow the multi-threaded peers most
            "load_average": {"start": load_start, "end": os.getloadavg()},
            "command": "python bench/scaling.py " + " ".join(sys.argv[1:] if argv is None
                                                             else argv)}
    methods = [m for m in SHOWN if any(m in r["speedup"] for r in results)]
    print(f"speed-up over the per-example loop (loop's median time given), {a.regime} "
          f"regime, float64, medians of {a.repeat} interleaved repeats, {meta['date']}, "
          f"{elapsed:.0f} s\n")
    print(table(results, methods))
    if a.json:
        Path(a.json).write_text(json.dumps({"meta": meta, "results": results}, indent=2))
    if a.png:
        plot(results, meta, a.png, plt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
