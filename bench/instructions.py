"""Instructions per vmap call, counted by valgrind: a figure the machines' drift cannot move.

Wall-clock timings here drift up to 2.5x within a minute, which hides changes of a few percent
in a vmap call's fixed cost. ``valgrind --tool=callgrind`` counts the instructions the CPU
runs instead, the same on every run (``PYTHONHASHSEED=0``, the garbage collector off): only
those inside ``functools.reduce``, which calls the case ``--calls`` times, are counted, so the
interpreter's start and the imports are not. Fewer instructions is not always less time (the
caches, branch prediction), so a speed claim still needs ``bench/revisions.py``; but where two
revisions differ by a few thousand instructions per call, this says so every time.

Each case (the calls in ``CASES`` and every workload of ``bench/workloads.py``) runs once per
revision (``--base``, checked out into a temporary git worktree, and this checkout), in a
process of its own; a run takes 20 s (a call) to several minutes (solve16). Needs valgrind.

    python bench/instructions.py --base <commit> [--calls 300] [--cases identity pairwise ...]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: name -> code that defines ``f`` and ``args`` (``bt``, ``np``, ``workloads`` and
#: ``A`` (32 x 3), ``B`` (32 x 3), ``X`` (64 x 8) are there)
CASES = {
    "identity": "f, args = bt.vmap(lambda v: v), (X,)",
    "x.sum()": "f, args = bt.vmap(lambda v: v.sum()), (A,)",
    "an unmapped array": "f, args = bt.vmap(lambda a, b: a, (0, None)), (A, B)",
    "distances to B": ("f, args = bt.vmap(lambda a, b: np.sqrt(((a[None] - b) ** 2).sum(-1)), "
                       "(0, None)), (A, B)"),
    "nested identity": ("inner = bt.vmap(lambda a, b: b, (None, 0))\n"
                        "f, args = bt.vmap(lambda a, b: inner(a, b), (0, None)), (A, B)"),
}
# every workload of bench/workloads.py, as bench/revisions.py calls it
_WORKLOAD = ("w = next(w for w in workloads.WORKLOADS if w.name == {name!r})\n"
             "args, axes = w.make(np.random.default_rng(0), 'dispatch')\n"
             "f = (bt.vmap(bt.vmap(w.per_example, (None, 0)), (0, None)) if axes == 'nested'\n"
             "     else bt.vmap(w.per_example, in_axes=axes))")
CASES.update({f"{name} (workload)": _WORKLOAD.format(name=name)
              for name in ("pairwise", "xent", "mlp", "ensemble", "solve4", "solve16",
                           "lorenz_rk4", "convolve", "sort_cumsum_searchsorted")})

_RUN = """
import functools, gc, sys
sys.path.insert(0, {root!r}); sys.path.insert(0, {bench!r})
import numpy as np, batchtensor as bt, workloads
rng = np.random.default_rng(0)
A, B, X = rng.normal(size=(32, 3)), rng.normal(size=(32, 3)), rng.normal(size=(64, 8))
{case}
for _ in range(20):
    f(*args)
gc.disable()
functools.reduce(lambda acc, _: f(*args), range({calls}), None)
"""


def count(root: Path, case: str, calls: int) -> int:
    """Instructions per call of ``case`` with the package in ``root``."""
    script = _RUN.format(root=str(root), bench=str(ROOT / "bench"), case=CASES[case],
                         calls=calls)
    env = dict(os.environ, PYTHONHASHSEED="0")
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
         "--collect-atstart=no", "--toggle-collect=*functools_reduce*",
         sys.executable, "-c", script], capture_output=True, text=True, env=env)
    found = re.search(r"Collected : (\d+)", out.stderr)
    if out.returncode or not found:
        raise RuntimeError(f"{case} under valgrind failed:\n{out.stderr[-2000:]}")
    return int(found.group(1)) // calls


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", required=True, help="the commit to compare this checkout with")
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    a = p.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: nothing to count", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        base_tree = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(base_tree), a.base],
                       cwd=ROOT, check=True, capture_output=True)
        try:
            print(f"instructions per call, base {a.base} vs this checkout "
                  f"({a.calls} calls each)\n")
            print("| case | base | new | new / base |")
            print("|---|---|---|---|")
            for case in a.cases:
                old, new = count(base_tree, case, a.calls), count(ROOT, case, a.calls)
                print(f"| {case} | {old:,} | {new:,} | {new / old:.3f} |", flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base_tree)], cwd=ROOT,
                           check=False, capture_output=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
