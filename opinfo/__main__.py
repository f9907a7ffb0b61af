"""``python -m opinfo``: run the OpInfo sweep and print coverage.

- ``python -m opinfo`` — sweep the whole database and print the coverage table of the whole
  NumPy universe (``opinfo/universe.py``): every callable with its path (rule / boxed /
  decomposition / loop / excluded / missing), samples and result, the totals, and every op the
  loop fallback serves with its reason. ``--markdown FILE`` also writes it (docs/coverage.md);
  ``--no-sweep`` builds it from the declared paths without running anything.
- ``python -m opinfo NAME [NAME ...]`` — sweep the named OpInfo entries (prefix match) and print
  a table of just those.
- ``--backend numpy|duck|both`` (default both): the physical arrays the sweep maps, NumPy's or
  the strict duck array of ``opinfo/duck.py`` (CuPy's contract, checked without a GPU; the
  entries and samples ``opinfo/backends.py`` leaves out do not run there). The tables get a
  *duck backend* column where it ran, and the universe table a section of its own.
- ``python -m opinfo --adversarial N [--seed S]`` — run N random programs (``opinfo/adversarial.py``:
  ops from the database chained together, index expressions, in-place writes, under random
  vmap variants) against the per-example loop, and print every failure as a reproducer.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from . import BY_NAME, DATABASE, sweep_op
from .backends import (DUCK_EXCLUDED, DUCK_EXPECTED, HOST_OUTPUTS, UNMAPPED_WRITES_GAP,
                       duck_excluded)
from .universe import NOT_DISPATCHED, Entry, claims, is_known_extra, universe

VECTORISED = ("rule", "boxed", "decomposition")


@dataclass
class DuckResult:
    """One entry's sweep on the duck backend (``excluded``: the group's reason, not run)."""

    samples: int = 0
    expected: int = 0
    failures: list = field(default_factory=list)
    excluded: str | None = None

    @property
    def status(self) -> str:
        if self.excluded:
            return "excluded"
        if self.failures:
            return "FAIL"
        return f"pass ({self.expected} expected)" if self.expected else "pass"


@dataclass
class OpResult:
    name: str
    samples: int = 0
    layout_cases: int = 0
    failures: list = field(default_factory=list)
    ran: bool = True
    duck: DuckResult | None = None  # None: not run on the duck backend

    @property
    def status(self) -> str:
        if not self.ran:
            return "not run"
        return "FAIL" if self.failures else "pass"


def _sweep(info, backend: str, failures: list) -> list:
    """Every dtype's SweepResult of ``info`` on ``backend``; crashes go into ``failures``."""
    results = []
    for dt in info.dtypes:
        try:
            r = sweep_op(info, dt, raise_first=False, backend=backend)
        except Exception as e:  # noqa: BLE001  (a broken sample generator is a failure too)
            failures.append(f"[{np.dtype(dt)}] {info.name}: the sweep crashed: "
                            f"{type(e).__name__}: {e}")
            continue
        failures += [f"[{np.dtype(dt)}] {f}" for f in r.failures]
        results.append(r)
    return results


def run_one(name: str, backends: tuple = ("numpy", "duck")) -> OpResult:
    info = BY_NAME[name]
    res = OpResult(name, ran="numpy" in backends)
    if "numpy" in backends:
        for r in _sweep(info, "numpy", res.failures):
            res.samples += r.samples
            res.layout_cases += r.layout_runs
    if "duck" in backends:
        res.duck = DuckResult(excluded=duck_excluded(info))
        if res.duck.excluded is None:
            for r in _sweep(info, "duck", res.duck.failures):
                res.duck.samples += r.samples
                res.duck.expected += r.expected
    return res


def count_samples(name: str) -> OpResult:
    info = BY_NAME[name]
    res = OpResult(name, ran=False)
    for dt in info.dtypes:
        try:
            res.samples += len(info.samples(np.random.default_rng(0), dt))
        except Exception as e:  # noqa: BLE001
            res.failures.append(f"[{np.dtype(dt)}] {name}: sample_inputs raised {e!r}")
    return res


def run_all(names: list[str], jobs: int, sweep: bool,
            backends: tuple = ("numpy", "duck")) -> dict[str, OpResult]:
    fn = functools.partial(run_one, backends=backends) if sweep else count_samples
    if jobs <= 1 or len(names) <= 1 or not sweep:
        return {n: fn(n) for n in names}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return dict(zip(names, pool.map(fn, names, chunksize=1)))


def _failed(r: OpResult) -> bool:
    return bool(r.failures or (r.duck is not None and r.duck.failures))


