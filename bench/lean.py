"""What lean first passes save a vmap call: ``bt.config(lean_passes=...)`` toggled round by round.

A function's pass goes without the replacements that only turn NumPy's refusals into
vectorised calls (``batchtensor.conversions.LEAN_SKIPS``) until it meets a refusal
(``docs/architecture.md``). The functions here need none of them, so every call is lean with
the setting on and full with it off; the same vmap objects serve both. Per case, the median
over rounds of each round's median call time, and the ratio lean / full (below 1: lean is
cheaper). ``--imports`` imports modules first, as a user's program would (the replacements
every pass keeps grow with them: foreign functions' rules).

    python bench/lean.py [--rounds 21] [--imports scipy.signal sklearn.metrics]
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import batchtensor as bt  # noqa: E402
from workloads import distance  # noqa: E402


def cases() -> dict:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 8))
    a, b = rng.normal(size=(32, 3)), rng.normal(size=(32, 3))
    identity = bt.vmap(lambda v: v)
    double = bt.vmap(lambda v: v * 2.0)
    pairwise = bt.vmap(bt.vmap(distance, in_axes=(None, 0)), in_axes=(0, None))
    return {"identity (µs)": lambda: identity(x), "x * 2.0 (µs)": lambda: double(x),
            "pairwise by nested vmap (µs)": lambda: pairwise(a, b)}


def measure(rounds: int, calls: int = 200) -> dict:
    table = cases()
    samples: dict = {(k, lean): [] for k in table for lean in (True, False)}
    for r in range(rounds):
        for lean in ((True, False) if r % 2 else (False, True)):
            with bt.config(lean_passes=lean):
                for k, fn in table.items():
                    fn()  # (untimed: the first call of a round)
                    times = []
                    for _ in range(calls):
                        t = time.perf_counter()
                        fn()
                        times.append(time.perf_counter() - t)
                    samples[(k, lean)].append(statistics.median(times))
    return {k: {"lean": statistics.median(samples[(k, True)]) * 1e6,
                "full": statistics.median(samples[(k, False)]) * 1e6,
                "lean / full": statistics.median(a / b for a, b in zip(samples[(k, True)],
                                                                        samples[(k, False)]))}
            for k in table}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=21)
    p.add_argument("--imports", nargs="*", default=[], metavar="MODULE")
    a = p.parse_args(argv)
    for module in a.imports:
        importlib.import_module(module)
    table = measure(a.rounds)
    imported = f", after importing {', '.join(a.imports)}" if a.imports else ""
    print(f"medians of {a.rounds} rounds{imported}\n")
    print("| call | lean | full | lean / full (median of rounds) |")
    print("|---|---|---|---|")
    for k, v in table.items():
        print(f"| {k} | {v['lean']:.1f} | {v['full']:.1f} | {v['lean / full']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
