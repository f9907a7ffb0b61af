"""Hand-written machinery against the libraries that do the same job: optree, executing,
array-api-compat.

Four comparisons, each timed in one run with its methods interleaved (every repeat times
every method once, so the machine's drift hits them alike) and reported as medians of the
repeats, in microseconds per call. Compare figures of one table only:

- pytrees: ``batchtensor.pytree``'s flatten / unflatten against optree's, on what vmap
  flattens per call (a tuple of arrays, a dict of 5, a nested tree of 20 leaves, a namedtuple,
  a dataclass); then whole ``bt.vmap`` calls with the current code and with optree put in
  ``batchtensor.api``'s place (in this process only), one of them a function whose branches
  split the batch into groups and that returns a tuple;
- the user's line: ``diagnostics.user_stacklevel`` / ``user_line`` (the first frame outside
  batchtensor and NumPy, for warnings and messages) under eight package frames, and the
  bytecode readers (``returned_as_is``: is ``float(x)`` returned as it is; the name ``out``
  of ``out[i] = x``) against ``executing.Source.executing(frame).node``, warm (cached per
  instruction, as both are in use) and cold (first sight of the site: executing parses the
  whole source file, of about 1,500 lines here);
- the backend: ``registry.is_physical_type`` and ``np.zeros(n, like=x)`` (how the code tells
  and follows NumPy, CuPy or the ONNX recorder) against ``array_api_compat``'s
  ``is_numpy_array`` / ``array_namespace``;
- import time: numpy, batchtensor and each library imported in a fresh interpreter;
- semantics: the cases where the libraries answer otherwise than our code (printed, not
  timed).

A library that is not installed is named and its columns left out.

    python bench/libraries.py [--repeat 21] [--json FILE]
"""

from __future__ import annotations

import argparse
import ast
import collections
import dataclasses
import importlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import batchtensor as bt  # noqa: E402
from batchtensor import diagnostics, pytree  # noqa: E402
from batchtensor.onnx.recorder import TArray  # noqa: E402
from batchtensor.registry import is_physical_type  # noqa: E402

api = importlib.import_module("batchtensor.api")  # (bt.api may name the function's module)


def _optional(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


optree = _optional("optree")
executing = _optional("executing")
xpc = _optional("array_api_compat")


def _per_call(fn, number: int) -> float:
    t = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t) / number


def compare(methods: dict, repeat: int, number: int) -> dict:
    """Median µs per call of each method, the methods interleaved in every repeat."""
    samples: dict = {k: [] for k in methods}
    for _ in range(repeat):
        for k, fn in methods.items():
            samples[k].append(_per_call(fn, number))
    return {k: statistics.median(v) * 1e6 for k, v in samples.items()}


# ---- 1. pytrees ---------------------------------------------------------------------------------
P3 = collections.namedtuple("P3", "x y z")


@dataclasses.dataclass
class D3:
    x: object
    y: object
    z: object


def _trees() -> dict:
    a = np.zeros(4)
    nested = {"params": {"w1": a, "b1": a, "w2": a, "b2": a},
              "state": [a, a, (a, a, None)],
              "batch": ({"x": a, "y": a}, [a, a, a]),
              "extra": (a, [a, {"k": a, "v": a}], a),
              "stats": (a, a)}
    return {"tuple of 3 arrays": (a, a, a),
            "dict of 5 arrays": {k: a for k in "abcde"},
            "nested, 20 leaves": nested,
            "namedtuple of 3": P3(a, a, a),
            "dataclass of 3": D3(a, a, a)}


_NS = "batchtensor-bench"


def _register_dataclass() -> None:
    if optree is not None:
        optree.register_pytree_node(D3, lambda d: ((d.x, d.y, d.z), None, ("x", "y", "z")),
                                    lambda _, c: D3(*c), namespace=_NS)


def _ours_round_trip(t):
    leaves, td = pytree.flatten(t)
    return pytree.unflatten(td, leaves)