def select(names: list[str]) -> list:
    if not names:
        return list(DATABASE)
    return [info for info in DATABASE
            if any(info.name == n or info.name.startswith(n) for n in names)]


# ---- the named-ops table (a duck backend column where it ran) ---------------------------------
def ops_table(infos: list, results: dict[str, OpResult], seconds: float) -> list[str]:
    duck = any(results[i.name].duck is not None for i in infos)
    lines = ["| op | path | samples | result |" + (" duck backend |" if duck else ""),
             "|---|---|---|---|" + ("---|" if duck else "")]
    for i in infos:
        r = results[i.name]
        lines.append(f"| `{i.name}` | {i.path} | {r.samples} | {r.status} |"
                     + (f" {r.duck.status if r.duck else ''} |" if duck else ""))
    failed = sum(_failed(results[i.name]) for i in infos)
    cases = sum(results[i.name].layout_cases for i in infos)
    lines.append(f"\n{len(infos)} ops, {failed} failing, {seconds:.1f}s, {cases:,} layout cases")
    return lines


# ---- the universe table --------------------------------------------------------------------------
@dataclass
class Row:
    entry: Entry
    infos: list

    def path(self) -> str:
        if self.entry.excluded:
            return "excluded"
        if not self.infos:
            return "missing: no OpInfo"
        paths = sorted({i.path for i in self.infos}, key=("rule", "boxed", "decomposition",
                                                          "loop").index)
        return "/".join(paths)

    def vectorised(self) -> bool:
        return any(i.path in VECTORISED for i in self.infos) and not self.entry.excluded


def _loop_samples(info) -> list[tuple[str, str]]:
    """(sample name, loop_reason) of the samples an OpInfo hands to the loop on purpose."""
    seen: dict = {}
    for dt in info.dtypes:
        try:
            samples = info.samples(np.random.default_rng(0), dt)
        except Exception:  # noqa: BLE001  (reported as a failure by the sweep)
            continue
        for s in samples:
            if s.loop_reason and s.loop_reason not in seen:
                seen[s.loop_reason] = f"{s.name} [{np.dtype(dt)}]"
    return [(n, r) for r, n in seen.items()]


