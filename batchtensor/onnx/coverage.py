"""Which NumPy functions export: every OpInfo sample, exported under ``vmap`` and validated.

``python -m batchtensor.onnx.coverage [NAME ...] [--write docs/onnx.md] [-v]`` exports each
sample of each OpInfo entry (all its array arguments mapped, five examples each) with
``bt.onnx.export(..., validate=True)``: the ONNX checker, shape inference and onnxruntime at
batch sizes 1, 3 and 7 against eager vmap. It prints one row per op, and with ``--write``
replaces the generated table in docs/onnx.md.

Statuses: **yes** (every sample exports and matches), **partial** (some samples are refused,
e.g. one dtype or keyword), **no** (every sample refused; the first reason is shown),
**FAIL** (an export that raised something else or did not match eager vmap: a bug).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import warnings
from collections import Counter

import numpy as np

from ..api import vmap
from ..pytree import flatten, unflatten
from .errors import ExportError, ExportValidationError
from .exporter import export

__all__ = ["op_coverage", "main", "COVERAGE_DTYPES"]

#: dtypes tried per op (those the op's OpInfo lists)
COVERAGE_DTYPES = (np.float64, np.float32, np.int64, np.int32, np.bool_)
N_EXAMPLES = 5
BEGIN, END = "<!-- BEGIN GENERATED EXPORT TABLE -->", "<!-- END GENERATED EXPORT TABLE -->"


def _sample_fn(op, td, leaves, arrays):
    def f(*xs):
        full = list(leaves)
        for j, x in zip(arrays, xs):
            full[j] = x
        args, kwargs = unflatten(td, full)
        return op(*args, **kwargs)
    return f


def _short(msg: object) -> str:
    msg = str(msg).split("\n")[0]
    msg = re.sub(r"\(called at [^)]*\)", "", msg)
    msg = re.sub(r"\s+", " ", msg)
    return msg[:150]


def op_coverage(info, dtypes=COVERAGE_DTYPES, opset: int = 18) -> dict:
    """Export every sample of ``info`` for the listed dtypes it supports; returns counts and the
    first message per outcome."""
    from opinfo.sweep import draw_examples  # noqa: PLC0415


    counts: Counter = Counter()
    first: dict = {}
    chosen = [d for d in dtypes if any(np.dtype(d) == np.dtype(t) for t in info.dtypes)]
    if not chosen:  # an entry for unusual dtypes only: its own first dtype, and float64
        chosen = ([info.dtypes[0]] if np.dtype(info.dtypes[0]).kind in "biuf" else []) \
            + [np.float64]
    for dtype in chosen:
        try:
            groups = draw_examples(info, dtype, N_EXAMPLES)
        except Exception as e:  # noqa: BLE001
            if not any(np.dtype(dtype) == np.dtype(t) for t in info.dtypes):
                continue  # the float64 tried for an entry of other dtypes has no samples
            counts["FAIL"] += 1
            first.setdefault("FAIL", f"samples: {_short(e)}")
            continue
        for examples in groups:
            if examples[0].loop_reason:
                continue
            leaves, td = flatten((examples[0].args, examples[0].kwargs))
            arrays = [j for j, x in enumerate(leaves) if isinstance(x, np.ndarray)]
            if not arrays:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    info.op(*examples[0].args, **examples[0].kwargs)
            except Exception:  # noqa: BLE001  (NumPy rejects this sample: nothing to export)
                continue
            stacked = []
            for j in arrays:
                stacked.append(np.stack([flatten((e.args, e.kwargs))[0][j] for e in examples]))
            f = _sample_fn(info.op, td, leaves, arrays)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    vmap(f)(*stacked)
            except Exception:  # noqa: BLE001  (some example raises under vmap: not exportable)
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = export(f, *stacked, opset=opset, validate=info.check_values,
                                   rtol=info.rtol32 * 5 if np.dtype(dtype).itemsize < 8
                                   else None)
                if not info.check_values:  # values unspecified (np.empty): structure only
                    import onnx  # noqa: PLC0415

                    onnx.checker.check_model(model, full_check=True)
                counts["ok"] += 1
            except ExportValidationError as e:
                counts["FAIL"] += 1
                first.setdefault("FAIL", f"{np.dtype(dtype)} {examples[0].name}: {_short(e)}")
            except ExportError as e:
                counts["refused"] += 1
                first.setdefault("refused", f"{np.dtype(dtype)}: {_short(e)}")
            except Exception as e:  # noqa: BLE001
                counts["FAIL"] += 1
                first.setdefault("FAIL", f"{np.dtype(dtype)} {examples[0].name}: "
                                         f"{type(e).__name__}: {_short(e)}")
    return {"counts": counts, "first": first}


def status_of(res: dict) -> tuple[str, str]:
    c = res["counts"]
    if c["FAIL"]:
        return "FAIL", res["first"]["FAIL"]
    if not c["ok"] and not c["refused"]:
        return "n/a", "no exportable sample"
    if not c["refused"]:
        return "yes", ""
    if not c["ok"]:
        return "no", res["first"]["refused"]
    return "partial", res["first"]["refused"]


def table(rows: list) -> str:
    lines = ["| op | exports | samples ok / refused | first refusal |",
             "|---|---|---|---|"]
    for name, st, c, why in rows:
        why = why.replace("|", "\\|")
        lines.append(f"| `{name}` | {st} | {c['ok']} / {c['refused']} | {why} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    from opinfo import DATABASE  # noqa: PLC0415

    p = argparse.ArgumentParser(prog="python -m batchtensor.onnx.coverage")
    p.add_argument("names", nargs="*")
    p.add_argument("--write", metavar="MARKDOWN")
    p.add_argument("-v", action="store_true")
    a = p.parse_args(argv)
    infos = [i for i in DATABASE if i.path != "loop"
             and (not a.names or any(i.name.startswith(n) for n in a.names))]
    rows = []
    t0 = time.time()
    for info in infos:
        res = op_coverage(info)
        st, why = status_of(res)
        rows.append((info.name, st, res["counts"], why))
        if a.v or st == "FAIL":
            print(f"{info.name:28s} {st:8s} {dict(res['counts'])} {why}", flush=True)
    summary = Counter(r[1] for r in rows)
    print(f"{len(rows)} ops: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.items()))
          + f" ({time.time() - t0:.0f} s)")
    if a.write:
        text = open(a.write).read()
        body = (f"{BEGIN}\n\nGenerated by `python -m batchtensor.onnx.coverage --write "
                f"{a.write}` ({len(rows)} OpInfo entries; " + ", ".join(
                    f"{k}: {v}" for k, v in sorted(summary.items())) + ").\n\n"
                + table(rows) + f"\n\n{END}")
        if BEGIN in text:
            text = text[:text.index(BEGIN)] + body + text[text.index(END) + len(END):]
        else:
            text = text.rstrip() + "\n\n" + body + "\n"
        with open(a.write, "w") as fh:
            fh.write(text)
    return 1 if summary.get("FAIL") else 0


if __name__ == "__main__":
    sys.exit(main())