def _optree_round_trip(t, namespace: str = ""):
    leaves, spec = optree.tree_flatten(t, namespace=namespace)
    return spec.unflatten(leaves)


def pytrees(repeat: int) -> dict:
    rows = {}
    for name, t in _trees().items():
        methods = {"ours flatten": lambda t=t: pytree.flatten(t),
                   "ours round trip": lambda t=t: _ours_round_trip(t)}
        leaves = {"ours": len(pytree.flatten(t)[0])}
        if optree is not None:
            methods["optree flatten"] = lambda t=t: optree.tree_flatten(t)
            methods["optree round trip"] = lambda t=t: _optree_round_trip(t)
            leaves["optree"] = len(optree.tree_flatten(t)[0])
            if type(t) is D3:
                methods["optree registered"] = lambda t=t: _optree_round_trip(t, _NS)
                leaves["optree registered"] = len(optree.tree_flatten(t, namespace=_NS)[0])
            assert type(_optree_round_trip(t)) is type(t)
        assert type(_ours_round_trip(t)) is type(t)
        rows[name] = {"us": compare(methods, repeat, 2000), "leaves": leaves}
    return rows


class _OptreeDef:
    """What batchtensor.api reads of a ``pytree.TreeDef`` (``kind``, ``num_leaves``, ``==``),
    over an optree PyTreeSpec."""

    __slots__ = ("spec", "kind", "num_leaves")

    def __init__(self, spec) -> None:
        self.spec = spec
        self.num_leaves = spec.num_leaves
        self.kind = pytree.LEAF if spec.is_leaf() else pytree.NODE

    def __eq__(self, other) -> bool:
        return type(other) is _OptreeDef and self.spec == other.spec

    __hash__ = None  # type: ignore[assignment]


def _optree_flatten(tree):
    leaves, spec = optree.tree_flatten(tree)
    return leaves, _OptreeDef(spec)


def _optree_unflatten(td, leaves):
    return td.spec.unflatten(leaves)


def _optree_flatten_as(tree, td):
    leaves, spec = optree.tree_flatten(tree)  # (optree sorts a dict's keys: any order fits)
    return leaves if spec == td.spec else None


class _WithOptree:
    """``batchtensor.api`` flattening with optree inside the block (this process only)."""

    def __enter__(self):
        self.saved = api.flatten, api.unflatten, api.flatten_as
        api.flatten, api.unflatten, api.flatten_as = (_optree_flatten, _optree_unflatten,
                                                      _optree_flatten_as)

    def __exit__(self, *exc):
        api.flatten, api.unflatten, api.flatten_as = self.saved


def _in_place(wrapped, fn):
    def run():
        with wrapped:
            return fn()
    return run


def _branchy(x):
    """Two kinds of example (a Python ``if`` on data): vmap runs a group pass for each and
    merges the groups' results, when it can tell their structures are the same."""
    if x.sum() > 0:
        return x * 2.0, x
    return x - 1.0, x


def _branchy_one(x):
    if x.sum() > 0:
        return x * 2.0
    return x - 1.0


def vmap_calls(repeat: int) -> dict:
    x = np.zeros((8, 4))
    t3 = (x, x, x)
    d5 = {k: x for k in "abcde"}
    signs = np.where(np.arange(256) % 2 == 0, 1.0, -1.0)[:, None] * np.ones((256, 4))
    identity = bt.vmap(lambda a: a)
    tree_identity = bt.vmap(lambda t: t)
    branchy = bt.vmap(_branchy, fallback="silent")
    branchy_one = bt.vmap(_branchy_one, fallback="silent")
    want = [np.stack(c) for c in zip(*[_branchy(s) for s in signs])]
    assert all(np.array_equal(w, g) for w, g in zip(want, branchy(signs)))
    cases = {"identity, one [8, 4] array (the common call)": (identity, (x,), 2000),
             "identity, tuple of 3 arrays in and out": (tree_identity, (t3,), 2000),
             "identity, dict of 5 arrays in and out": (tree_identity, (d5,), 2000),
             "branches, batch 256, returns one array": (branchy_one, (signs,), 20),
             "branches, batch 256, returns a tuple of 2": (branchy, (signs,), 20)}
    rows = {}
    for name, (f, args, number) in cases.items():
        methods = {"ours": lambda f=f, args=args: f(*args)}
        if optree is not None:
            methods["optree in api"] = _in_place(_WithOptree(), lambda f=f, args=args: f(*args))
            got = methods["optree in api"]()
            ref = f(*args)
            assert all(np.array_equal(a, b) for a, b in zip(pytree.flatten(got)[0],
                                                            pytree.flatten(ref)[0]))
        rows[name] = compare(methods, repeat, number)
    return rows