def universe_report(results: dict[str, OpResult], seconds: float, swept: bool) -> list[str]:
    entries = universe()
    rows = [Row(e, [i for i in DATABASE if claims(e, i)]) for e in entries]
    claimed = {id(i) for r in rows for i in r.infos}
    extras = [i for i in DATABASE if id(i) not in claimed]

    def status(infos) -> str:
        if not infos:
            return ""
        rs = [results[i.name] for i in infos]
        if any(r.failures for r in rs):
            return "FAIL"
        return "pass" if all(r.ran for r in rs) else "not run"

    def samples(infos) -> int:
        return sum(results[i.name].samples for i in infos)

    duck_run = any(r.duck is not None for r in results.values())

    def duck_status(infos) -> str:
        ds = [results[i.name].duck for i in infos]
        if not ds or any(d is None for d in ds):
            return ""
        if all(d.excluded for d in ds):
            return "excluded"
        return "FAIL" if any(d.failures for d in ds) else "pass"

    active = [r for r in rows if not r.entry.excluded]
    vec = [r for r in active if r.vectorised()]
    loop_only = [r for r in active if r.infos and not r.vectorised()]
    missing = [r for r in active if not r.infos]
    failing_rows = [r for r in rows if status(r.infos) == "FAIL"]
    failing_ops = sorted({i.name for i in DATABASE if results[i.name].failures})
    pct = 100.0 * len(vec) / max(len(active), 1)
    vec_pass = [r for r in vec if status(r.infos) == "pass"]
    duck_pass = [r for r in vec if duck_status(r.infos) == "pass"]

    out = ["# Coverage of the NumPy API", "",
           f"Generated by `python -m opinfo --markdown docs/coverage.md` with NumPy "
           f"{np.__version__}. The universe is computed from the installed NumPy "
           f"(`opinfo/universe.py`): every ufunc, every public callable of `numpy`, "
           f"`numpy.linalg` and `numpy.fft` that NumPy dispatches through "
           f"`__array_function__`, the ufunc methods, and the `ndarray` methods and Python "
           f"operators that `BatchedTensor` implements. *path* is the path the OpInfo entries "
           f"declare and the sweep checks (several when several entries test one callable); "
           f"*vectorised* means rule, boxed or decomposition.", "",
           "## Totals", "",
           f"- callables in the universe: {len(rows)} ({len(rows) - len(active)} excluded, "
           f"{len(active)} not excluded)",
           f"- on a vectorised path: {len(vec)} ({len(vec_pass)} passing)",
           f"- loop fallback only: {len(loop_only)}",
           f"- missing (no OpInfo): {len(missing)}",
           f"- failing callables: {len(failing_rows)}; failing OpInfo entries: "
           f"{len(failing_ops)}" + ("" if swept else " (not swept: --no-sweep)"),
           f"- **{pct:.1f}% of non-excluded callables on a vectorised path** "
           f"(target: >= 90% with 0 failures)",
           f"- OpInfo entries: {len(DATABASE)}, samples: "
           f"{sum(r.samples for r in results.values())}, sweep time {seconds:.1f}s"]
    if duck_run:
        out.append(f"- on the duck backend (CuPy's contract, see below): {len(duck_pass)} of "
                   f"the {len(vec)} vectorised callables pass")
    out.append("")

    titles = {"ufunc": "Ufuncs", "function": "Functions (`__array_function__`)",
              "ufunc_method": "Ufunc methods", "method": "`ndarray` methods",
              "operator": "Python operators and protocols"}
    for kind, title in titles.items():
        krows = [r for r in rows if r.entry.kind == kind]
        kvec = sum(r.vectorised() for r in krows)
        kact = sum(not r.entry.excluded for r in krows)
        out += [f"## {title} ({kvec}/{kact} vectorised)", "",
                "| callable | path | OpInfo entries | samples | result |"
                + (" duck backend |" if duck_run else ""),
                "|---|---|---|---|---|" + ("---|" if duck_run else "")]
        for r in krows:
            e = r.entry
            name = f"`{e.name}`"
            if e.aliases:
                name += " (" + ", ".join(f"`{a}`" for a in e.aliases) + ")"
            if e.dunders and e.kind == "operator":
                name += " " + " ".join(f"`{d}`" for d in e.dunders)
            out.append(f"| {name} | {r.path()} | {len(r.infos)} | "
                       f"{samples(r.infos) if r.infos else ''} | {status(r.infos)} |"
                       + (f" {duck_status(r.infos)} |" if duck_run else ""))
        out.append("")
    if duck_run:
        out += duck_report(results)

    out += ["## Excluded", "", "| callable | reason |", "|---|---|"]
    out += [f"| `{r.entry.name}` | {r.entry.excluded} |" for r in rows if r.entry.excluded]
    out += ["", "## Loop fallback", "",
            "OpInfo entries whose path is the per-example loop, with the reason:", "",
            "| OpInfo | reason |", "|---|---|"]
    out += [f"| `{i.name}` | {i.loop_reason} |" for i in DATABASE if i.path == "loop"]
    out += ["", "Samples of vectorised entries that the rule hands to the loop on purpose "
            "(an argument combination it does not vectorise):", "",
            "| OpInfo | sample | reason |", "|---|---|---|"]
    for i in DATABASE:
        if i.path != "loop":
            out += [f"| `{i.name}` | {n} | {r} |" for n, r in _loop_samples(i)]
    out += ["", "## Outside the universe", "",
            "OpInfo entries that test a callable outside the universe (not dispatched by "
            "NumPy, or not public in numpy/linalg/fft):", "",
            "| OpInfo | path | samples | result | note |", "|---|---|---|---|---|"]
    for i in extras:
        note = next((v for k, v in NOT_DISPATCHED.items() if i.name.endswith(k)), "")
        if not is_known_extra(i.covers):
            note = "**covers a key that is not a NumPy callable**"
        out.append(f"| `{i.name}` | {i.path} | {results[i.name].samples} | "
                   f"{results[i.name].status} | {note} |")
    if failing_ops:
        out += ["", "## Failing OpInfo entries", ""] + [f"- `{n}`" for n in failing_ops]
    duck_failing = sorted(n for n, r in results.items() if r.duck and r.duck.failures)
    if duck_failing:
        out += ["", "## Failing on the duck backend", ""] + [f"- `{n}`" for n in duck_failing]
    out.append("")
    cases = sum(r.layout_cases for r in results.values())
    summary = (f"{len(DATABASE)} ops, {len(failing_ops)} failing, {seconds:.1f}s, {cases:,} "
               f"layout cases; universe "
               f"{len(rows)} callables, {pct:.1f}% of {len(active)} non-excluded vectorised")
    return out, summary


