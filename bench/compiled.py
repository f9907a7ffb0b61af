"""What a compiled operator fast path would buy: BatchedTensor's operators in C, measured.

Builds ``bench/compiled/_fastops.c`` (a measurement prototype, not part of the package: the
binary operators ``x + y``, ``x * 2.0``, ``0.005 * x``... and ``x[i]`` of the pure-Python fast
paths, as C callables that hand every other case to the Python function) with the C compiler,
then, in one process, swaps BatchedTensor's operators between the package's Python functions
and the C ones round by round, interleaved:

- per op, above NumPy's own call on the physical arrays (batch 1024, 1-d examples of 0-d,
  ``s`` of [3]): ``x + y``, ``x * 2.0``, ``0.005 * x``, ``s[1]``, each through the Python and
  the C operator;
- the Lorenz RK4 step (``bench/workloads.py``, batch 1024, dispatch-bound): hand-vectorised
  NumPy, ``bt.vmap`` with the Python and with the C operators, ``bench/floor.py``'s
  ``operators`` wrapper, and the fixed cost of a ``bt.vmap`` call (identity of ``(s, p)``);
  and, from those, what Lorenz would reach with a cheaper call.

Every method's result is checked before timing (the C operators against the Python ones, bit
for bit). Needs a C compiler and Python's headers; without them it says so and stops.

    python bench/compiled.py [--repeat 31] [--json FILE]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import batchtensor as bt  # noqa: E402
from batchtensor.levels import Level  # noqa: E402
from batchtensor.operators import BINARY  # noqa: E402
from batchtensor.plumbing import SCALAR_TYPES  # noqa: E402
from batchtensor.registry import RECORDERS  # noqa: E402
from floor import Operators, _through  # noqa: E402
from workloads import make_rk4, rk4, rk4_vec  # noqa: E402

BT = bt.BatchedTensor


def build(out_dir: Path):
    """Compile and import ``_fastops``; None (with the reason printed) where it cannot."""
    paths = sysconfig.get_paths()
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    target = out_dir / f"_fastops{suffix}"
    cmd = [sysconfig.get_config_var("CC").split()[0] if sysconfig.get_config_var("CC") else "cc",
           "-O2", "-shared", "-fPIC", f"-I{paths['include']}", f"-I{np.get_include()}",
           str(HERE / "compiled" / "_fastops.c"), "-o", str(target)]
    try:
        subprocess.run(cmd, check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"cannot build the prototype ({' '.join(cmd)}): "
              f"{getattr(e, 'stderr', None) or e}", file=sys.stderr)
        return None
    spec = importlib.util.spec_from_file_location("_fastops", target)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.init(BT, Level, RECORDERS, SCALAR_TYPES)
    return mod


def operator_sets(fastops) -> tuple[dict, dict]:
    """``(python, c)``: BatchedTensor attribute -> callable, for the operators swapped."""
    python, c = {}, {}
    for name, uf in BINARY.items():
        if name == "pow":  # (ndarray's own ** for Python exponents: not the plain ufunc)
            continue
        for attr, reflected in ((f"__{name}__", False), (f"__r{name}__", True)):
            python[attr] = BT.__dict__[attr]
            c[attr] = fastops.BinOp(uf, python[attr], reflected)
    python["__getitem__"] = BT.__dict__["__getitem__"]
    c["__getitem__"] = fastops.GetItem(python["__getitem__"])
    return python, c


def use(ops: dict) -> None:
    for attr, fn in ops.items():
        setattr(BT, attr, fn)


def _time(fn, number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def measure(fastops, repeat: int) -> dict:
    python, c = operator_sets(fastops)
    rng = np.random.default_rng(0)
    a, b, S = rng.normal(size=1024), rng.normal(size=1024), rng.normal(size=(1024, 3))
    (s, p), _ = make_rk4(np.random.default_rng(0), "dispatch")
    lorenz = bt.vmap(rk4, chunk_size=None)
    identity = bt.vmap(lambda s, p: s, chunk_size=None)
    floor_ops = _through(Operators)

    def per_op():  # name -> (batched op, NumPy's own call on the physical arrays)
        x, y, sb = BT(a, 0), BT(b, 0), BT(S, 0)  # (at the level open now)
        return {"x + y": (lambda: x + y, lambda: a + b),
                "x * 2.0": (lambda: x * 2.0, lambda: a * 2.0),
                "0.005 * x": (lambda: 0.005 * x, lambda: 0.005 * a),
                "s[1]": (lambda: sb[1], lambda: S[:, 1].copy())}

    try:
        # correctness first: the C operators give the Python operators' values, bit for bit
        with bt.vmap_level():
            for name, (op, _) in per_op().items():
                use(python)
                want = op()
                use(c)
                got = op()
                assert type(got) is BT and got._bdim == want._bdim and got._level is want._level
                assert np.array_equal(got._value, want._value), name
        use(python)
        want = lorenz(s, p)
        np.testing.assert_allclose(want, rk4_vec(s, p), rtol=1e-12)
        use(c)
        assert np.array_equal(lorenz(s, p), want)
        use(python)

        names = ("x + y", "x * 2.0", "0.005 * x", "s[1]")
        op_samples: dict = {(n, k): [] for n in names for k in ("python", "c")}
        lorenz_samples: dict = {k: [] for k in ("vectorised", "bt.vmap (Python operators)",
                                                "bt.vmap (C operators)", "operators floor",
                                                "vmap call (identity)")}
        for r in range(repeat):
            with bt.vmap_level():
                cases = per_op()
                for path, ops in (("python", python), ("c", c))[:: 1 if r % 2 else -1]:
                    use(ops)
                    for name, (op, own) in cases.items():
                        t_op, t_own = _time(op, 1000), _time(own, 1000)
                        op_samples[(name, path)].append(t_op - t_own)
            use(python)
            for name, fn in (("vectorised", lambda: rk4_vec(s, p)),
                             ("bt.vmap (Python operators)", lambda: lorenz(s, p)),
                             ("operators floor", lambda: floor_ops(s, p)),
                             ("vmap call (identity)", lambda: identity(s, p))):
                fn()
                lorenz_samples[name].append(_time(fn, 100))
            use(c)
            lorenz(s, p)
            lorenz_samples["bt.vmap (C operators)"].append(_time(lambda: lorenz(s, p), 100))
            use(python)
    finally:
        use(python)
    vec = lorenz_samples["vectorised"]
    return {
        "repeat": repeat,
        "per_op_above_numpy_us": {f"{n} ({k})": statistics.median(v) * 1e6
                                  for (n, k), v in op_samples.items()},
        "lorenz_us": {k: statistics.median(v) * 1e6 for k, v in lorenz_samples.items()},
        # medians of the per-round ratios: each round's methods ran back to back
        "lorenz_ratio": {k: statistics.median(t / v0 for t, v0 in zip(v, vec))
                         for k, v in lorenz_samples.items()},
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=31)
    ap.add_argument("--json", metavar="FILE")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        fastops = build(Path(tmp))
        if fastops is None:
            return 1
        r = measure(fastops, a.repeat)
    print(f"per op above NumPy's own call, batch 1024 (medians of {a.repeat} interleaved "
          f"rounds)\n")
    print("| op | Python operators (µs) | C operators (µs) |")
    print("|---|---|---|")
    ops = r["per_op_above_numpy_us"]
    for name in ("x + y", "x * 2.0", "0.005 * x", "s[1]"):
        print(f"| {name} | {ops[f'{name} (python)']:.3f} | {ops[f'{name} (c)']:.3f} |")
    print(f"\nLorenz RK4 step, batch 1024 (medians of {a.repeat} rounds; ratio: median of the "
          f"per-round ratios to vectorised)\n")
    print("| method | time per call | ratio to vectorised |")
    print("|---|---|---|")
    for k, v in r["lorenz_us"].items():
        print(f"| {k} | {v:.1f} µs | {r['lorenz_ratio'][k]:.2f}× |")
    call = r["lorenz_ratio"]["vmap call (identity)"]
    print(f"\nthe vmap call's fixed cost is {call:.2f}× of vectorised Lorenz; with a call of a "
          f"quarter of it, Lorenz would be at about "
          f"{r['lorenz_ratio']['bt.vmap (Python operators)'] - 0.75 * call:.2f}× (Python "
          f"operators) and {r['lorenz_ratio']['bt.vmap (C operators)'] - 0.75 * call:.2f}× "
          f"(C operators)")
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
