"""Programs the adversarial generator found failing, not fixed yet: each is a strict xfail, so
a fix that makes one pass fails here until it moves to tests/test_adversarial_found.py.

They surfaced when more OpInfo entries (``scipy.linalg.norm``; ``numpy.ma``'s) shifted the derandomised
sequence of ``tests/test_adversarial.py``; each fails the same way at 9e330ea, before that
entry, so they are older gaps, not regressions (the generator skips that entry until they are
fixed, ``_EXCLUDED_OPS``, so that CI's sequence stays the one that passes). Each case is the generator's
own ``Case``, judged by its own oracle (``opinfo.adversarial.check``)."""

from __future__ import annotations

import numpy as np
import pytest

from opinfo import adversarial
from opinfo.adversarial import Case, Input, Step

pytest.importorskip("scipy.signal", reason="some programs call SciPy's rules (a test extra)")

#: (what fails, the case's repr)
BACKLOG = [
    # found when the numpy.ma entries shifted the sequence (they are skipped too, until this
    # is fixed): NumPy converts an object to a datetime without asking it, so a batched
    # datetime written into a plain array raises NumPy's ValueError, where other dtypes raise
    # the conversion error that reruns per example
    ('vmap raised ValueError: Could not convert object to NumPy datetime (at step 1); the loop '
     'returns a result',
     "Case(inputs=[Input(name='a0', shape=(), dtype='datetime64[s]', axes=[0], source=('fresh', 1415576769, ('any',)), layout=('neg', (0,)), readonly=False)], steps=[Step(kind='create', code=\"c1 = np.zeros((), dtype=np.dtype('datetime64[s]'))\", defines=('c1',), target=None, values='None', reads=('a0',), op=None, operand=None, arrays='()', tags=(), target_pos=None), Step(kind='write', code='c1[()] = a0', defines=(), target='c1', values='(a0,)', reads=('c1', 'a0'), op=None, operand=None, arrays='()', tags=('setitem', 'basic'), target_pos=None), Step(kind='op', code='v2 = np.isnat(a0)', defines=('v2',), target=None, values='None', reads=('a0',), op='ufunc.isnat', operand='a0', arrays='()', tags=(), target_pos=None)], outputs=['v2', 'a0'], out_form='tuple', sizes=[0], chunks=[2], out_axes=[-1], int_in_axes=[True], tol=0.0)"),
]


@pytest.mark.parametrize("message, text", BACKLOG, ids=[f"case{k}" for k in range(len(BACKLOG))])
@pytest.mark.xfail(strict=True, reason="an open finding of the adversarial generator (module doc)")
def test_backlog_case_matches_the_loop(message, text):
    case = eval(text, {"Case": Case, "Input": Input, "Step": Step,  # noqa: S307 (our own repr)
                       "dtype": np.dtype})
    outcome = adversarial.check(case)
    assert outcome.ok, outcome.message
