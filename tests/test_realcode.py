"""The real-code corpus (``realcode/``): every library function, mapped every way, gives the
per-example loop's result through ``bt.vmap`` with the default fallback (the per-op loop and
the whole-function rerun allowed). A wrong result or an error fails; the (entry, variant)
pairs that raise today are strict expected failures with their cause
(``realcode/known_errors.py``), so that a fix flips them. Entries of a library that is not
installed skip with the reason. ``docs/realcode.md`` reports the same runs, with which path
served each."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from realcode import BY_NAME, ENTRIES, Entry, Status, cases, run_case, run_entry
from realcode.causes import BY_KEY, CAUSES, cause_of
from realcode.known_errors import KNOWN_ERRORS

PASSING = (Status.VECTORISED, Status.PER_OP_LOOP, Status.GROUPS, Status.RERUN)


def _known(name: str, variant: str) -> str | None:
    known = KNOWN_ERRORS.get(name)
    return known if isinstance(known, str) or known is None else known.get(variant)


def _params():
    out = []
    for e in ENTRIES:
        for v in e.variants():
            key = _known(e.name, v)
            marks = []
            if key is not None:
                cause = BY_KEY.get(key)
                reason = f"{cause.title} (realcode/causes.py: {key})" if cause else key
                marks.append(pytest.mark.xfail(strict=True, reason=reason))
            out.append(pytest.param(e.name, v, id=f"{e.name}-{v}", marks=marks))
    return out


@pytest.mark.parametrize("name,variant", _params())
def test_corpus_entry_gives_the_loops_result(name, variant):
    entry = BY_NAME[name]
    if variant in entry.not_applicable:
        pytest.skip(entry.not_applicable[variant])
    for case in cases(entry):
        o = run_case(entry, variant, case, strict=False)
        if o.status is Status.SKIPPED:
            pytest.skip(o.detail)
        assert o.status in PASSING, f"[{o.case}] {o.status.value}: {o.detail} ({o.where})"


def test_known_errors_name_entries_variants_and_causes_that_exist():
    for name, known in KNOWN_ERRORS.items():
        assert name in BY_NAME, name
        table = {v: known for v in BY_NAME[name].variants()} if isinstance(known, str) \
            else known
        for variant, key in table.items():
            assert variant in BY_NAME[name].variants(), (name, variant)
            assert key in BY_KEY, (name, key)


def test_corpus_size_and_sources():
    """At least 150 distinct functions, each imported from its library (never re-typed)."""
    functions = {e.function_name for e in ENTRIES}
    assert len(functions) >= 150
    assert {e.library for e in ENTRIES} == {"sklearn", "scipy", "astropy", "skimage"}
    for e in ENTRIES:
        assert not e.module.startswith(("realcode", "tests")), e.name


# ---- the harness itself: it must see every kind of difference from the loop ---------------------
@pytest.fixture
def fake_library():
    """A module of functions that misbehave under vmap in known ways."""
    mod = types.ModuleType("fake_library")

    def batched(x):
        return type(x).__name__ == "BatchedTensor"

    mod.scaled = lambda x: x * (2.0 if batched(x) else 1.0)  # other values
    mod.cast = lambda x: x.astype(np.float32 if batched(x) else np.float64)  # other dtype
    mod.shaped = lambda x: x[:-1] if batched(x) else x[1:]  # same shape, other values
    mod.nan = lambda x: np.where(x > 0, np.nan, x) if batched(x) else x  # NaN where none
    mod.writes = lambda x: (x.__setitem__(0, 1.0) if batched(x) else None) or x.sum()
    mod.good = lambda x: np.cumsum(x) - x.mean()  # vectorised and right
    mod.converts = lambda x: x * round(float(np.sum(x)), 6)  # right through the rerun
    # an error: an exact type check, which a batched value does not pass (docs/semantics.md)
    mod.breaks = lambda x: x.sum() if type(x) is np.ndarray else _refuse(type(x))
    sys.modules["fake_library"] = mod
    yield mod
    del sys.modules["fake_library"]


def _refuse(t: type):
    raise ValueError(f"expected exactly a numpy.ndarray, got {t.__name__}")


def _fake(attr: str) -> Entry:
    return Entry("fake_library", attr, lambda rng, dt, n: (rng.standard_normal(n).astype(dt),),
                 sizes=(5,))


@pytest.mark.parametrize("attr", ["scaled", "cast", "shaped", "nan", "writes"])
def test_harness_reports_a_wrong_result(fake_library, attr):
    outcomes = run_entry(_fake(attr))
    assert outcomes and all(o.status is Status.WRONG for o in outcomes), outcomes
    assert cause_of(outcomes[0])[0] == "wrong"


def test_harness_tells_vectorised_rerun_and_error_apart(fake_library):
    assert {o.status for o in run_entry(_fake("good"))} == {Status.VECTORISED}
    rerun = run_entry(_fake("converts"))
    assert {o.status for o in rerun} == {Status.RERUN}
    assert cause_of(rerun[0])[0] == "float"
    broken = run_entry(_fake("breaks"))
    assert {o.status for o in broken} == {Status.ERROR}
    assert cause_of(broken[0])[0].startswith("other:ValueError: expected exactly")


def test_harness_reports_a_per_op_loop(fake_library):
    # np.vectorize without otypes has no batch rule: the per-op loop serves it (every
    # example's first element gives a float)
    doubled = np.vectorize(lambda a: 2.0 * a)
    fake_library.looped = lambda x: x + doubled(x)
    outcomes = run_entry(_fake("looped"))
    assert {o.status for o in outcomes} == {Status.PER_OP_LOOP}, outcomes
    assert outcomes[0].loop_ops == ("np.lib._function_base_impl.__call__",)  # (its module)


def test_a_missing_library_skips_with_the_reason():
    entry = Entry("no_such_library.sub", "f", lambda rng, dt, n: (np.zeros(n),))
    (o,) = run_entry(entry)
    assert o.status is Status.SKIPPED and "not installed" in o.detail


def test_every_cause_has_a_pattern_and_a_reason():
    assert len({c.key for c in CAUSES}) == len(CAUSES)
    for c in CAUSES:
        assert c.pattern and c.why and c.title
