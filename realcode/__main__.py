"""``python -m realcode``: run the real-code corpus under ``bt.vmap`` and report.

- ``python -m realcode`` — run every entry and print the summary.
- ``python -m realcode --markdown docs/realcode.md`` — also write the report page.
- ``python -m realcode NAME [NAME ...]`` — run the entries whose name starts with one of
  the NAMEs and print each run's status and cause (``-v`` for every run).
- ``python -m realcode --known realcode/known_errors.py`` — also write the table of the
  (entry, variant) pairs whose default path raises, which ``tests/test_realcode.py`` marks
  as strict expected failures: rerun it after a fix makes some pass.
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
from .report import COMMAND, markdown, summary_text


def _run(name: str):
    return name, run_entry(BY_NAME[name])


def known_errors_module(results: dict) -> str:
    """The source of ``realcode/known_errors.py``: for each entry, the variants whose
    default path raised in some case, with the cause (one cause for all the variants that
    ran, or one per variant)."""
    table: dict[str, dict[str, str]] = {}
    for name, outs in results.items():
        for o in outs:
            if o.status is Status.ERROR:
                table.setdefault(name, {}).setdefault(o.variant, cause_of(o)[0])
    lines = ['"""The (entry, variant) pairs whose default path raises today, with the cause',
             "(a key of ``realcode.causes``): a string for every variant the entry runs, or",
             "a dict per variant. ``tests/test_realcode.py`` marks them ``xfail(strict=True)``:",
             "a fix that makes one pass fails that test until this file is regenerated with",
             "",
             f"    {COMMAND}",
             '"""', "", "KNOWN_ERRORS: dict[str, str | dict[str, str]] = {"]
    for name in sorted(table):
        ran = {o.variant for o in results[name] if o.status is not Status.SKIPPED}
        causes = set(table[name].values())
        if set(table[name]) == ran and len(causes) == 1:
            lines.append(f"    {name!r}: {causes.pop()!r},")
            continue
        lines.append(f"    {name!r}: {{")
        for variant, key in table[name].items():
            lines.append(f"        {variant!r}: {key!r},")
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m realcode", description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help="entry name prefixes (default: every entry)")
    p.add_argument("--markdown", metavar="FILE", help="write the report page to FILE")
    p.add_argument("--known", metavar="FILE", help="write the known-errors table to FILE")
    p.add_argument("-j", "--jobs", type=int, default=1, help="processes (default 1)")
    p.add_argument("-v", "--verbose", action="store_true", help="print every run")
    a = p.parse_args(argv)
    names = [n for n in BY_NAME if not a.names or any(n.startswith(x) for x in a.names)]
    if not names:
        p.error(f"no entry starts with {a.names}")
    if (a.markdown or a.known) and a.names:
        p.error("--markdown and --known cover the whole corpus: give no names")
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
    if a.known:
        with open(a.known, "w") as fh:
            fh.write(known_errors_module(results))
        print(f"wrote {a.known}")
    bad = any(o.status in (Status.WRONG, Status.INVALID) for outs in results.values()
              for o in outs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