# ---- 2. the user's line -------------------------------------------------------------------------
# Frames that batchtensor's diagnostics take for its own: code compiled under a file name in
# the package's folder (no such file exists; only the name is read).
_PKG_FRAMES: dict = {}
exec(compile("def nest(k, fn):\n"
             "    return fn() if k == 0 else nest(k - 1, fn)\n"
             "\n"
             "def boom():\n"
             "    raise ValueError('boom')\n",
             os.path.join(diagnostics._PKG, "_bench_frames.py"), "exec"), _PKG_FRAMES)
_nest, _boom = _PKG_FRAMES["nest"], _PKG_FRAMES["boom"]
DEPTH = 8

_SITES = '''\
import numpy as np


def returns(p):
    return float(p)


def stores(p):
    out = np.zeros(3)
    out[0] = p
'''
_FILLER = '''

def filler_{i}(x, y=None):
    """Filler: a library module's size ({i})."""
    z = x + {i}
    if y is not None:
        z = z * y
    return z
'''


def _site_module(tmp: str):
    src = _SITES + "".join(_FILLER.format(i=i) for i in range(170))
    path = os.path.join(tmp, "bench_user_sites.py")
    Path(path).write_text(src)
    spec = importlib.util.spec_from_file_location("bench_user_sites", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, src.count("\n")


class _Probe:
    """A value whose conversion to float runs ``measure`` on the converting frame (paused at
    the instruction that converts, as BatchedTensor.__float__ finds it)."""

    def __init__(self, measure) -> None:
        self.measure = measure

    def __float__(self) -> float:
        self.measure(sys._getframe(1))
        return 0.0


def _forget_ours() -> None:
    diagnostics._callables.clear()
    diagnostics._after_call.clear()
    diagnostics._store_names.clear()


def _forget_executing() -> None:
    for name in ("__executing_cache", "__source_cache_with_lines"):
        setattr(executing.Source, name, {})
    executing.Source.statements_at_line.cache_clear()
    importlib.import_module("executing.executing").statement_containing_node.cache_clear()
    finder = sys.modules.get("executing._position_node_finder")
    if finder is not None:
        finder.get_instructions.cache_clear()


_OURS: dict = {}  # file name -> whether it is batchtensor's or NumPy's


def _cached_stacklevel() -> int:
    """``user_stacklevel`` with ``_inside``'s answers kept per file name (its time is mostly
    ``os.path.abspath``)."""
    level, f = 1, sys._getframe(1)
    while f.f_back is not None:
        fn = f.f_code.co_filename
        ours = _OURS.get(fn)
        if ours is None:
            ours = _OURS[fn] = (diagnostics._inside(fn, diagnostics._PKG)
                                or diagnostics._inside(fn, diagnostics._NUMPY))
        if not ours:
            break
        f = f.f_back
        level += 1
    return level


def _node(frame):
    return executing.Source.executing(frame).node


def _executing_returns_float(frame) -> bool:
    node = _node(frame)
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "float" and len(node.args) == 1 and not node.keywords
            and isinstance(getattr(node, "parent", None), ast.Return))


