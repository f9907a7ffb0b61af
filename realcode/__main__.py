"""``python -m realcode``: run the real-code corpus under ``bt.vmap`` and report.

- ``python -m realcode`` — run every entry and print the summary.
- ``python -m realcode --markdown docs/realcode.md`` — also write the report page.
- ``python -m realcode NAME [NAME ...]`` — run the entries whose name starts with one of
  the NAMEs and print each run's status and cause (``-v`` for every run).
- ``-j N`` runs entries in N processes (default: 1).
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from . import BY_NAME, MODULES, run_entry
from .causes import cause_of
from .core import Status
from .report import markdown, summary_text


def _run(name: str):
    return name, run_entry(BY_NAME[name])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m realcode", description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help="entry name prefixes (default: every entry)")
    p.add_argument("--markdown", metavar="FILE", help="write the report page to FILE")
    p.add_argument("-j", "--jobs", type=int, default=1, help="processes (default 1)")
    p.add_argument("-v", "--verbose", action="store_true", help="print every run")
    a = p.parse_args(argv)
    names = [n for n in BY_NAME if not a.names or any(n.startswith(x) for x in a.names)]
    if not names:
        p.error(f"no entry starts with {a.names}")
    if a.markdown and a.names:
        p.error("--markdown reports the whole corpus: give no names")
    start = time.perf_counter()
    if a.jobs > 1:
        with ProcessPoolExecutor(a.jobs) as pool:
            results = dict(pool.map(_run, names, chunksize=4))
    else:
        results = dict(map(_run, names))
    results = {n: results[n] for n in names}
    elapsed = time.perf_counter() - start
    functions = {n: BY_NAME[n].function_name for n in names}
    groups = {e.name: lib for lib, m in MODULES.items() for e in m.ENTRIES}
    if a.names or a.verbose:
        for name, outs in results.items():
            for o in outs:
                if o.status is Status.VECTORISED and not a.verbose:
                    continue
                cause = "" if o.status is Status.VECTORISED else cause_of(o)[1]
                print(f"{name} [{o.variant} {o.case}] {o.status.value}: {cause}"
                      + (f" ({o.detail})" if o.status is Status.WRONG else ""))
    print(summary_text(results, functions))
    print(f"({elapsed:.0f} s)")
    if a.markdown:
        with open(a.markdown, "w") as fh:
            fh.write(markdown(results, functions, groups, list(MODULES)))
        print(f"wrote {a.markdown}")
    bad = any(o.status in (Status.WRONG, Status.INVALID) for outs in results.values()
              for o in outs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
