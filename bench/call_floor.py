"""What is left of a vmap call's fixed cost: the swaps every pass keeps.

An outermost vmap call installs, and removes again, the replacements every pass needs, lean
ones too (``batchtensor.conversions``: ``numpy.random``'s module class and
``numpy.random.mtrand._rand``, without which ``np.random.normal`` or a ``default_rng`` made
inside ``f`` would give every example one draw, with no error), under a lock. Three ways to
run the same vmap objects, interleaved round by round:

- ``default``;
- ``no swaps every pass keeps``: the same call with the plans that install and remove those
  replacements emptied (``conversions._plans``, put back after each round): what the call would
  cost without them, all else equal (not a mode to run: it gives every example one draw);
- ``intercept_numpy=False``: ``bt.config``'s switch, which also skips the lock's bookkeeping.

Per case the median of the rounds' per-call times in µs, and each way's ratio to the default.

    python bench/call_floor.py [--rounds 21]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import batchtensor as bt  # noqa: E402
from batchtensor import conversions  # noqa: E402


def per_call(f, args, number: int) -> float:
    t = time.perf_counter()
    for _ in range(number):
        f(*args)
    return (time.perf_counter() - t) / number * 1e6


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--number", type=int, default=300)
    a = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1024, 10))
    cases = {
        "identity, [64, 8]": (bt.vmap(lambda v: v), (rng.normal(size=(64, 8)),)),
        "x.max(), [1024, 10]": (bt.vmap(lambda v: v.max()), (x,)),
        "xent's ops, [1024, 10]": (bt.vmap(lambda v: v - np.log(np.exp(v - v.max()).sum())),
                                   (x,)),
    }
    times: dict[tuple[str, str], list[float]] = {}
    for f, args in cases.values():
        f(*args)
    plans = conversions._plan()
    for _ in range(a.rounds):
        for name, (f, args) in cases.items():
            times.setdefault((name, "default"), []).append(per_call(f, args, a.number))
            conversions._plans = ((), (), plans[2], plans[3])
            try:
                times.setdefault((name, "no swaps every pass keeps"), []).append(
                    per_call(f, args, a.number))
            finally:
                conversions._plans = None
            with bt.config(intercept_numpy=False):
                times.setdefault((name, "intercept_numpy=False"), []).append(
                    per_call(f, args, a.number))
    ways = ["default", "no swaps every pass keeps", "intercept_numpy=False"]
    print(f"medians of {a.rounds} rounds, µs per call (ratio to the default)")
    print("| case | " + " | ".join(ways) + " |")
    print("|---|" + "---:|" * len(ways))
    for name in cases:
        base = statistics.median(times[(name, "default")])
        cells = []
        for way in ways:
            m = statistics.median(times[(name, way)])
            cells.append(f"{m:.2f} ({m / base:.2f})")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