def _executing_store_name(frame):
    node = _node(frame)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        return node.value.id
    return None


def _cold(forget, fn):
    def run():
        forget()
        return fn()
    return run


def user_line(repeat: int) -> dict:
    rows: dict = {}
    try:
        _nest(DEPTH, _boom)
    except ValueError as e:
        err = e
    user_frame = err.__traceback__.tb_frame  # (its traceback starts here: the user's frame)
    assert _nest(DEPTH, diagnostics.user_stacklevel) == _nest(DEPTH, _cached_stacklevel)
    assert f"libraries.py:{err.__traceback__.tb_lineno}" in diagnostics.user_line(err)

    methods = {
        f"{DEPTH} package frames, nothing else (floor)": lambda: _nest(DEPTH, int),
        "... + user_stacklevel()": lambda: _nest(DEPTH, diagnostics.user_stacklevel),
        "... + the same walk, one dict look-up per file name": lambda: _nest(DEPTH,
                                                                         _cached_stacklevel),
        "user_line(exception through them)": lambda: diagnostics.user_line(err),
    }
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("default")  # shown once per place: later calls hit the registry
        methods["warnings.warn(..., stacklevel=2), already shown"] = lambda: warnings.warn(
            "a rerun", bt.PerformanceWarning, stacklevel=2)
        if executing is not None:
            methods["executing: the node at the user's frame (warm)"] = lambda: _node(user_frame)
        rows["warning path"] = compare(methods, repeat, 2000)

    with tempfile.TemporaryDirectory() as tmp:
        mod, n_lines = _site_module(tmp)
        rows["site module lines"] = n_lines
        for site, ours, theirs, want in (
                ("return float(x)", lambda f: diagnostics.returned_as_is(f, f.f_back, float),
                 _executing_returns_float, True),
                ("out[0] = x: the name `out`", diagnostics._store_target_name,
                 _executing_store_name, "out")):
            found: dict = {}

            def measure(frame, ours=ours, theirs=theirs, want=want, found=found):
                assert ours(frame) == want
                m = {"ours warm": lambda: ours(frame),
                     "ours cold": _cold(_forget_ours, lambda: ours(frame))}
                if executing is not None:
                    assert theirs(frame) == want
                    m["executing warm"] = lambda: theirs(frame)
                    m["executing cold"] = _cold(_forget_executing, lambda: theirs(frame))
                warm = compare({k: v for k, v in m.items() if "warm" in k}, repeat, 2000)
                cold = compare({k: v for k, v in m.items() if "cold" in k}, repeat, 5)
                found.update(warm, **cold)

            probe = _Probe(measure)
            if site.startswith("return"):
                mod.returns(probe)
            else:
                mod.stores(probe)
            rows[site] = found
    return rows


# ---- 3. the backend -----------------------------------------------------------------------------
def backend(repeat: int) -> dict:
    x = np.zeros((8, 4))
    rec = TArray(np.zeros(3), np.zeros(2), None)
    methods = {
        "ours: is_physical_type(type(x)), ndarray": lambda: is_physical_type(type(x)),
        "ours: is_physical_type(type(x)), ONNX recorder": lambda: is_physical_type(type(rec)),
        "ours: type(x) is np.ndarray (the fast paths)": lambda: type(x) is np.ndarray,
        "ours: np.zeros(3, like=x)": lambda: np.zeros(3, like=x),
        "numpy: np.zeros(3)": lambda: np.zeros(3),
    }
    if xpc is not None:
        methods.update({
            "array_api_compat: is_numpy_array(x)": lambda: xpc.is_numpy_array(x),
            "array_api_compat: is_cupy_array(x)": lambda: xpc.is_cupy_array(x),
            "array_api_compat: array_namespace(x)": lambda: xpc.array_namespace(x),
            "array_api_compat: array_namespace(x).zeros(3)":
                lambda: xpc.array_namespace(x).zeros(3),
        })
    return compare(methods, repeat, 5000)


