"""The benchmark's methods compute what the per-example loop computes.

Nothing here is timed: this keeps ``bench/`` honest as the library changes (a workload whose
``bt.vmap`` result drifted from the loop would otherwise be noticed only by whoever next runs
the benchmark). torch and jax are not loaded here; ``bench/run.py`` checks them before timing.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import batchtensor as bt

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import floor  # noqa: E402
import run  # noqa: E402
from workloads import WORKLOADS, make_rk4  # noqa: E402


@pytest.mark.parametrize("regime", ["dispatch", "compute"])
@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.name)
def test_every_method_matches_the_loop(w, regime):
    methods, want = run.methods_for(w, regime, np.random.default_rng(0))
    assert {"loop", "vectorised", "bt.vmap", "bt.vmap (chunk_size=None)"} <= set(methods)
    assert "torch.func.vmap" not in methods  # the peers stay unloaded in tests
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)  # as bench/run.py: no loop fallback
        run.check(w, regime, methods, want)


def test_check_catches_a_wrong_method():
    w = WORKLOADS[0]
    methods, want = run.methods_for(w, "dispatch", np.random.default_rng(0))
    methods["bt.vmap"] = lambda: want[::-1]  # other examples' values, right shape and dtype
    with pytest.raises(AssertionError, match="bt.vmap disagrees"):
        run.check(w, "dispatch", methods, want)


def test_floor_wrappers_match_the_loop():
    (s, p), _ = make_rk4(np.random.default_rng(1), "dispatch")
    floor.check(s, p)
    # the view wrapper is a floor only: a write into the state shows through its x[i]
    view = floor.OperatorsWithViews(s.copy())
    x = view[0]
    view.value[:, 0] = 0.0
    assert not x.value.any()
    copied = floor.Operators(s.copy())
    x = copied[0]
    copied.value[:, 0] = 0.0
    assert np.array_equal(x.value, s[:, 0])


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.name)
def test_scaling_cuts_every_workload_to_each_batch_size(w):
    """bench/scaling.py times each workload at several batch sizes: its inputs cut (or repeated)
    to that size, on which every method still computes the loop's result."""
    import scaling

    for size in (1, 5):
        cut, n = scaling.at_batch(w, "dispatch", size, np.random.default_rng(0))
        assert n == (size if w.make(np.random.default_rng(0), "dispatch")[1] != "nested"
                     else max(1, round(size ** 0.5)) ** 2)
        methods, want = run.methods_for(cut, "dispatch", np.random.default_rng(0))
        with warnings.catch_warnings():
            warnings.simplefilter("error", bt.PerformanceWarning)
            run.check(cut, "dispatch", methods, want)
