"""Benchmark: bt.vmap against the loop, hand-vectorised NumPy, np.vectorize and the peers.

For every workload (bench/workloads.py) in two regimes — "dispatch" (batch 1024, tiny
examples) and "compute" (batch 64, large examples) — every method is run in one process,
interleaved round by round (these machines drift up to 2.5x within a minute), and each cell is
the median time with its ratio to the best NumPy-only strategy (loop, hand-vectorised or
np.vectorize). Every method's result is checked against the loop before anything is timed.
The bt.vmap column is its default (``chunk_size="auto"``: cache-sized chunks for examples of
64 KiB to 1 MiB, memory-sized ones from 8 MiB of inputs); the next one runs one pass.
torch.func.vmap and eager jax.vmap columns appear when torch / jax are installed
(``pip install -e ".[bench]"``).

After the table, each bt.vmap cell against its target (≤ 1.5× the best NumPy-only strategy
dispatch-bound, ≤ 1.2× compute-bound; faster than torch.func.vmap where torch calls the same
kernel library as NumPy), and the workloads with a NumPy batched call of their op (the solves:
``np.linalg.solve`` on ``[B, n, n]``) against that call too (target ≤ 1.1× of it), with the
BLAS / LAPACK library each of NumPy and torch calls.

    python bench/run.py [--regime dispatch|compute|both] [--only NAME ...] [--repeat 7]
                        [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import batchtensor as bt  # noqa: E402
from workloads import WORKLOADS  # noqa: E402

NUMPY_ONLY = ("loop", "vectorised", "np.vectorize")


def _optional(name):
    try:
        return __import__(name)
    except ImportError:
        return None


torch = jax = None  # the peers, imported by load_peers() (tests/test_bench.py leaves them out)


def load_peers() -> None:
    global torch, jax
    torch = _optional("torch")
    jax = _optional("jax")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)


# ---- the methods --------------------------------------------------------------------------------
def _loop(w, args, axes):
    if axes == "nested":
        a, b = args
        return np.stack([np.stack([w.per_example(x, y) for y in b]) for x in a])
    n = next(a.shape[0] for a, ax in zip(args, axes) if ax is not None)
    return np.stack([w.per_example(*[a[i] if ax is not None else a for a, ax in zip(args, axes)])
                     for i in range(n)])


def _vectorize(w, args, axes, regime):
    sig = w.signature[regime] if isinstance(w.signature, dict) else w.signature
    if sig is None:
        return None
    if axes == "nested":
        f = np.vectorize(w.per_example, signature=sig)
        a, b = args
        return lambda: f(a[:, None, :], b[None, :, :])
    ins, out = sig.split("->")
    groups = re.findall(r"\([^)]*\)", ins)
    excluded = {i for i, ax in enumerate(axes) if ax is None}
    sig = ",".join(g for i, g in enumerate(groups) if i not in excluded) + "->" + out
    f = np.vectorize(w.per_example, signature=sig, excluded=excluded)
    return lambda: f(*args)


def _bt(w, args, axes, chunk_size="auto"):
    if axes == "nested":
        # a user asking for chunking asks it of both levels
        inner = bt.vmap(w.per_example, (None, 0), chunk_size=chunk_size)
        f = bt.vmap(inner, (0, None), chunk_size=chunk_size)
    else:
        f = bt.vmap(w.per_example, in_axes=axes, chunk_size=chunk_size)
    return lambda: f(*args)


def _torch(w, args, axes):
    if torch is None or w.torch_fn is None:
        return None
    targs = [torch.from_numpy(np.ascontiguousarray(a)) for a in args]
    from torch.func import vmap
    if axes == "nested":
        f = vmap(vmap(w.torch_fn, (None, 0)), (0, None))
    else:
        f = vmap(w.torch_fn, in_dims=tuple(axes))
    return lambda: f(*targs).numpy()


def _jax(w, args, axes):
    if jax is None or w.jax_fn is None:
        return None
    jargs = [jax.device_put(a) for a in args]
    if axes == "nested":
        f = jax.vmap(jax.vmap(w.jax_fn, (None, 0)), (0, None))
    else:
        f = jax.vmap(w.jax_fn, in_axes=tuple(axes))
    return lambda: np.asarray(f(*jargs).block_until_ready())


def methods_for(w, regime, rng):
    args, axes = w.make(rng, regime)
    ms = {
        "loop": lambda: _loop(w, args, axes),
        "vectorised": lambda: w.vectorised(*args),
        "np.vectorize": _vectorize(w, args, axes, regime),
        "bt.vmap": _bt(w, args, axes),  # the default: chunk_size="auto"
        "bt.vmap (chunk_size=None)": _bt(w, args, axes, None),
        "torch.func.vmap": _torch(w, args, axes),
        "jax.vmap (eager)": _jax(w, args, axes),
    }
    return {k: v for k, v in ms.items() if v is not None}, _loop(w, args, axes)


#: the targets of the speed issue: bt.vmap at most this many times the best NumPy-only strategy
TARGET = {"dispatch": 1.5, "compute": 1.2}
#: ... and at most this many times NumPy's own batched call of the op, where there is one
BATCHED_TARGET = 1.1


def _numpy_library(family: str) -> str | None:
    try:
        deps = np.show_config(mode="dicts")["Build Dependencies"]
        return deps[family]["name"]
    except Exception:  # (a NumPy without the dict form, or built without it)
        return None


def _torch_library(family: str) -> str | None:
    if torch is None:
        return None
    m = re.search(rf"{family.upper()}_INFO=(\w+)", torch.__config__.show())
    return m.group(1) if m else None


def kernel_libraries() -> dict:
    """``{family: {"numpy": library, "torch": library}}`` for "blas" and "lapack": what each
    links for GEMM / GEMV and for the factorisations (names as their build reports them)."""
    return {f: {"numpy": _numpy_library(f), "torch": _torch_library(f)}
            for f in ("blas", "lapack")}


def _same_library(numpy_lib: str | None, torch_lib: str | None) -> bool | None:
    if numpy_lib is None or torch_lib is None:
        return None
    norm = [re.sub(r"^scipy[-_]", "", x.lower()) for x in (numpy_lib, torch_lib)]
    return norm[0] == norm[1]


def torch_library_differs(w, libs: dict) -> bool | None:
    """Whether torch calls another kernel library than NumPy for ``w``'s heavy call (None:
    unknown; False also for workloads without such a call: both run their own loops)."""
    if w.kernel is None:
        return False
    same = _same_library(libs[w.kernel]["numpy"], libs[w.kernel]["torch"])
    return None if same is None else not same


# ---- timing -------------------------------------------------------------------------------------
def _calibrate(fn, target=0.02) -> int:
    t0 = time.perf_counter()
    fn()
    dt = time.perf_counter() - t0
    return max(1, min(1000, int(target / max(dt, 1e-7))))


def check(w, regime, methods, want) -> None:
    """Every method computes what the loop computes (shape, dtype kind, values)."""
    for name, fn in methods.items():
        got = fn()
        if (got.shape != want.shape or got.dtype.kind != want.dtype.kind
                or not np.allclose(got, want, rtol=w.rtol, atol=1e-9)):
            raise AssertionError(f"{w.name}/{regime}: {name} disagrees with the loop")


def run_one(w, regime, repeat, rng) -> dict:
    methods, want = methods_for(w, regime, rng)
    check(w, regime, methods, want)  # correctness first
    numbers = {k: _calibrate(fn) for k, fn in methods.items()}
    samples = {k: [] for k in methods}
    order = list(methods)
    shuffle = random.Random(0).shuffle
    for _ in range(repeat):
        shuffle(order)  # a fixed order favours some methods (what ran just before matters)
        for name in order:
            fn = methods[name]
            n = numbers[name]
            # One untimed call first: a slow cell times a single call, and what the previous
            # method left behind (its thread pool spinning or asleep, the cache full of its
            # data) would otherwise land on this one's clock.
            fn()
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            samples[name].append((time.perf_counter() - t0) / n)
    med = {k: statistics.median(v) for k, v in samples.items()}
    best = min(med[k] for k in NUMPY_ONLY if k in med)
    out = {"workload": w.name, "regime": regime, "median_s": med,
           "ratio": {k: v / best for k, v in med.items()},
           "best_numpy": min((k for k in NUMPY_ONLY if k in med), key=med.get)}
    if w.numpy_batched is not None:  # NumPy's own batched call of the op: a second reference
        ref = med[w.numpy_batched]
        out["ratio_to_numpy_batched"] = {k: v / ref for k, v in med.items()}
    return out


def _fmt(t: float) -> str:
    return f"{t * 1e6:.0f} µs" if t < 1e-3 else f"{t * 1e3:.2f} ms"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--regime", choices=["dispatch", "compute", "both"], default="both")
    p.add_argument("--only", nargs="*", help="workload names")
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--json", metavar="FILE")
    a = p.parse_args(argv)
    load_peers()
    regimes = ["dispatch", "compute"] if a.regime == "both" else [a.regime]
    rng = np.random.default_rng(0)
    results = []
    warnings.simplefilter("error", bt.PerformanceWarning)  # no loop fallback inside bt.vmap
    for regime in regimes:
        for w in WORKLOADS:
            if a.only and w.name not in a.only:
                continue
            results.append(run_one(w, regime, a.repeat, rng))
            print(f"  done {w.name} / {regime}", file=sys.stderr)
    cols = [c for c in ("loop", "vectorised", "np.vectorize", "bt.vmap",
                        "bt.vmap (chunk_size=None)", "torch.func.vmap", "jax.vmap (eager)")
            if any(c in r["median_s"] for r in results)]
    print(f"median time (ratio to the best NumPy-only strategy), {a.repeat} interleaved "
          f"repeats, float64\n")
    print("| workload | regime | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for r in results:
        cells = []
        for c in cols:
            if c not in r["median_s"]:
                cells.append("—")
                continue
            cell = f"{_fmt(r['median_s'][c])} ({r['ratio'][c]:.2f}×)"
            cells.append(f"**{cell}**" if c == r["best_numpy"] else cell)
        print(f"| {r['workload']} | {r['regime']} | " + " | ".join(cells) + " |")
    print("\n**bold**: the best NumPy-only strategy (the 1.00× reference).")
    libs = kernel_libraries()
    by_name = {w.name: w for w in WORKLOADS}
    for r in results:
        r["torch_library_differs"] = torch_library_differs(by_name[r["workload"]], libs)
    print(targets_table(results, libs))
    batched = [r for r in results if "ratio_to_numpy_batched" in r]
    if batched:
        print(batched_table(batched, by_name, libs))
    if a.json:
        Path(a.json).write_text(json.dumps({"results": results, "kernel_libraries": libs},
                                           indent=2))
    return 0


def _mark(ok: bool | None) -> str:
    return "—" if ok is None else ("yes" if ok else "**no**")


def targets_table(results: list, libs: dict) -> str:
    """Each bt.vmap cell against the targets (``TARGET``, and torch.func.vmap's time)."""
    lines = ["\nbt.vmap against the targets (dispatch ≤ 1.5×, compute ≤ 1.2× the best NumPy-only "
             "strategy; faster than torch.func.vmap where torch calls NumPy's kernel library)\n",
             "| workload | regime | bt.vmap | target met | torch.func.vmap | faster than torch "
             "| torch's kernel library differs |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        bt_ratio = r["ratio"]["bt.vmap"]
        torch_ratio = r["ratio"].get("torch.func.vmap")
        differs = r.get("torch_library_differs")
        faster = None if torch_ratio is None else bt_ratio < torch_ratio
        lines.append(
            f"| {r['workload']} | {r['regime']} | {bt_ratio:.2f}× | "
            f"{_mark(bt_ratio <= TARGET[r['regime']])} | "
            + ("—" if torch_ratio is None else f"{torch_ratio:.2f}×")
            + f" | {_mark(faster) if not differs else ('yes' if faster else 'no (exempt)')} | "
            + ("—" if differs is None else ("yes" if differs else "no")) + " |")
    found = ", ".join(f"{f}: NumPy {v['numpy'] or '?'}, torch {v['torch'] or '?'}"
                      for f, v in libs.items())
    lines.append(f"\nkernel libraries ({found}); the elementwise, reduction, sort and "
                 f"convolution workloads run each library's own loops.")
    return "\n".join(lines)


def batched_table(results: list, by_name: dict, libs: dict) -> str:
    """The workloads whose op NumPy runs batched itself (the solves): each method against that
    call (target ≤ ``BATCHED_TARGET``) and against the best NumPy-only strategy."""
    lines = [f"\nagainst NumPy's own batched call of the op (np.linalg.solve on [B, n, n]; "
             f"target ≤ {BATCHED_TARGET}×) and against the best NumPy-only strategy\n",
             "| workload | regime | bt.vmap / batched call | bt.vmap / best NumPy-only | "
             "target met | torch.func.vmap / batched call | torch's library |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        w = by_name[r["workload"]]
        rb = r["ratio_to_numpy_batched"]
        torch_b = rb.get("torch.func.vmap")
        lib = libs[w.kernel] if w.kernel else {"numpy": None, "torch": None}
        lines.append(
            f"| {r['workload']} | {r['regime']} | {rb['bt.vmap']:.2f}× | "
            f"{r['ratio']['bt.vmap']:.2f}× | {_mark(rb['bt.vmap'] <= BATCHED_TARGET)} | "
            + ("—" if torch_b is None else f"{torch_b:.2f}×")
            + f" | {lib['torch'] or '?'} (NumPy: {lib['numpy'] or '?'}) |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
