"""The coverage universe (opinfo/universe.py) and the ``python -m opinfo`` table."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from numpy._core.overrides import ARRAY_FUNCTIONS

from opinfo import DATABASE
from opinfo.__main__ import main
from opinfo.universe import EXCLUDED, NOT_DISPATCHED, claims, is_known_extra, universe

UNIVERSE = universe()
BY_NAME = {e.name: e for e in UNIVERSE}


def test_every_ufunc_once():
    ufuncs = {id(getattr(np, n)) for n in dir(np) if isinstance(getattr(np, n), np.ufunc)}
    got = [e for e in UNIVERSE if e.kind == "ufunc"]
    assert {id(e.obj) for e in got} == ufuncs
    assert len(got) == len(ufuncs)
    assert "abs" in BY_NAME["absolute"].aliases


def test_functions_are_the_dispatched_public_callables():
    af = {id(f) for f in ARRAY_FUNCTIONS}
    expected = set()
    for mod in (np, np.linalg, np.fft):
        for n in dir(mod):
            o = getattr(mod, n)
            if not n.startswith("_") and id(o) in af and not isinstance(o, np.ufunc):
                expected.add(id(o))
    got = [e for e in UNIVERSE if e.kind == "function"]
    assert {id(e.obj) for e in got} == expected
    assert len(got) == len(expected), "an alias was counted twice"
    for name in ("sum", "linalg.solve", "fft.fft", "fft.fftshift", "unique", "result_type",
                 "shares_memory", "polyfit"):
        assert name in BY_NAME, name
    assert BY_NAME["concatenate"].aliases == ("concat",)
    # not dispatched by NumPy: not in the universe, but listed as such
    assert "fft.fftfreq" not in BY_NAME and "fft.fftfreq" in NOT_DISPATCHED


def test_methods_and_operators_come_from_batchedtensor():
    from batchtensor.tensor import BatchedTensor

    methods = {e.name for e in UNIVERSE if e.kind == "method"}
    assert "ndarray.sum" in methods and "ndarray.astype" in methods
    assert all(hasattr(BatchedTensor, m.split(".", 1)[1]) for m in methods)
    assert "ndarray.shape" not in methods  # a property, not a callable
    add = BY_NAME["operator.add"]
    assert {"__add__", "__radd__", "__iadd__"} <= set(add.dunders)
    assert operator.getitem in BY_NAME["operator.getitem"].keys
    assert {e.name for e in UNIVERSE if e.kind == "ufunc_method"} == {
        "ufunc.reduce", "ufunc.accumulate", "ufunc.reduceat", "ufunc.outer", "ufunc.at"}


def test_exclusions_are_in_the_universe_and_few():
    names = {e.name for e in UNIVERSE}
    assert set(EXCLUDED) <= names, sorted(set(EXCLUDED) - names)
    assert all(reason for reason in EXCLUDED.values())
    for query in ("result_type", "can_cast", "min_scalar_type", "common_type", "shares_memory",
                  "may_share_memory"):
        assert query not in EXCLUDED  # type queries must work, they are not excluded
    assert len(EXCLUDED) < 0.1 * len(UNIVERSE)


@pytest.mark.parametrize("info", DATABASE, ids=lambda i: i.name)
def test_every_opinfo_is_in_the_universe_or_an_explicit_extra(info):
    claimed = [e.name for e in UNIVERSE if claims(e, info)]
    assert claimed or is_known_extra(info.covers), (
        f"OpInfo {info.name} covers {info.covers!r}, which is neither a universe callable nor "
        f"an explicit extra (see opinfo/universe.py)")
    assert len(claimed) <= 1, f"OpInfo {info.name} is claimed by several entries: {claimed}"


def test_method_opinfos_are_claimed_by_the_method():
    entry = BY_NAME["ndarray.sum"]
    infos = [i for i in DATABASE if claims(entry, i)]
    assert [i.name for i in infos] == ["ndarray.sum"]
    assert not any(i.name == "ndarray.sum" for i in DATABASE if claims(BY_NAME["sum"], i))


def test_table_without_sweep(tmp_path, capsys):
    out = tmp_path / "coverage.md"
    assert main(["--no-sweep", "--markdown", str(out)]) == 0
    text = out.read_text()
    assert "% of non-excluded callables on a vectorised path" in text
    assert "| `fft.fft` |" in text and "| `add` |" in text and "## Loop fallback" in text
    assert "| `save` | file I/O" in text
    assert "non-excluded vectorised" in capsys.readouterr().out


def test_named_table_still_works(capsys):
    name = DATABASE[0].name
    assert main([name, "-j", "1"]) == 0
    text = capsys.readouterr().out
    assert f"| `{name}` |" in text and "failing" in text


def test_every_registered_op_has_an_opinfo():
    """A rule, boxed registration or decomposition without an OpInfo entry is untested."""
    from batchtensor.registry import REGISTRY, op_name

    from opinfo import DATABASE

    covered = set()
    for info in DATABASE:
        for key in (info.covers, info.op):
            try:
                covered.add(key)
            except TypeError:  # an unhashable op: nothing registered under it anyway
                pass
    missing = sorted(op_name(k) for k in REGISTRY if k not in covered)
    assert not missing, f"registered without an OpInfo entry: {missing}"
