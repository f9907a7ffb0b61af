"""Two revisions of batchtensor in one process: did a change slow the hot path?

Checks out ``--base`` (a commit) into a temporary git worktree and imports its package under
another name (``batchtensor_base``: the package's imports are relative, so it runs as it is)
beside this checkout's ``batchtensor``. Then, round after round, each timing is taken for both
revisions back to back, in alternating order, together with plain NumPy:

Every per-op figure is a slope: the function with 100 ops minus the same with 50, over 50
(and the same for NumPy's own), so the fixed cost of the vmap call does not leak into it.

- ``x + x`` on a batch-first [64, 8] value (the operator fast path), per op above NumPy;
- ``-x``, the unary operator, per op above NumPy;
- ``np.sin(x)`` and ``np.add(x, x)`` (NumPy's protocol, then ``dispatch.ufunc_call``), per
  op above NumPy;
- ``x.sum(axis=0)`` and ``x[1]`` (a function hook, the indexing hot path);
- the fixed cost of a ``vmap`` call of the identity;
- the Lorenz RK4 step of ``bench/workloads.py`` (batch 1024, dispatch-bound), as a ratio to
  hand-vectorised NumPy;
- with ``--peers``, every other workload of ``bench/workloads.py`` in its dispatch-bound size
  likewise (pairwise distances by nested vmap), as ``bench/run.py`` calls it.

The machine drifts within a minute, so every figure is the median over rounds, and the last
column is the median of the per-round ratios new / base (below 1: the new one is faster).

One process favours one of its two copies of the package by a few percent in some figures,
even where both hold the same code (``--base HEAD``: pairwise distances between 0.96 and 1.04
from process to process). ``--processes P`` runs P processes, each loading both revisions
under names of their own, alternately base first and new first, and gives the median of
the processes' figures: what is left is the change, not the copy a process happened to
favour. The last column is a 95% interval for that median (``interval``): where it holds 1,
the run cannot tell the revisions apart in that figure.

    python bench/revisions.py --base main~3 [--rounds 31] [--peers] [--imports M ...]
                              [--processes P] [--json FILE]
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import batchtensor as bt  # noqa: E402
import workloads  # noqa: E402
from dispatch import timeit  # noqa: E402


def load_package(name: str, directory: Path):
    """Import the package in ``directory`` as top-level module ``name``."""
    spec = importlib.util.spec_from_file_location(
        name, directory / "__init__.py", submodule_search_locations=[str(directory)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _peer_cases(lib) -> dict:
    """The dispatch-bound workloads other than Lorenz, as ``_cases`` gives them."""
    cases = {}
    for w in workloads.WORKLOADS:
        if w.name == "lorenz_rk4":
            continue
        args, axes = w.make(np.random.default_rng(0), "dispatch")
        if axes == "nested":
            f = lib.vmap(lib.vmap(w.per_example, (None, 0)), (0, None))
        else:
            f = lib.vmap(w.per_example, in_axes=axes)
        cases[f"{w.name} / hand-vectorised"] = (
            f, args, functools.partial(w.vectorised, *args), None)
    return cases


def _cases(lib, n: int, peers: bool = False) -> dict:
    """name -> (function of the revision's vmap, its arguments, the NumPy reference or None,
    ops per call), with ``n`` ops in each per-op function."""
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(64, 8))
    (s, p), _ = workloads.make_rk4(rng, "dispatch")

    def adds(x):
        y = x
        for _ in range(n):
            y = y + x
        return y

    def sines(x):
        y = x
        for _ in range(n):
            y = np.sin(y)
        return y

    def negs(x):
        y = x
        for _ in range(n):
            y = -y
        return y

    def np_adds(x):
        y = x
        for _ in range(n):
            y = np.add(y, x)
        return y

    def sums(x):
        for _ in range(n):
            r = x.sum(axis=0)
        return r

    def items(x):
        for _ in range(n):
            r = x[1]
        return r

    return {
        "x + x (µs above NumPy per op)": (lib.vmap(adds), (xs,), lambda: adds(xs), n),
        "np.sin(x) (µs above NumPy per op)": (lib.vmap(sines), (xs,), lambda: sines(xs), n),
        "-x (µs above NumPy per op)": (lib.vmap(negs), (xs,), lambda: negs(xs), n),
        "np.add(x, x) (µs above NumPy per op)": (lib.vmap(np_adds), (xs,), lambda: np_adds(xs),
                                                 n),
        "x.sum(axis=0) (µs per op)": (lib.vmap(sums), (xs,), None, n),
        "x[1] (µs per op)": (lib.vmap(items), (xs,), None, n),
        "vmap call, identity (µs)": (lib.vmap(lambda x: x), (xs,), None, 1),
        "Lorenz RK4 / hand-vectorised": (lib.vmap(workloads.rk4), (s, p),
                                         lambda: workloads.rk4_vec(s, p), None),
    } | (_peer_cases(lib) if peers else {})


OPS = 50  # the per-op functions run OPS and 2 * OPS ops: the slope is per op


def _time(case: tuple, number: int) -> float:
    fn, args, _, _ = case
    return timeit(lambda: fn(*args), number)


def measure(libs: dict, rounds: int, number: int = 20, peers: bool = False) -> dict:
    short = {name: _cases(lib, OPS, peers) for name, lib in libs.items()}
    long = {name: _cases(lib, 2 * OPS, peers) for name, lib in libs.items()}
    for name, lib in libs.items():  # correctness before timing
        for case, (fn, args, ref, ops) in short[name].items():
            if case.startswith("Lorenz"):
                want = np.stack([workloads.rk4(*ex) for ex in zip(*args)])
                np.testing.assert_allclose(fn(*args), want, rtol=1e-12)
            elif ops is None:
                np.testing.assert_allclose(fn(*args), ref(), rtol=1e-8)
    samples: dict = {case: {name: [] for name in libs} for case in short["new"]}
    order = list(libs)
    for r in range(rounds):
        for case in samples:
            ref, ref2, ops = short["new"][case][2], long["new"][case][2], short["new"][case][3]
            per_op = ops == OPS
            t_ref = timeit(ref, number) if ref is not None else None
            if per_op and ref is not None:
                t_ref = timeit(ref2, number) - t_ref
            for name in (order if r % 2 else order[::-1]):
                t = _time(short[name][case], number)
                if per_op:
                    t = _time(long[name][case], number) - t
                if ops is None:
                    value = t / t_ref
                elif t_ref is not None:
                    value = (t - t_ref) / ops * 1e6
                else:
                    value = t / ops * 1e6
                samples[case][name].append(value)
    return {case: {"base": statistics.median(v["base"]), "new": statistics.median(v["new"]),
                   "new / base": statistics.median(a / b for a, b in zip(v["new"], v["base"])),
                   "ratios": [a / b for a, b in zip(v["new"], v["base"])]}
            for case, v in samples.items()}


def interval(ratios_per_process: list[list[float]], resamples: int = 2000) -> tuple[float, float]:
    """A 95% interval for the median over processes of each one's median per-round ratio:
    processes drawn with replacement, then each drawn process's rounds with replacement (a
    process's rounds share its favoured copy, so they are not independent of each other).
    Where the interval holds 1, the run cannot tell the two revisions apart."""
    rng = np.random.default_rng(0)
    p = len(ratios_per_process)
    medians = np.empty(resamples)
    for k in range(resamples):
        picked = rng.integers(0, p, size=p)
        medians[k] = np.median([np.median(rng.choice(ratios_per_process[i],
                                                      len(ratios_per_process[i])))
                                for i in picked])
    lo, hi = np.percentile(medians, [2.5, 97.5])
    return float(lo), float(hi)


def _one_process(a) -> dict:
    """The table of one process: base and this checkout loaded side by side (both under
    names of their own where ``a.order`` says which one is loaded first)."""
    for module in a.imports:
        importlib.import_module(module)
    with tempfile.TemporaryDirectory() as tmp:
        base_tree = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(base_tree), a.base],
                       cwd=ROOT, check=True, capture_output=True)
        try:
            if a.order is None:
                libs = {"base": load_package("batchtensor_base", base_tree / "batchtensor"),
                        "new": bt}
            else:
                first, second = ("base", "new") if a.order == "base-first" else ("new", "base")
                trees = {"base": base_tree, "new": ROOT}
                libs = {name: load_package(f"batchtensor_{name}", trees[name] / "batchtensor")
                        for name in (first, second)}
            table = measure(libs, a.rounds, peers=a.peers)
            for v in table.values():
                v["interval"] = interval([v["ratios"]])
            return table
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base_tree)], cwd=ROOT,
                           check=False, capture_output=True)


def _processes(a) -> dict:
    """The median over ``a.processes`` processes of each figure, base first in every other."""
    tables = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.processes):
            out = Path(tmp) / f"{i}.json"
            order = "base-first" if i % 2 else "new-first"
            cmd = [sys.executable, __file__, "--base", a.base, "--rounds", str(a.rounds),
                   "--order", order, "--json", str(out)] + (["--peers"] if a.peers else [])
            if a.imports:
                cmd += ["--imports", *a.imports]
            subprocess.run(cmd, check=True, capture_output=True)
            tables.append(json.loads(out.read_text())["table"])
            print(f"process {i + 1} of {a.processes} ({order}): done", file=sys.stderr)
    return {case: {key: statistics.median(t[case][key] for t in tables)
                   for key in ("base", "new", "new / base")}
            | {"interval": interval([t[case]["ratios"] for t in tables])}
            for case in tables[0]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", required=True, help="the commit to compare this checkout with")
    p.add_argument("--rounds", type=int, default=31)
    p.add_argument("--peers", action="store_true",
                   help="also the other dispatch-bound workloads of bench/workloads.py")
    p.add_argument("--imports", nargs="*", default=[], metavar="MODULE",
                   help="modules to import first, as a user's program would (scipy.signal: "
                        "the replacements a vmap call swaps in grow with what is imported)")
    p.add_argument("--processes", type=int, default=1,
                   help="run this many processes, base loaded first in every other, and give "
                        "the median of their figures")
    p.add_argument("--order", choices=("base-first", "new-first"), default=None,
                   help="(one process of --processes) load both revisions under names of "
                        "their own, in this order")
    p.add_argument("--json", metavar="FILE")
    a = p.parse_args(argv)
    table = _processes(a) if a.processes > 1 else _one_process(a)
    imported = f", after importing {', '.join(a.imports)}" if a.imports else ""
    where = (f"medians over {a.processes} processes (base loaded first in every other) of "
             if a.processes > 1 else "one process, ")
    print(f"base {a.base} vs this checkout, {where}medians of {a.rounds} rounds{imported}\n")
    print("| figure | base | new | new / base (median of rounds) | 95% interval |")
    print("|---|---|---|---|---|")
    for k, v in table.items():
        lo, hi = v["interval"]
        print(f"| {k} | {v['base']:.3f} | {v['new']:.3f} | {v['new / base']:.3f} "
              f"| {lo:.3f} to {hi:.3f} |")
    if a.json:
        Path(a.json).write_text(json.dumps({"base": a.base, "table": table}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