def duck_report(results: dict[str, OpResult]) -> list[str]:
    """The duck backend's section: what ran, what passed, and what is left out and why."""
    ducks = {n: r.duck for n, r in results.items() if r.duck is not None}
    ran = [n for n, d in ducks.items() if not d.excluded]
    passing = [n for n in ran if not ducks[n].failures]
    out = ["## Duck backend", "",
           "`python -m opinfo --backend duck` runs the sweep with the mapped arrays made "
           "`DuckArray`s (`opinfo/duck.py`): NumPy's functions through `__array_function__` / "
           "`__array_ufunc__` on a hidden ndarray, refusing `__array__` (so `np.asarray`), host "
           "reads (`item()`, `int()`, `float()`, `tolist()`) and mixing with plain ndarrays, as "
           "CuPy does, and honouring `like=`. The reference is the per-example loop on NumPy; "
           "vmap's array outputs must come back as DuckArrays. Every variant runs but the "
           "layout dimension (NumPy's memory semantics: CuPy has no read-only arrays) and "
           f"writes into unmapped arguments ({UNMAPPED_WRITES_GAP}). The *duck backend* column "
           "above is this sweep's result per callable.", "",
           f"- OpInfo entries run: {len(ran)} ({len(passing)} passing, "
           f"{len(ran) - len(passing)} failing), excluded: {len(ducks) - len(ran)}; samples: "
           f"{sum(d.samples for d in ducks.values())}, expected differences: "
           f"{sum(d.expected for d in ducks.values())}",
           f"- outputs that may be plain ndarrays (the op makes them from a host answer): "
           + ", ".join(f"`{n}`" for n in sorted(HOST_OUTPUTS)), "",
           "### Excluded on the duck backend", "", "| group | reason | OpInfo entries |",
           "|---|---|---|"]
    for group, (reason, _) in DUCK_EXCLUDED.items():
        names = sorted(n for n, d in ducks.items() if d.excluded
                       and d.excluded.startswith(f"{group}:"))
        out.append(f"| {group} | {reason} | {len(names)}: "
                   + ", ".join(f"`{n}`" for n in names[:12]) + (", ..." if len(names) > 12
                                                                else "") + " |")
    out += ["", "### Expected differences on the duck backend", "",
            "Samples left out (scope *all*) or whose nested variants are left out (*nested*):",
            "", "| OpInfo | sample | scope | reason |", "|---|---|---|---|"]
    out += [f"| `{name}` | {sample or 'every sample'} | {scope} | {reason} |"
            for (name, sample), (scope, reason) in DUCK_EXPECTED.items()]
    out.append("")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m opinfo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="OpInfo names (prefixes) to run; default: the "
                                                 "whole database and the universe table")
    parser.add_argument("--markdown", metavar="FILE", help="also write the table to FILE")
    parser.add_argument("--no-sweep", action="store_true",
                        help="do not run the sweep: declared paths and sample counts only")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                        help="worker processes for the sweep (default: all cores)")
    parser.add_argument("--adversarial", type=int, metavar="N",
                        help="run N random programs against the per-example loop instead of the "
                             "sweep, and print each failure with a reproducer")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the --adversarial run (default 0)")
    parser.add_argument("--backend", choices=("numpy", "duck", "both"), default="both",
                        help="physical arrays to sweep with: NumPy's, the strict duck array "
                             "of opinfo/duck.py (CuPy's contract), or both (default)")
    args = parser.parse_args(argv)
    if args.adversarial is not None:
        from . import adversarial  # noqa: PLC0415  (hypothesis is needed only here)

        report = adversarial.run(args.adversarial, seed=args.seed)
        print(adversarial.main_summary(report))
        return 1 if report.failures else 0
    infos = select(args.names)
    t0 = time.time()
    backends = ("numpy", "duck") if args.backend == "both" else (args.backend,)
    results = run_all([i.name for i in infos], args.jobs, not args.no_sweep, backends)
    seconds = time.time() - t0
    for i in infos:
        r = results[i.name]
        for f in r.failures[:3]:
            print(f"FAIL {f[:2000]}", file=sys.stderr)
        for f in (r.duck.failures[:3] if r.duck else []):
            print(f"FAIL [duck backend] {f[:2000]}", file=sys.stderr)
    if args.names:
        lines = ops_table(infos, results, seconds)
        summary = None
    else:
        lines, summary = universe_report(results, seconds, not args.no_sweep)
    print("\n".join(lines))
    if summary:
        print(summary)
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write("\n".join(lines) + "\n")
    return 1 if any(map(_failed, results.values())) else 0


if __name__ == "__main__":
    sys.exit(main())
