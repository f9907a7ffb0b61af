"""The package's imports run one way through its layers (docs/architecture.md).

The imports are read with ``ast`` from the source, so that a lazy import inside a function
counts as much as one at the top of a module. The layer list below is the reference: a module
may import modules of its own layer or of a layer listed before it, never after, and the
import graph has no cycle at all (within a layer included).
"""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "batchtensor"

#: bottom to top; patterns are module names relative to the package ("" is its __init__)
LAYERS = [
    ("base", ["errors", "config", "pytree", "registry", "diagnostics", "chunking"]),
    ("levels", ["levels"]),
    ("tensor", ["tensor"]),
    ("plumbing", ["plumbing", "rules", "rules._helpers"]),  # the rules package imports nothing
    ("scalars", ["scalars"]),
    ("dispatch", ["dispatch", "operators"]),
    ("boxed", ["boxed", "boxed.*"]),
    ("rules", ["rules.*", "decompositions"]),
    ("api", ["conversions", "pyfloat", "buffers", "undispatched", "numpy_streams", "numpy_random",
             "foreign", "masked", "dask_arrays", "api", "random", "explain"]),
    ("onnx", ["onnx", "onnx.*"]),
    ("package", ["", "__main__"]),
]

#: imports inside functions that are not about cycles, with the reason
LAZY_ALLOWED = {
    ("", "onnx"): "bt.onnx is imported on first use: it is the only part that needs the "
                  "optional onnx extra",
}


def scan(package: Path) -> tuple[dict[str, Path], list[tuple]]:
    """The package's modules (name -> file) and its imports of itself: ``(module, target,
    names taken, line, inside a function)``."""
    modules = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    imports = []
    for module, path in sorted(modules.items()):
        tree = ast.parse(path.read_text(), str(path))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            inside, up = False, parents.get(node)
            while up is not None:
                inside = inside or isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef))
                up = parents.get(up)
            for target, names in _resolve(modules, module, node):
                imports.append((module, target, names, node.lineno, inside))
    return modules, imports


def _resolve(modules: dict, module: str, node) -> list[tuple[str, list[str]]]:
    """``[(imported module, names taken from it)]`` for the package's own modules."""
    if isinstance(node, ast.Import):
        return [(a.name.removeprefix("batchtensor").lstrip("."), []) for a in node.names
                if a.name == "batchtensor" or a.name.startswith("batchtensor.")]
    if node.level:
        package = module if modules[module].name == "__init__.py" else module.rpartition(".")[0]
        base = package.split(".") if package else []
        base = base[:len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    elif node.module and (node.module == "batchtensor" or node.module.startswith("batchtensor.")):
        target = node.module.removeprefix("batchtensor").lstrip(".")
    else:
        return []
    out, names = [], []
    for alias in node.names:
        sub = f"{target}.{alias.name}" if target else alias.name
        if sub in modules:
            out.append((sub, []))  # from . import dispatch: the submodule itself
        else:
            names.append(alias.name)
    if names:
        out.append((target, names))
    return out


def _layer(module: str) -> int:
    for i, (_, patterns) in enumerate(LAYERS):
        if any(module == p or fnmatch.fnmatchcase(module, p) for p in patterns):
            return i
    raise AssertionError(f"batchtensor.{module} is in no layer of tests/test_architecture.py")


def _with_parents(target: str, importer: str) -> list[str]:
    """Importing ``a.b.c`` also runs the packages ``a`` and ``a.b``, unless the importer is
    inside them (then they are already running). The top package, always loaded first, is not
    an import of anything."""
    parts = target.split(".") if target else []
    parents = [".".join(parts[:i]) for i in range(1, len(parts))]
    inside = importer.split(".")
    return [p for p in parents if p.split(".") != inside[:p.count(".") + 1]] + [target]


def upward_imports(modules: dict, imports: list) -> list[str]:
    found = []
    for module, target, _, line, _ in imports:
        for t in _with_parents(target, module):
            if t in modules and _layer(t) > _layer(module):
                found.append(f"batchtensor.{module} (line {line}, layer "
                             f"{LAYERS[_layer(module)][0]}) imports batchtensor.{t} (layer "
                             f"{LAYERS[_layer(t)][0]})")
    return found


def import_cycles(modules: dict, imports: list) -> list[str]:
    graph: dict[str, set] = {m: set() for m in modules}
    for module, target, _, _, _ in imports:
        graph[module].update(t for t in _with_parents(target, module)
                             if t in modules and t != module)
    state: dict[str, int] = {}
    path: list[str] = []
    cycles: list[str] = []

    def visit(m):
        state[m] = 1
        path.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycles.append(" -> ".join(f"batchtensor.{c}" for c in path[path.index(t):] + [t]))
            elif t not in state:
                visit(t)
        path.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return cycles


def lazy_imports(modules: dict, imports: list) -> list[str]:
    """A function-level import of the package's own modules is how a cycle hides."""
    return [f"batchtensor.{m} line {line} imports batchtensor.{t} inside a function"
            for m, t, _, line, inside in imports if inside and (m, t) not in LAZY_ALLOWED]


def private_imports(modules: dict, imports: list) -> list[str]:
    return [f"batchtensor.{m} line {line} imports {n} from batchtensor.{t}"
            for m, t, names, line, _ in imports for n in names
            if n.startswith("_") and not n.startswith("__") and t != m]


MODULES, IMPORTS = scan(PACKAGE)


def test_every_module_has_a_layer():
    for module in MODULES:
        _layer(module)


@pytest.mark.parametrize("check", [upward_imports, import_cycles, lazy_imports, private_imports])
def test_imports(check):
    problems = check(MODULES, IMPORTS)
    assert not problems, "\n".join(problems)


def test_the_checks_find_what_they_look_for(tmp_path):
    """A small fake package with one of each problem."""
    fake = tmp_path / "batchtensor"
    (fake / "boxed").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "levels.py").write_text("def f():\n    from .api import vmap\n")
    (fake / "api.py").write_text("from .levels import f\n")
    (fake / "errors.py").write_text("")
    (fake / "boxed" / "__init__.py").write_text("from ..errors import _hidden\n")
    modules, imports = scan(fake)
    assert upward_imports(modules, imports) == [
        "batchtensor.levels (line 2, layer levels) imports batchtensor.api (layer api)"]
    assert import_cycles(modules, imports) == [
        "batchtensor.api -> batchtensor.levels -> batchtensor.api"]
    assert lazy_imports(modules, imports) == [
        "batchtensor.levels line 2 imports batchtensor.api inside a function"]
    assert private_imports(modules, imports) == [
        "batchtensor.boxed line 1 imports _hidden from batchtensor.errors"]


def test_opinfo_mirrors_the_rule_families():
    """Every family in rules/ (a module that registers rules; ``ragged`` is a value type the
    indexing rules make) has its OpInfo entries in opinfo/ops_<family>.py."""
    opinfo = PACKAGE.parent / "opinfo"
    families = [m.split(".", 1)[1] for m in MODULES
                if m.startswith("rules.") and not m.startswith("rules._")
                and re.search(r"batch_rule|register", (PACKAGE / "rules" /
                                                        f"{m.split('.')[1]}.py").read_text())]
    assert "ragged" not in families and "indexing" in families
    missing = [f for f in families if not (opinfo / f"ops_{f}.py").exists()]
    assert families and not missing, f"no opinfo/ops_<family>.py for {missing}"