def import_cost(repeat: int) -> dict:
    """Seconds to import each module in a fresh interpreter (interleaved, medians)."""
    names = ["numpy", "batchtensor"] + [m.__name__ for m in (optree, executing, xpc)
                                        if m is not None]
    code = ("import sys, time; sys.path.insert(0, {root!r}); t = time.perf_counter(); "
            "import {name}; print(time.perf_counter() - t)")
    root = str(Path(__file__).resolve().parents[1])
    samples: dict = {n: [] for n in names}
    for _ in range(repeat):
        for n in names:
            out = subprocess.run([sys.executable, "-c", code.format(root=root, name=n)],
                                 capture_output=True, text=True, check=True).stdout
            samples[n].append(float(out))
    return {n: statistics.median(v) * 1e3 for n, v in samples.items()}


# ---- 4. semantics -------------------------------------------------------------------------------
def _try(fn) -> str:
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 -- the failure is the answer
        return f"raises {type(e).__name__}: {str(e)[:90]}"


def semantics() -> list:
    rows = []
    a = np.zeros(2)

    def leaves(t, lib):
        if lib == "ours":
            return len(pytree.flatten(t)[0])
        return len(optree.tree_flatten(t)[0])

    def order_back(t, lib):
        back = _ours_round_trip(t) if lib == "ours" else _optree_round_trip(t)
        return f"{type(back).__name__} {list(back)}"

    def leaf_order(t, lib):
        ls = pytree.flatten(t)[0] if lib == "ours" else optree.tree_flatten(t)[0]
        return str(ls)

    dd = collections.defaultdict(list, {"b": 1, "a": 2})
    libs = ["ours"] + (["optree"] if optree is not None else [])
    for what, fn in (
            ("leaves of (x, None)", lambda lib: str(leaves((a, None), lib))),
            ("leaves of {'b': 1, 'a': 2} in order", lambda lib: leaf_order({"b": 1, "a": 2}, lib)),
            ("{'b': 1, 'a': 2} round trip", lambda lib: order_back({"b": 1, "a": 2}, lib)),
            ("defaultdict round trip", lambda lib: _try(lambda: order_back(dd, lib))),
            ("leaves of a dataclass of 3 arrays", lambda lib: str(leaves(D3(a, a, a), lib))),
            ("leaves of a NumPy scalar / masked array / 0-d array",
             lambda lib: str([leaves(v, lib) for v in
                              (np.float64(1), np.ma.masked_array([1.0]), np.array(1.0))])),
            ("flatten(x) == flatten(x) (structure)",
             lambda lib: str(pytree.flatten((a, a))[1] == pytree.flatten((a, a))[1]
                             if lib == "ours" else
                             optree.tree_structure((a, a)) == optree.tree_structure((a, a))))):
        rows.append((what, {lib: fn(lib) for lib in libs}))
    stats = _optional("scipy.stats")
    if stats is not None:  # a tuple subclass with more fields as attributes
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = stats.ttest_ind(np.arange(5.0), np.arange(5.0) ** 2)
        rows.append(("leaves of scipy.stats.ttest_ind's TtestResult",
                     {lib: str(leaves(res, lib)) for lib in libs}))

    def keys_per_branch(x):
        if x.sum() > 0:
            return {"a": x, "b": x * 10}
        return {"b": x * 10, "a": x}

    xs = np.array([[1.0], [-1.0]])
    want = np.stack([keys_per_branch(v)["a"] for v in xs]).ravel().tolist()
    f = bt.vmap(keys_per_branch, fallback="silent")
    got = {"ours": str(f(xs)["a"].ravel().tolist())}
    if optree is not None:
        with _WithOptree():
            got["optree"] = str(f(xs)["a"].ravel().tolist())
    rows.append((f"vmap: examples return dicts with keys in other orders; ['a'] "
                 f"(the loop: {want})", got))
    if xpc is not None:
        rec = TArray(np.zeros(3), np.zeros(2), None)
        rows.append(("array_namespace(ONNX recorder array)",
                     {"array_api_compat": _try(lambda: str(xpc.array_namespace(rec)))}))
        rows.append(("array_namespace(ndarray)",
                     {"array_api_compat": xpc.array_namespace(a).__name__}))
    return rows


