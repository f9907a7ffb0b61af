"""bt.random: reproducible per-example streams under vmap(randomness=...)."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import batchtensor as bt
from batchtensor.boxed.loop import reset_warnings
from batchtensor.random import philox4x64

# method name -> a call on a bt.random Generator (one example's draw)
DRAWS = {
    "random": lambda g: g.random(size=(2, 3)),
    "random_f32": lambda g: g.random(size=4, dtype=np.float32),
    "standard_normal": lambda g: g.standard_normal(size=5),
    "normal": lambda g: g.normal(1.0, 2.0, size=(3,)),
    "uniform": lambda g: g.uniform(-1.0, 3.0, size=4),
    "integers": lambda g: g.integers(-5, 7, size=6),
    "integers_endpoint": lambda g: g.integers(0, 3, size=6, dtype=np.uint8, endpoint=True),
    "choice": lambda g: g.choice(10, size=4),
    "choice_p": lambda g: g.choice(4, size=5, p=[0.1, 0.0, 0.6, 0.3]),
    "choice_noreplace": lambda g: g.choice(8, size=3, replace=False),
    "choice_array": lambda g: g.choice(np.arange(10.0).reshape(5, 2), size=2, axis=0),
    "permutation": lambda g: g.permutation(6),
    "permutation_array": lambda g: g.permutation(np.arange(12).reshape(3, 4), axis=1),
    "binomial": lambda g: g.binomial(40, 0.3, size=5),
    "scalar": lambda g: g.normal(),
    "standard_exponential": lambda g: g.standard_exponential(size=4),
    "standard_exponential_f32": lambda g: g.standard_exponential(3, dtype=np.float32),
    "exponential": lambda g: g.exponential(2.0, size=3),
    "laplace": lambda g: g.laplace(1.0, 2.0, size=3),
    "logistic": lambda g: g.logistic(1.0, 2.0, size=3),
    "gumbel": lambda g: g.gumbel(1.0, 2.0, size=3),
    "lognormal": lambda g: g.lognormal(0.5, 0.3, size=3),
    "rayleigh": lambda g: g.rayleigh(2.0, size=3),
    "weibull": lambda g: g.weibull(1.5, size=3),
    "pareto": lambda g: g.pareto(3.0, size=3),
    "power": lambda g: g.power(2.0, size=3),
    "standard_cauchy": lambda g: g.standard_cauchy(size=3),
    "triangular": lambda g: g.triangular(0.0, 1.0, 3.0, size=3),
    "wald": lambda g: g.wald(1.0, 2.0, size=3),
    "multivariate_normal": lambda g: g.multivariate_normal([0.0, 1.0], [[1.0, 0.5], [0.5, 2.0]],
                                                           size=3),
    "geometric": lambda g: g.geometric(0.3, size=4),
    "permuted": lambda g: g.permuted(np.arange(12).reshape(3, 4), axis=1),
    "permuted_flat": lambda g: g.permuted(np.arange(6.0)),
    # NumPy's own samplers, per example
    "gamma": lambda g: g.gamma(2.0, 1.5, size=3),
    "poisson": lambda g: g.poisson(3.0, size=4),
    "dirichlet": lambda g: g.dirichlet([1.0, 2.0, 3.0]),
    "multinomial": lambda g: g.multinomial(10, [0.2, 0.3, 0.5]),
    "standard_t": lambda g: g.standard_t(3.0, size=2),
}


def run(draw, n, seed=0, **kw):
    rng = bt.random.default_rng(seed)
    return bt.vmap(lambda x: draw(rng), **kw)(np.zeros(n))


# ---- the Philox core ---------------------------------------------------------------------------
def test_philox_known_answers():
    # Random123's known-answer vectors for Philox4x64-10.
    u = np.uint64
    m = 2**64 - 1
    cases = [((0, 0, 0, 0), (0, 0), (0x16554D9ECA36314C, 0xDB20FE9D672D0FDC, 0xD7E772CEE186176B,
                                     0x7E68B68AEC7BA23B)),
             ((m, m, m, m), (m, m), (0x87B092C3013FE90B, 0x438C3C67BE8D0224, 0x9CC7D7C69CD777B6,
                                     0xA09CAEBF594F0BA0)),
             ((0x243F6A8885A308D3, 0x13198A2E03707344, 0xA4093822299F31D0, 0x082EFA98EC4E6C89),
              (0x452821E638D01377, 0xBE5466CF34E90C6C),
              (0xA528F45403E61D95, 0x38C72DBD566E9788, 0xA5A1610E72FD18B5, 0x57BD43B5E52B7FE6))]
    for ctr, key, want in cases:
        got = philox4x64(tuple(u(c) for c in ctr), tuple(u(k) for k in key))
        assert tuple(int(g) for g in got) == want


def test_philox_is_numpys_compiled_philox():
    """The NumPy-API Philox (other backends) gives the words of NumPy's compiled one (NumPy),
    which starts at the counter after the one it is given."""
    key, ctr = (2**64 - 1, 3), (2**63 - 2, 1, 2, 3)
    bg = np.random.Philox(key=np.array(key, np.uint64), counter=np.array(ctr, np.uint64))
    want = bg.random_raw(8)
    for j in range(2):
        c = (np.uint64(ctr[0] + 1 + j),) + tuple(np.uint64(x) for x in ctr[1:])
        got = philox4x64(c, tuple(np.uint64(k) for k in key))
        assert [int(g) for g in got] == [int(w) for w in want[4 * j:4 * j + 4]]


# ---- outside vmap: the wrapped NumPy Generator -------------------------------------------------
@pytest.mark.parametrize("name", sorted(DRAWS))
def test_outside_vmap_matches_numpy(name):
    got = DRAWS[name](bt.random.default_rng(7))
    want = DRAWS[name](np.random.default_rng(7))
    np.testing.assert_array_equal(got, want)
    assert np.asarray(got).dtype == np.asarray(want).dtype


def test_shuffle_outside_vmap_matches_numpy():
    a, b = np.arange(10), np.arange(10)
    bt.random.default_rng(3).shuffle(a)
    np.random.default_rng(3).shuffle(b)
    np.testing.assert_array_equal(a, b)


# ---- randomness="error" ------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(DRAWS))
def test_error_mode_raises_naming_the_call(name):
    method = name.split("_")[0] if name not in ("standard_normal",) else name
    method = {"scalar": "normal"}.get(method, method)
    with pytest.raises(bt.BatchingError, match=rf"Generator\.{method}.*randomness='error'"):
        run(DRAWS[name], 3)


def test_error_mode_in_manual_level():
    rng = bt.random.default_rng(0)
    with bt.vmap_level(3):
        with pytest.raises(bt.BatchingError, match="randomness='error'"):
            rng.random()


# ---- randomness="different" --------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(DRAWS))
def test_different_is_independent_of_batch_size_and_chunks(name):
    draw = DRAWS[name]
    full = run(draw, 7, randomness="different")
    assert full.shape[0] == 7
    assert not all(np.array_equal(full[0], full[i]) for i in range(1, 7)), "examples agree"
    for n in (1, 3):
        np.testing.assert_array_equal(run(draw, n, randomness="different"), full[:n])
    for chunk in (1, 2, 3):
        np.testing.assert_array_equal(run(draw, 7, randomness="different", chunk_size=chunk),
                                      full)


@pytest.mark.parametrize("name", ["random", "integers", "permutation", "binomial", "choice_p"])
def test_different_matches_numpy_dtype_and_shape(name):
    got = run(DRAWS[name], 3, randomness="different")
    want = np.asarray(DRAWS[name](np.random.default_rng(0)))
    assert got.shape == (3,) + want.shape and got.dtype == want.dtype


def test_same_seed_reproduces_and_new_calls_draw_new_numbers():
    rng = bt.random.default_rng(11)
    f = bt.vmap(lambda x: x + rng.random(3), randomness="different")
    a, b = f(np.zeros(4)), f(np.zeros(4))
    assert not np.array_equal(a, b)  # a second vmap call draws fresh numbers
    rng2 = bt.random.default_rng(11)
    f2 = bt.vmap(lambda x: x + rng2.random(3), randomness="different")
    np.testing.assert_array_equal(f2(np.zeros(4)), a)
    np.testing.assert_array_equal(f2(np.zeros(4)), b)


def test_two_draws_in_one_function_differ():
    rng = bt.random.default_rng(0)
    a, b = bt.vmap(lambda x: (rng.random(4), rng.random(4)), randomness="different")(np.zeros(3))
    assert not np.array_equal(a, b)


def test_nested_different_gives_every_example_its_own_draw():
    rng = bt.random.default_rng(0)
    inner = bt.vmap(lambda x: x + rng.random(), randomness="different")
    out = bt.vmap(inner, randomness="different")(np.zeros((4, 5)))
    assert len(np.unique(out)) == 20
    rng = bt.random.default_rng(0)
    inner = bt.vmap(lambda x: x + rng.random(), randomness="different")
    chunked = bt.vmap(inner, randomness="different", chunk_size=3)(np.zeros((4, 5)))
    np.testing.assert_array_equal(out, chunked)
    for inner_chunk in (1, 2):  # chunks at the inner level, as "auto" makes them there
        rng = bt.random.default_rng(0)
        inner = bt.vmap(lambda x: x + rng.random(), randomness="different",
                        chunk_size=inner_chunk)
        got = bt.vmap(inner, randomness="different")(np.zeros((4, 5)))
        np.testing.assert_array_equal(out, got)


def test_nested_same_and_different():
    def both(outer, inner):
        rng = bt.random.default_rng(0)
        f = bt.vmap(lambda x: x + rng.random(), randomness=inner)
        return bt.vmap(f, randomness=outer)(np.zeros((3, 4)))

    out = both("same", "different")
    assert (out == out[0]).all() and len(np.unique(out[0])) == 4
    out = both("different", "same")
    assert (out == out[:, :1]).all() and len(np.unique(out[:, 0])) == 3
    out = both("same", "same")
    assert (out == out[0, 0]).all()


# ---- randomness="same" -------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(DRAWS))
def test_same_draws_once_for_the_whole_batch(name):
    out = run(DRAWS[name], 5, randomness="same")
    for i in range(1, 5):
        np.testing.assert_array_equal(out[i], out[0])
    np.testing.assert_array_equal(run(DRAWS[name], 5, randomness="same", chunk_size=2), out)


# ---- batched parameters ------------------------------------------------------------------------
def test_batched_loc_and_scale():
    loc, scale = np.arange(4.0), np.array([0.5, 1.0, 2.0, 3.0])
    got = bt.vmap(lambda m, s: bt.random.default_rng(5).normal(m, s, size=3),
                  randomness="different")(loc, scale)
    z = bt.vmap(lambda m: bt.random.default_rng(5).standard_normal(3),
                randomness="different")(loc)
    np.testing.assert_allclose(got, loc[:, None] + scale[:, None] * z)
    same = bt.vmap(lambda m: bt.random.default_rng(5).normal(m, 1.0), randomness="same")(loc)
    np.testing.assert_allclose(same - loc, same[0] - loc[0])


def test_batched_integer_bounds_and_binomial_n():
    hi = np.array([1, 2, 5, 1000])
    out = bt.vmap(lambda h: bt.random.default_rng(0).integers(0, h, size=200),
                  randomness="different")(hi)
    assert (out >= 0).all() and (out < hi[:, None]).all()
    assert (out[0] == 0).all() and set(np.unique(out[1])) == {0, 1}
    n = np.array([0, 1, 7, 70])
    counts = bt.vmap(lambda k: bt.random.default_rng(0).binomial(k, 0.5, size=50),
                     randomness="different")(n)
    assert (counts >= 0).all() and (counts <= n[:, None]).all() and (counts[0] == 0).all()
    # The draw for one example does not depend on the largest n in the batch.
    alone = bt.vmap(lambda k: bt.random.default_rng(0).binomial(k, 0.5, size=50),
                    randomness="different")(n[:3])
    np.testing.assert_array_equal(alone, counts[:3])


def test_batched_population_and_probabilities():
    pop = np.arange(12.0).reshape(3, 4)
    got = bt.vmap(lambda a: bt.random.default_rng(0).choice(a, size=2, replace=False),
                  randomness="different")(pop)
    for row, g in zip(pop, got):
        assert set(g) <= set(row) and len(set(g)) == 2
    p = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    got = bt.vmap(lambda q: bt.random.default_rng(0).choice(3, size=6, p=q),
                  randomness="different")(p)
    np.testing.assert_array_equal(got, [[0] * 6, [2] * 6])


def test_shuffle_in_place_per_example():
    xs = np.tile(np.arange(6), (4, 1))

    def f(x):
        bt.random.default_rng(1).shuffle(x)
        return x

    out = bt.vmap(f, randomness="different")(xs)
    assert out is not None and (np.sort(xs, axis=1) == np.arange(6)).all()
    assert len({tuple(r) for r in xs}) > 1  # written in place, differently per example


def test_shuffle_of_shared_array_raises_naming_it():
    def f(x):
        a = np.arange(5)
        bt.random.default_rng(1).shuffle(a)
        return x

    with pytest.raises(bt.BatchingError, match=r"shuffle: x .* not batched"):
        bt.vmap(f, randomness="different")(np.zeros(3))


# ---- distributions (loose statistical sanity: a broken transform is far outside) ---------------
def test_distribution_moments():
    n = 4000
    rng = bt.random.default_rng(123)
    u, z, k, b = bt.vmap(lambda x: (rng.random(), rng.normal(2.0, 3.0), rng.integers(0, 10),
                                    rng.binomial(20, 0.25)), randomness="different")(np.zeros(n))
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.03
    assert abs(z.mean() - 2.0) < 0.2 and abs(z.std() - 3.0) < 0.2
    counts = np.bincount(k, minlength=10)
    assert counts.min() > 300 and counts.max() < 500
    assert abs(b.mean() - 5.0) < 0.2 and abs(b.var() - 3.75) < 0.5
    c = bt.vmap(lambda x: rng.choice(3, p=[0.2, 0.5, 0.3]), randomness="different")(np.zeros(n))
    np.testing.assert_allclose(np.bincount(c) / n, [0.2, 0.5, 0.3], atol=0.03)
    perms = bt.vmap(lambda x: rng.permutation(3), randomness="different")(np.zeros(n))
    firsts = np.bincount(perms[:, 0], minlength=3) / n
    np.testing.assert_allclose(firsts, [1 / 3] * 3, atol=0.03)
    assert (np.sort(perms, axis=1) == np.arange(3)).all()


def test_float32_and_bool_dtypes():
    r = run(lambda g: g.random(100, dtype=np.float32), 3, randomness="different")
    assert r.dtype == np.float32 and (r < 1).all() and (r >= 0).all()
    b = run(lambda g: g.integers(0, 2, size=50, dtype=bool), 3, randomness="different")
    assert b.dtype == bool and b.any() and not b.all()
    e = run(lambda g: g.integers(5, 5, size=4, endpoint=True), 3, randomness="different")
    assert (e == 5).all()


# ---- argument errors (the same exception types as NumPy) ---------------------------------------
@pytest.mark.parametrize("call, exc", [
    (lambda g: g.normal(0.0, -1.0), ValueError),
    (lambda g: g.integers(5, 5), ValueError),
    (lambda g: g.integers(0, 300, dtype=np.uint8), ValueError),
    (lambda g: g.choice(3, p=[0.5, 0.2, 0.2]), ValueError),
    (lambda g: g.choice(3, size=4, replace=False), ValueError),
    (lambda g: g.choice(3, p=[0.5, 0.5]), ValueError),
    (lambda g: g.binomial(-1, 0.5), ValueError),
    (lambda g: g.binomial(3, 1.5), ValueError),
    (lambda g: g.normal(size=(2,), loc=np.zeros(3)), ValueError),
    (lambda g: g.exponential(-1.0), ValueError),
    (lambda g: g.laplace(0.0, -1.0), ValueError),
    (lambda g: g.lognormal(0.0, -1.0), ValueError),
    (lambda g: g.weibull(-1.0), ValueError),
    (lambda g: g.pareto(0.0), ValueError),
    (lambda g: g.power(0.0), ValueError),
    (lambda g: g.triangular(2.0, 1.0, 3.0), ValueError),
    (lambda g: g.triangular(1.0, 1.0, 1.0), ValueError),
    (lambda g: g.geometric(1.5), ValueError),
    (lambda g: g.wald(0.0, 1.0), ValueError),
    (lambda g: g.multivariate_normal([0.0], [[1.0, 0.0]]), ValueError),
    (lambda g: g.gamma(-1.0), ValueError),
])
def test_argument_errors_match_numpy(call, exc):
    with pytest.raises(exc):
        call(np.random.default_rng(0))
    with pytest.raises(exc):
        run(call, 2, randomness="different")


def test_batched_invalid_parameter_in_one_example_raises():
    with pytest.raises(ValueError, match="scale < 0"):
        bt.vmap(lambda s: bt.random.default_rng(0).normal(0.0, s), randomness="different")(
            np.array([1.0, -1.0]))


def test_every_numpy_generator_method_is_batch_aware():
    public = [n for n in dir(np.random.Generator) if not n.startswith("_")]
    for name in public:
        assert name in vars(bt.random.Generator) or name in bt.random.Generator.__dict__, name


def test_bytes_has_no_per_example_form():
    rng = bt.random.default_rng(0)
    assert len(rng.bytes(3)) == 3  # outside: the wrapped generator
    with pytest.raises(bt.BatchingError, match=r"Generator\.bytes .* integers\(0, 256"):
        bt.vmap(lambda x: rng.bytes(3), randomness="different")(np.zeros(2))
    got = bt.vmap(lambda x: rng.bytes(3), randomness="same", out_axes=None)(np.zeros(2))
    assert isinstance(got, bytes) and len(got) == 3


#: vectorised transforms against NumPy's samplers of the same law (two-sample KS test; the
#: seeds are fixed, so the p-values are too: a broken transform gives p ~ 0)
LAWS = {
    "standard_exponential": lambda g, n: g.standard_exponential(n),
    "exponential": lambda g, n: g.exponential(2.5, n),
    "laplace": lambda g, n: g.laplace(1.0, 2.0, n),
    "logistic": lambda g, n: g.logistic(-1.0, 0.5, n),
    "gumbel": lambda g, n: g.gumbel(1.0, 2.0, n),
    "lognormal": lambda g, n: g.lognormal(0.5, 0.7, n),
    "rayleigh": lambda g, n: g.rayleigh(2.0, n),
    "weibull": lambda g, n: g.weibull(1.5, n),
    "pareto": lambda g, n: g.pareto(3.0, n),
    "power": lambda g, n: g.power(2.5, n),
    "standard_cauchy": lambda g, n: g.standard_cauchy(n),
    "triangular": lambda g, n: g.triangular(-1.0, 0.5, 3.0, n),
    "triangular_left": lambda g, n: g.triangular(0.0, 0.0, 1.0, n),
    "wald": lambda g, n: g.wald(1.5, 2.0, n),
    "normal": lambda g, n: g.normal(1.0, 3.0, n),
    "random_f32": lambda g, n: g.random(n, dtype=np.float32),
    "geometric": lambda g, n: g.geometric(0.3, n).astype(float),
    "mvn_x": lambda g, n: g.multivariate_normal([1.0, -1.0], [[2.0, 0.9], [0.9, 1.0]], n)[:, 0],
    "mvn_sum": lambda g, n: g.multivariate_normal([1.0, -1.0], [[2.0, 0.9], [0.9, 1.0]],
                                                  n).sum(-1),
    "mvn_cholesky": lambda g, n: g.multivariate_normal(
        [0.0, 0.0], [[2.0, 0.9], [0.9, 1.0]], n, method="cholesky").sum(-1),
    "mvn_eigh": lambda g, n: g.multivariate_normal(
        [0.0, 0.0], [[2.0, 0.9], [0.9, 1.0]], n, method="eigh")[:, 1],
}


@pytest.mark.parametrize("name", sorted(LAWS))
def test_transforms_follow_numpys_laws(name):
    stats = pytest.importorskip("scipy.stats", reason="the KS test is SciPy's")
    n = 3000
    rng = bt.random.default_rng(7)
    # one value (or one row) per example: the batch is the sample
    got = bt.vmap(lambda x: LAWS[name](rng, 1)[0], randomness="different")(np.zeros(n))
    want = LAWS[name](np.random.default_rng(8), n)
    assert np.isfinite(got).all()
    if name == "geometric":  # discrete: compare the frequencies
        counts = np.bincount(got.astype(int), minlength=12)[:12] / n
        np.testing.assert_allclose(counts, np.bincount(want.astype(int), minlength=12)[:12] / n,
                                   atol=0.03)
        return
    assert stats.ks_2samp(got, want).pvalue > 1e-3


def test_per_example_samplers_are_numpys_under_each_examples_key():
    """gamma and the other rejection samplers run NumPy's sampler per example, on a Philox
    keyed for that example: each example's parameters, the same numbers whatever the chunks,
    and the loop fallback's warning (or its error under fallback='error')."""
    shape = np.array([0.5, 2.0, 9.0])
    rng = bt.random.default_rng(3)
    reset_warnings()  # (each op's loop warning is shown once a process)
    with pytest.warns(bt.PerformanceWarning, match=r"bt\.random\.Generator\.gamma"):
        got = bt.vmap(lambda k: rng.gamma(k, size=400), randomness="different")(shape)
    assert got.shape == (3, 400) and (got > 0).all()
    np.testing.assert_allclose(got.mean(axis=1), shape, rtol=0.2)
    rng = bt.random.default_rng(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        again = bt.vmap(lambda k: rng.gamma(k, size=400), randomness="different",
                        chunk_size=2)(shape)
    np.testing.assert_array_equal(got, again)
    with pytest.raises(bt.BatchingError, match="once per example"):
        bt.vmap(lambda k: rng.gamma(k), randomness="different", fallback="error")(shape)
    with pytest.raises(bt.BatchingError, match="once per example"):  # shared parameters
        bt.vmap(lambda k: rng.gamma(2.0), randomness="different", fallback="error")(shape)


def test_per_example_samplers_nested_and_same():
    rng = bt.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        inner = bt.vmap(lambda x: x + rng.poisson(5.0), randomness="different")
        out = bt.vmap(inner, randomness="different")(np.zeros((4, 6)))
        assert out.shape == (4, 6) and len({tuple(r) for r in out}) == 4
        inner = bt.vmap(lambda x: x + rng.poisson(50.0), randomness="same")
        out = bt.vmap(inner, randomness="different")(np.zeros((3, 5)))
        assert (out == out[:, :1]).all() and len(np.unique(out[:, 0])) > 1


def test_multivariate_normal_checks_each_examples_covariance():
    good = np.array([[1.0, 0.2], [0.2, 1.0]])
    bad = np.array([[1.0, 2.0], [2.0, 1.0]])  # not positive semi-definite
    rng = bt.random.default_rng(0)
    f = bt.vmap(lambda c: rng.multivariate_normal(np.zeros(2), c, size=3),
                randomness="different")
    assert f(np.stack([good, good])).shape == (2, 3, 2)
    with pytest.warns(RuntimeWarning, match="positive-semidefinite"):
        f(np.stack([good, bad]))
    with pytest.raises(ValueError, match="positive-semidefinite"):
        bt.vmap(lambda c: rng.multivariate_normal(np.zeros(2), c, check_valid="raise"),
                randomness="different")(np.stack([good, bad]))
    means = np.array([[0.0, 0.0], [100.0, -100.0]])
    got = bt.vmap(lambda m: rng.multivariate_normal(m, good, size=500),
                  randomness="different")(means)
    np.testing.assert_allclose(got.mean(axis=1), means, atol=0.3)


def test_no_example_draws_nothing():
    rng = bt.random.default_rng(0)
    for call, shape, dtype in [(lambda g: g.normal(size=3), (0, 3), np.float64),
                               (lambda g: g.exponential(size=2), (0, 2), np.float64),
                               (lambda g: g.geometric(0.5, size=2), (0, 2), np.int64),
                               (lambda g: g.integers(0, 5, size=(2, 2)), (0, 2, 2), np.int64),
                               (lambda g: g.gamma(2.0, size=3), (0, 3), np.float64),
                               (lambda g: g.multinomial(5, [0.5, 0.5]), (0, 2), np.int64)]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", bt.PerformanceWarning)
            got = bt.vmap(lambda x: call(rng), randomness="different")(np.zeros(0))
        assert got.shape == shape and got.dtype == dtype


# ---- plain NumPy randomness inside vmap --------------------------------------------------------
def test_plain_numpy_generator_draws_one_shared_sample():
    # Documented: NumPy's random functions take no arrays, so NumPy never dispatches them.
    rng = np.random.default_rng(0)
    out = bt.vmap(lambda x: x + rng.normal(size=x.shape))(np.zeros((4, 3)))
    assert (out == out[0]).all()


def test_batched_parameter_to_numpy_generator_points_at_bt_random():
    rng = np.random.default_rng(0)
    with pytest.raises(TypeError, match=r"bt\.random\.default_rng"):
        bt.vmap(lambda x: rng.normal(loc=x), fallback="error")(np.zeros(3))
    # by default the function reruns per example: the generator then draws as in the loop
    got = bt.vmap(lambda x: rng.normal(loc=x), fallback="silent")(np.arange(3.0))
    again = np.random.default_rng(0)
    np.testing.assert_array_equal(got, [again.normal(loc=x) for x in np.arange(3.0)])


# ---- whole-function reruns draw the same numbers ------------------------------------------------
def test_rerun_draws_the_same_numbers():
    def f(x):
        noise = bt.random.default_rng(4).random(3)
        if x > 0:
            return noise + x
        return noise - x

    xs = np.array([1.0, -2.0, 3.0, -4.0])
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        got = bt.vmap(f, randomness="different")(xs)
    noise = bt.vmap(lambda x: bt.random.default_rng(4).random(3), randomness="different")(xs)
    np.testing.assert_array_equal(got, noise + np.abs(xs)[:, None])


# ---- threads -----------------------------------------------------------------------------------
def test_threads_reproduce_serial_draws():
    def work(seed):
        rng = bt.random.default_rng(seed)
        f = bt.vmap(lambda x: x + rng.normal(size=x.shape), randomness="different",
                    chunk_size=3)
        return [f(np.zeros((10, 4))) for _ in range(5)]

    serial = [work(s) for s in range(8)]
    results = [None] * 8

    def target(i):
        results[i] = work(i)

    threads = [threading.Thread(target=target, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(serial, results):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def test_default_rng_accepts_numpy_seeds():
    g = bt.random.default_rng(np.random.SeedSequence(3))
    assert bt.random.default_rng(g) is g
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        h = bt.random.default_rng(np.random.default_rng(3))
    np.testing.assert_array_equal(g.random(3), np.random.default_rng(3).random(3))
    assert isinstance(h.numpy, np.random.Generator)
    out = bt.vmap(lambda x: h.random(), randomness="different")(np.zeros(3))
    assert len(set(out)) == 3


def test_integers_with_batched_bounds_checks_each_example():
    """low < high was checked across examples (every low against every high), so valid
    batched bounds raised 'low >= high'."""
    low, high = np.array([0, 5, 10]), np.array([3, 8, 20])
    draw = bt.vmap(lambda lo, hi: bt.random.default_rng(0).integers(lo, hi, size=200),
                   randomness="different")
    got = draw(low, high)
    assert got.shape == (3, 200)
    assert (got >= low[:, None]).all() and (got < high[:, None]).all()
    assert all(len(np.unique(row)) == h - lo for row, lo, h in zip(got, low, high))
    with pytest.raises(ValueError, match="low >= high"):
        draw(np.array([0, 9]), np.array([3, 8]))  # one invalid example


def test_per_example_samplers_show_in_explain_as_the_loop():
    rng = bt.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        report = bt.explain(lambda x: x + rng.gamma(2.0), np.zeros(3), randomness="different")
    assert "bt.random.Generator.gamma" in str(report) and "per-op loop" in str(report)
