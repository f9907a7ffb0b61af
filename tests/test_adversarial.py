"""The adversarial generator (opinfo/adversarial.py) in CI: random programs of OpInfo calls,
index expressions and in-place writes, under random vmap variants, against the per-example
loop. Derandomised (the same cases on every run), no example database, no deadline.

A failure prints the program as a Python reproducer (hypothesis shrinks it first). Every
failure the generator has found is also a plain regression test in
tests/test_adversarial_found.py.
"""

from __future__ import annotations

import warnings

from hypothesis import HealthCheck, given, settings

from opinfo import adversarial
from opinfo.__main__ import main

N_CASES = 10_000


def test_adversarial_programs_match_the_loop():
    report = adversarial.run_hypothesis(N_CASES, derandomize=True, raise_on_failure=True)
    assert report.cases >= N_CASES, report.cases
    assert not report.failures


@settings(max_examples=60, derandomize=True, database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(adversarial.cases())
def test_reproducers_are_runnable_python(case):
    """What ``render`` prints is the program that was checked: for a case that ran cleanly in
    both (no exception, same results), the reproducer runs and its assert_same passes."""
    outcome = adversarial.check(case)
    assert outcome.ok, outcome.message
    if not outcome.clean:
        return
    code = adversarial.render(case, "a comment on top")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(code, "<reproducer>", "exec"), {})  # noqa: S102


def test_cli_runs_and_reports(capsys):
    assert main(["--adversarial", "25", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("adversarial: 25 cases in ") and ", 0 failing" in out
