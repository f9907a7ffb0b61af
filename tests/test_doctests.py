"""Every example in batchtensor's docstrings runs, and shows what it says it shows.

The docstrings a module copies from NumPy with the functions it wraps (``functools.wraps``:
the object's ``__wrapped__`` is NumPy's) are NumPy's, with NumPy's own print formats: not ours to run.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil
import re
import warnings

import pytest

import batchtensor


def _ours(module, name: str) -> bool:
    obj = module
    for part in name.split(".")[len(module.__name__.split(".")):]:
        obj = getattr(obj, part, None)
    wrapped = getattr(obj, "__wrapped__", None)
    return wrapped is None or not (getattr(wrapped, "__module__", None) or "").startswith("numpy")


def _docstring_examples() -> list:
    found = []
    finder = doctest.DocTestFinder()
    skipped = []
    found += [t for t in finder.find(batchtensor) if t.examples and t.name == "batchtensor"]
    for info in pkgutil.walk_packages(batchtensor.__path__, "batchtensor.",
                                      onerror=lambda name: None):
        try:
            module = importlib.import_module(info.name)
        except ImportError as e:  # bt.onnx without the onnx extra
            skipped.append(pytest.param(None, id=info.name, marks=pytest.mark.skip(
                reason=f"{info.name} needs an extra that is not installed: {e}")))
            continue
        found += [t for t in finder.find(module) if t.examples and _ours(module, t.name)]
    return [pytest.param(t, id=t.name) for t in sorted(found, key=lambda t: t.name)] + skipped


#: optional extras an example may import (it is skipped where one is not installed)
_EXTRAS = ("dask", "distributed")


def _missing_extra(test) -> str | None:
    for example in test.examples:
        for name in re.findall(r"^\s*(?:import|from)\s+(\w+)", example.source, re.M):
            if name in _EXTRAS and importlib.util.find_spec(name) is None:
                return name
    return None


@pytest.mark.parametrize("test", _docstring_examples())
def test_docstring_example(test):
    from batchtensor.foreign import forget
    from batchtensor.registry import REGISTRY

    missing = _missing_extra(test)
    if missing:
        pytest.skip(f"{test.name} needs {missing}, an optional extra that is not installed")

    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    before = set(REGISTRY)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # an example that warns says less than it shows
            result = runner.run(test, out=lambda s: pytest.fail(s, pytrace=False))
    finally:  # a rule an example registers (bt.batch_rule(scipy.signal.medfilt)) goes again
        for op in set(REGISTRY) - before:
            forget(op)
    assert result.failed == 0