# ---- output -------------------------------------------------------------------------------------
def _table(header: list, rows: list) -> None:
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=21)
    p.add_argument("--json", metavar="FILE")
    a = p.parse_args(argv)
    missing = [n for n, m in (("optree", optree), ("executing", executing),
                              ("array-api-compat", xpc)) if m is None]
    versions = [f"{m.__name__} {getattr(m, '__version__', '?')}"
                for m in (np, optree, executing, xpc) if m is not None]
    print(f"Python {sys.version.split()[0]}; {', '.join(versions)}; medians of {a.repeat} "
          f"interleaved repeats, µs per call")
    if missing:
        print(f"not installed (their columns are left out): {', '.join(missing)}")
    print()
    _register_dataclass()
    result: dict = {"repeat": a.repeat, "missing": missing}

    result["pytrees"] = r = pytrees(a.repeat)
    cols = ["ours flatten", "ours round trip", "optree flatten", "optree round trip",
            "optree registered"]
    cols = [c for c in cols if any(c in row["us"] for row in r.values())]
    print("### 1. Pytrees: flatten, and flatten + unflatten (µs)\n")
    _table(["tree", "leaves"] + cols,
           [[name, " / ".join(f"{k} {v}" for k, v in row["leaves"].items())]
            + [f"{row['us'][c]:.2f}" if c in row["us"] else "-" for c in cols]
            for name, row in r.items()])

    result["vmap"] = r = vmap_calls(a.repeat)
    cols = ["ours"] + (["optree in api"] if optree is not None else [])
    print("### 1b. Whole bt.vmap calls (µs per call)\n")
    _table(["call"] + cols + (["optree / ours"] if optree is not None else []),
           [[name] + [f"{row[c]:.1f}" for c in cols]
            + ([f"{row['optree in api'] / row['ours']:.2f}"] if optree is not None else [])
            for name, row in r.items()])

    result["user_line"] = r = user_line(a.repeat)
    print("### 2. The user's line (µs per call)\n")
    floor = r["warning path"][f"{DEPTH} package frames, nothing else (floor)"]
    _table(["warning path", "µs", "less the floor"],
           [[k, f"{v:.2f}", "" if "floor" in k or "executing" in k or "warn(" in k
             else f"{v - floor:.2f}"] for k, v in r["warning path"].items()])
    sites = [k for k in r if k not in ("warning path", "site module lines")]
    cols = ["ours warm", "ours cold", "executing warm", "executing cold"]
    cols = [c for c in cols if c in r[sites[0]]]
    print(f"(cold: first sight of the site; the module holding it has "
          f"{r['site module lines']} lines)\n")
    _table(["bytecode question"] + cols, [[s] + [f"{r[s][c]:.2f}" for c in cols]
                                          for s in sites])

    result["backend"] = r = backend(a.repeat)
    print("### 3. Backend detection (µs per call, an ndarray [8, 4] unless said)\n")
    _table(["check", "µs"], [[k, f"{v:.3f}"] for k, v in r.items()])

    n = min(a.repeat, 7)
    result["imports"] = r = import_cost(n)
    print(f"### Import time in a fresh interpreter (ms, medians of {n})\n")
    _table(["module", "ms"], [[k, f"{v:.1f}"] for k, v in r.items()])

    result["semantics"] = r = semantics()
    print("### 4. Semantics\n")
    libs = sorted({lib for _, row in r for lib in row}, key=["ours", "optree",
                                                             "array_api_compat"].index)
    _table(["case"] + libs, [[what] + [row.get(lib, "") for lib in libs] for what, row in r])
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
