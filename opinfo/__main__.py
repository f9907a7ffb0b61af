"""``python -m opinfo [name ...]``: run the sweep and print the coverage table."""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from . import DATABASE, sweep_op


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m opinfo", description=__doc__)
    parser.add_argument("names", nargs="*", help="OpInfo names (prefixes) to run; default all")
    parser.add_argument("--markdown", metavar="FILE", help="also write the table to FILE")
    args = parser.parse_args(argv)
    rows = []
    failed = 0
    t0 = time.time()
    for info in DATABASE:
        if args.names and not any(info.name == n or info.name.startswith(n + ".")
                                  or info.name.startswith(n) for n in args.names):
            continue
        samples = 0
        fails = []
        paths = set()
        for dt in info.dtypes:
            r = sweep_op(info, dt, raise_first=False)
            samples += r.samples
            fails += [f"[{np.dtype(dt)}] {f}" for f in r.failures]
            paths |= r.paths
        failed += bool(fails)
        rows.append((info.name, info.path, samples, "FAIL" if fails else "pass"))
        for f in fails[:3]:
            print(f"FAIL {f[:2000]}", file=sys.stderr)
    lines = ["| op | path | samples | result |", "|---|---|---|---|"]
    lines += [f"| `{n}` | {p} | {s} | {r} |" for n, p, s, r in rows]
    lines.append(f"\n{len(rows)} ops, {failed} failing, {time.time() - t0:.1f}s")
    print("\n".join(lines))
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write("\n".join(lines) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
