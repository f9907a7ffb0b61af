"""Plain NumPy randomness inside a vmapped function (numpy_random.py, numpy_streams.py).

Every source (numpy.random's functions, a Generator or RandomState passed in, one made inside
``f`` with or without a seed) under every ``randomness=`` mode, at batch sizes 0, 1 and several,
against the per-example loop run from the same state (``np.random.seed(k)`` before each, or
the same seed for a generator), including the state each leaves behind. numpy.random's own
attributes come back after vmap returns or raises, and on other threads they keep NumPy's
behaviour.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import batchtensor as bt
from batchtensor import numpy_random
from batchtensor.errors import RandomOrderError

SIZES = (1, 4)
P = np.array([0.2, 0.5, 0.8])  # an example's parameters: probabilities, locations, shapes


def examples(n: int) -> np.ndarray:
    """n different examples of shape (3,), values in (0.05, 0.95)."""
    return np.linspace(0.05, 0.95, 3 * n).reshape(n, 3)


def global_state():
    return np.random.get_state(legacy=False)


def same_state(a, b) -> bool:
    return (a["bit_generator"] == b["bit_generator"] and a["has_gauss"] == b["has_gauss"]
            and a["gauss"] == b["gauss"]
            and np.array_equal(a["state"]["key"], b["state"]["key"])
            and a["state"]["pos"] == b["state"]["pos"])


def loop(f, xs, *rest):
    return np.stack([np.asarray(f(x, *rest)) for x in xs])


def assert_equal(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape,
                                                                 got.dtype, want.dtype)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_array_equal(got, want)


def numpy_random_is_pristine() -> bool:
    return (all(getattr(np.random, k) is v for k, v in numpy_random.ORIGINALS.items())
            and np.random.mtrand._rand is RAND)


RAND = np.random.mtrand._rand


# ---- numpy.random's functions: the global state ------------------------------------------------
# name -> f(x) drawing from numpy.random for one example x (shape (3,), values in (0, 1))
GLOBAL = {
    "normal": lambda x: np.random.normal(size=3),
    "normal scalar": lambda x: np.random.normal(),
    "normal size=()": lambda x: np.random.normal(size=()),
    "normal loc=x": lambda x: np.random.normal(loc=x),
    "normal loc=x size=(2, 3)": lambda x: np.random.normal(x, 2.0, (2, 3)),
    "normal loc=array": lambda x: np.random.normal(loc=P, size=(2, 3)),
    "standard_normal": lambda x: np.random.standard_normal((2, 2)),
    "randn": lambda x: np.random.randn(2, 3),
    "randn scalar": lambda x: np.random.randn(),
    "rand": lambda x: np.random.rand(4),
    "random": lambda x: np.random.random(3),
    "random_sample": lambda x: np.random.random_sample(size=2),
    "ranf": lambda x: np.random.ranf(2),
    "sample": lambda x: np.random.sample(2),
    "uniform": lambda x: np.random.uniform(-1.0, x),
    "randint": lambda x: np.random.randint(0, 10, size=5),
    "randint scalar": lambda x: np.random.randint(7),
    "randint int32": lambda x: np.random.randint(0, 10, size=5, dtype=np.int32),
    "randint int8": lambda x: np.random.randint(0, 10, size=5, dtype=np.int8),
    "randint bool": lambda x: np.random.randint(0, 2, size=5, dtype=bool),
    "randint uint16 wide": lambda x: np.random.randint(0, 60000, size=3, dtype=np.uint16),
    "randint high=array": lambda x: np.random.randint(1, np.array([3, 10, 2 ** 40])),
    "random_integers": lambda x: np.random.random_integers(1, 6, size=4),
    "binomial": lambda x: np.random.binomial(20, x),
    "binomial large n": lambda x: np.random.binomial(np.array([5, 500, 5000]), x),
    "poisson": lambda x: np.random.poisson(x * 50),
    "poisson scalar": lambda x: np.random.poisson(3.0),
    "gamma": lambda x: np.random.gamma(x * 3),
    "standard_gamma": lambda x: np.random.standard_gamma(np.array([0.05, 1.0, 30.0]), (2, 3)),
    "beta": lambda x: np.random.beta(x, 1 - x),
    "exponential": lambda x: np.random.exponential(x),
    "standard_exponential": lambda x: np.random.standard_exponential(3),
    "chisquare": lambda x: np.random.chisquare(x + 1),
    "noncentral_chisquare": lambda x: np.random.noncentral_chisquare(x + 1, x),
    "f": lambda x: np.random.f(x + 1, 3.0),
    "noncentral_f": lambda x: np.random.noncentral_f(3.0, x + 2, x),
    "geometric": lambda x: np.random.geometric(x),
    "gumbel": lambda x: np.random.gumbel(x),
    "hypergeometric": lambda x: np.random.hypergeometric(10, 1000, np.array([5, 50, 500])),
    "laplace": lambda x: np.random.laplace(x, 2.0),
    "logistic": lambda x: np.random.logistic(size=3),
    "lognormal": lambda x: np.random.lognormal(x),
    "logseries": lambda x: np.random.logseries(x),
    "negative_binomial": lambda x: np.random.negative_binomial(3, x),
    "pareto": lambda x: np.random.pareto(x + 1),
    "power": lambda x: np.random.power(x + 1),
    "rayleigh": lambda x: np.random.rayleigh(x),
    "standard_cauchy": lambda x: np.random.standard_cauchy(3),
    "standard_t": lambda x: np.random.standard_t(x + 1),
    "triangular": lambda x: np.random.triangular(0.0, x, 1.0),
    "vonmises": lambda x: np.random.vonmises(0.0, np.array([1e-9, 1.0, 100.0])),
    "wald": lambda x: np.random.wald(x, 2.0),
    "weibull": lambda x: np.random.weibull(x + 0.5),
    "zipf": lambda x: np.random.zipf(x + 1.5),
    "choice": lambda x: np.random.choice(7, size=4),
    "choice p": lambda x: np.random.choice(4, size=3, p=[0.1, 0.2, 0.3, 0.4]),
    "choice array": lambda x: np.random.choice(np.arange(10.0), 2),
    "choice scalar": lambda x: np.random.choice(5),
    "choice p=batched": lambda x: np.random.choice(3, size=4, p=x / x.sum()),
    "choice from x": lambda x: np.random.choice(x, size=5),
    "choice no replace": lambda x: np.random.choice(7, size=4, replace=False),
    "dirichlet": lambda x: np.random.dirichlet([0.5, 1.0, 2.0], size=2),
    "dirichlet alpha=x": lambda x: np.random.dirichlet(x),
    "multinomial": lambda x: np.random.multinomial(20, [0.2, 0.3, 0.5], size=2),
    "multinomial pvals=x": lambda x: np.random.multinomial(20, x / x.sum()),
    "multivariate_normal": lambda x: np.random.multivariate_normal([0.0, 1.0],
                                                                   [[2.0, 0.5], [0.5, 1.0]]),
    "permutation": lambda x: np.random.permutation(6),
    "permutation of x": lambda x: np.random.permutation(x),
    "shuffle a copy": lambda x: (lambda y: (np.random.shuffle(y), y)[1])(x.copy()),
    "mtrand._rand.normal": lambda x: np.random.mtrand._rand.normal(loc=x),
    "mtrand._rand.tomaxint": lambda x: np.random.mtrand._rand.tomaxint(2),
}


def _vmap_global(f, xs, randomness="different", **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # random_integers
        return bt.vmap(f, randomness=randomness, **kw)(xs)


def _loop_global(f, xs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return loop(f, xs)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", sorted(GLOBAL))
def test_global_different_is_the_loop(name, n):
    f, xs = GLOBAL[name], examples(n)
    np.random.seed(n + 10)
    want = _loop_global(f, xs)
    after_loop = global_state()
    np.random.seed(n + 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)  # no rerun: one pass
        got = _vmap_global(f, xs)
    assert_equal(got, want)
    assert same_state(global_state(), after_loop)  # the state moved on as the loop's did
    assert numpy_random_is_pristine()


@pytest.mark.parametrize("name", sorted(GLOBAL))
def test_global_batch_size_zero_draws_nothing(name):
    f = GLOBAL[name]
    np.random.seed(3)
    one = np.asarray(_loop_global(f, examples(1))[0])
    np.random.seed(3)
    before = global_state()
    try:
        got = _vmap_global(f, examples(1)[:0])
    except bt.BatchingError as e:  # drawn per example with batched parameters: no example
        assert "batch size 0" in str(e)
        return
    assert got.shape == (0,) + one.shape and got.dtype == one.dtype
    assert same_state(global_state(), before)


@pytest.mark.parametrize("n", (0,) + SIZES)
@pytest.mark.parametrize("name", ["normal", "randint", "choice", "binomial", "rand"])
def test_global_same_is_one_draw(name, n):
    f, xs = GLOBAL[name], examples(n)
    np.random.seed(5)
    one = np.asarray(f(None if name != "binomial" else P))
    after_one = global_state()
    np.random.seed(5)
    got = bt.vmap(f if name != "binomial" else (lambda x: np.random.binomial(20, P)),
                  randomness="same")(xs)
    assert_equal(got, np.broadcast_to(one, (n,) + one.shape))
    assert same_state(global_state(), after_one)


def test_global_same_with_batched_parameters_shares_the_random_numbers():
    xs = examples(4)
    np.random.seed(2)
    z = np.random.normal(size=3)
    np.random.seed(2)
    got = bt.vmap(lambda x: np.random.normal(loc=x), randomness="same")(xs)
    assert_equal(got, xs + z)
    np.random.seed(2)
    want = np.stack([np.random.RandomState(0).gamma(x) * 0 for x in xs])  # shapes only
    np.random.seed(2)
    g = bt.vmap(lambda x: np.random.gamma(x * 5), randomness="same")(xs)
    assert g.shape == want.shape and (g > 0).all()


@pytest.mark.parametrize("name", ["normal", "normal loc=x", "rand", "choice no replace",
                                  "shuffle a copy"])
def test_global_error_names_the_call_and_line(name):
    with pytest.raises(bt.BatchingError, match=r"np\.random\.\w+\(\).*randomness='error'.*"
                                               r"test_random_numpy\.py:\d+.*'different'"):
        bt.vmap(GLOBAL[name])(examples(3))
    assert numpy_random_is_pristine()


def test_global_error_even_for_one_example():
    with pytest.raises(bt.BatchingError, match="randomness='error'"):
        bt.vmap(lambda x: np.random.normal())(examples(1))


# ---- draws the loop interleaves: a rerun per example ---------------------------------------------
TWICE = {
    "two draws": lambda x: np.random.normal(size=3) + np.random.uniform(size=3),
    "a draw in a Python loop": lambda x: sum(np.random.normal(loc=x) for _ in range(3)),
    "seed inside f": lambda x: (np.random.seed(3), np.random.normal(size=2))[1],
    "get_state": lambda x: np.random.normal(size=2) + len(np.random.get_state()[1]),
    "bytes": lambda x: np.frombuffer(np.random.bytes(8), dtype=np.uint8),
    "draw, then a conversion": lambda x: np.random.normal(size=3) * float(x[0]),
    "a conversion, then a draw": lambda x: float(x[0]) * np.random.normal(size=3),
    "shuffle a plain array": lambda x: (lambda y: (np.random.shuffle(y), y + x)[1])(
        np.arange(3.0)),
}


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", sorted(TWICE))
def test_what_only_a_rerun_draws_is_the_loop(name, n):
    f, xs = TWICE[name], examples(n)
    np.random.seed(8)
    want = loop(f, xs)
    after_loop = global_state()
    np.random.seed(8)
    got = bt.vmap(f, randomness="different", fallback="silent")(xs)
    assert_equal(got, want)
    assert same_state(global_state(), after_loop)


def test_two_draws_warn_naming_the_reason_and_line():
    with pytest.warns(bt.PerformanceWarning, match=r"draws twice from one NumPy random state.*"
                                                   r"test_random_numpy\.py"):
        bt.vmap(TWICE["two draws"], randomness="different")(examples(3))


def test_two_draws_with_fallback_error_raise_saying_what_to_do():
    with pytest.raises(RandomOrderError, match=r"np\.random\.uniform\(\) draws from a random "
                                               r"state.*already drew.*bt\.random"):
        bt.vmap(TWICE["two draws"], randomness="different", fallback="error")(examples(3))
    assert numpy_random_is_pristine()


def test_two_draws_of_one_example_stay_vectorised():
    np.random.seed(1)
    want = loop(TWICE["two draws"], examples(1))
    np.random.seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(TWICE["two draws"], randomness="different")(examples(1))
    assert_equal(got, want)


def test_two_draws_under_same_stay_vectorised():
    np.random.seed(1)
    a, b = np.random.normal(size=3), np.random.uniform(size=3)
    np.random.seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(TWICE["two draws"], randomness="same")(examples(4))
    assert_equal(got, np.broadcast_to(a + b, (4, 3)))


@pytest.mark.parametrize("chunk", [1, 2, 3])
def test_chunks_draw_the_loops_numbers(chunk):
    f = GLOBAL["normal loc=x"]
    np.random.seed(4)
    want = loop(f, examples(7))
    np.random.seed(4)
    got = bt.vmap(f, randomness="different", chunk_size=chunk)(examples(7))
    assert_equal(got, want)


def test_nested_vmaps_draw_in_the_loops_order():
    def inner(y):
        return np.random.normal(loc=y, size=2)

    def outer(x):
        return bt.vmap(inner, randomness="different")(x)

    xs = np.arange(12.0).reshape(4, 3)
    np.random.seed(6)
    want = np.stack([np.stack([inner(y) for y in x]) for x in xs])
    np.random.seed(6)
    got = bt.vmap(outer, randomness="different")(xs)
    assert_equal(got, want)


def test_nested_vmap_drawing_twice_reruns_the_outer_function():
    def outer(x):
        a = bt.vmap(lambda y: np.random.normal(size=2), randomness="different")(x)
        return a + bt.vmap(lambda y: np.random.uniform(size=2), randomness="different")(x)

    xs = np.zeros((3, 2))
    np.random.seed(6)
    want = np.stack([np.stack([np.random.normal(size=2) for _ in x]) +
                     np.stack([np.random.uniform(size=2) for _ in x]) for x in xs])
    np.random.seed(6)
    got = bt.vmap(outer, randomness="different", fallback="silent")(xs)
    assert_equal(got, want)


def test_outer_same_inner_different():
    def outer(x):
        return bt.vmap(lambda y: np.random.normal(size=2), randomness="different")(x)

    xs = np.zeros((3, 4))
    np.random.seed(2)
    one = np.stack([np.random.normal(size=2) for _ in range(4)])
    np.random.seed(2)
    got = bt.vmap(outer, randomness="same")(xs)
    assert_equal(got, np.broadcast_to(one, (3, 4, 2)))


def test_in_place_shuffle_of_a_mapped_argument_is_the_loops():
    def f(x):
        np.random.shuffle(x)
        return x.sum()

    a, b = examples(4), examples(4)
    np.random.seed(9)
    want = loop(f, a)
    np.random.seed(9)
    got = bt.vmap(f, randomness="different")(b)
    assert_equal(got, want)
    np.testing.assert_array_equal(b, a)  # the caller's rows shuffled as the loop shuffles them


def test_scipy_distributions_given_random_state_numpy_random():
    stats = pytest.importorskip("scipy.stats", reason="SciPy is an optional test dependency")
    f = lambda x: x + stats.norm.rvs(size=3, random_state=np.random)  # noqa: E731
    np.random.seed(3)
    want = loop(f, examples(4))
    np.random.seed(3)
    assert_equal(bt.vmap(f, randomness="different")(examples(4)), want)
    # SciPy converts the batched shape with its own `asarray` (bound at import): a rerun, which
    # rewinds the generator passed in and draws from it example after example
    g = lambda x, rng: stats.gamma.rvs(x + 1, random_state=rng)  # noqa: E731
    want = loop(g, examples(4), np.random.default_rng(2))
    got = bt.vmap(g, in_axes=(0, None), randomness="different", fallback="silent")(
        examples(4), np.random.default_rng(2))
    assert_equal(got, want)


def test_intercept_off_leaves_numpy_random_alone():
    with bt.config(intercept_numpy=False):
        out = bt.vmap(lambda x: x * 0 + np.random.normal(size=3))(examples(4))
    assert (out == out[0]).all()  # NumPy's one shared draw


# ---- a Generator / RandomState passed in --------------------------------------------------------
GEN_DRAWS = {
    "normal": lambda x, g: g.normal(size=3),
    "normal loc=x": lambda x, g: g.normal(loc=x),
    "integers": lambda x, g: g.integers(0, 100, size=4),
    "integers int8": lambda x, g: g.integers(0, 100, size=4, dtype=np.int8),
    "random float32": lambda x, g: g.random(3, dtype=np.float32),
    "gamma": lambda x, g: g.gamma(x * 4),
    "choice": lambda x, g: g.choice(5, size=2),
    "choice no replace": lambda x, g: g.choice(5, size=2, replace=False),
    "permutation": lambda x, g: g.permutation(x),
    "permuted": lambda x, g: g.permuted(np.stack([x, x])),
    "multivariate_hypergeometric": lambda x, g: g.multivariate_hypergeometric([3, 4, 5], 6),
    "standard_exponential out=": lambda x, g: (lambda o: (g.standard_exponential(out=o), o)[1])(
        np.empty_like(x)),
}
RS_DRAWS = {
    "normal": lambda x, g: g.normal(size=3),
    "normal loc=x": lambda x, g: g.normal(loc=x),
    "randn": lambda x, g: g.randn(3),
    "randint": lambda x, g: g.randint(0, 10, size=3),
    "tomaxint": lambda x, g: g.tomaxint(2),
}


def _make(kind: str, seed: int):
    return np.random.default_rng(seed) if kind == "Generator" else np.random.RandomState(seed)


def _state(g):
    return g.bit_generator.state if isinstance(g, np.random.Generator) else \
        g.get_state(legacy=False)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind, name", [("Generator", k) for k in sorted(GEN_DRAWS)]
                         + [("RandomState", k) for k in sorted(RS_DRAWS)])
def test_generator_argument_different_is_the_loop(kind, name, n):
    f = (GEN_DRAWS if kind == "Generator" else RS_DRAWS)[name]
    xs = examples(n)
    g_loop, g_vmap = _make(kind, 11), _make(kind, 11)
    want = loop(f, xs, g_loop)
    got = bt.vmap(f, in_axes=(0, None), randomness="different")(xs, g_vmap)
    assert_equal(got, want)
    a, b = _state(g_vmap), _state(g_loop)
    assert str(a) == str(b)  # the caller's generator moved on as the loop moved it


def test_generator_keyword_argument_and_isinstance():
    seen = []

    def f(x, *, rng):
        seen.append(isinstance(rng, np.random.Generator))
        return x + rng.normal(size=3)

    want = np.stack([x + g.normal(size=3) for g in [np.random.default_rng(1)]
                     for x in examples(4)])
    got = bt.vmap(f, randomness="different")(examples(4), rng=np.random.default_rng(1))
    assert_equal(got, want)
    assert seen == [True]


@pytest.mark.parametrize("in_axes", [(0, None), (0, {"rng": None, "w": None})])
def test_generator_inside_a_container_argument(in_axes):
    f = lambda x, d: x * d["w"] + d["rng"].normal(size=3)  # noqa: E731
    want = loop(f, examples(4), {"rng": np.random.default_rng(6), "w": 2.0})
    got = bt.vmap(f, in_axes=in_axes, randomness="different")(
        examples(4), {"rng": np.random.default_rng(6), "w": 2.0})
    assert_equal(got, want)


@pytest.mark.parametrize("n", (0,) + SIZES)
def test_generator_argument_same_and_error(n):
    f = GEN_DRAWS["normal"]
    got = bt.vmap(f, in_axes=(0, None), randomness="same")(examples(n), np.random.default_rng(2))
    assert_equal(got, np.broadcast_to(np.random.default_rng(2).normal(size=3), (n, 3)))
    with pytest.raises(bt.BatchingError, match=r"Generator\.normal\(\).*randomness='error'"):
        bt.vmap(f, in_axes=(0, None))(examples(n), np.random.default_rng(2))


def test_generator_argument_batch_size_zero():
    g = np.random.default_rng(3)
    before = g.bit_generator.state
    got = bt.vmap(GEN_DRAWS["normal loc=x"], in_axes=(0, None), randomness="different")(
        examples(0), g)
    assert got.shape == (0, 3) and got.dtype == np.float64
    assert g.bit_generator.state == before


def test_generator_argument_drawn_twice_reruns():
    f = lambda x, g: g.normal(size=2) + g.integers(0, 5, size=2)  # noqa: E731
    want = loop(f, examples(4), np.random.default_rng(5))
    got = bt.vmap(f, in_axes=(0, None), randomness="different", fallback="silent")(
        examples(4), np.random.default_rng(5))
    assert_equal(got, want)


def test_two_streams_drawn_once_each_stay_vectorised():
    f = lambda x, g: np.random.normal(size=2) + g.normal(size=2)  # noqa: E731
    np.random.seed(1)
    want = loop(f, examples(4), np.random.default_rng(5))
    np.random.seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", bt.PerformanceWarning)
        got = bt.vmap(f, in_axes=(0, None), randomness="different")(
            examples(4), np.random.default_rng(5))
    assert_equal(got, want)


@pytest.mark.parametrize("cls", ["Generator", "RandomState"])
def test_a_generator_made_inside_around_the_callers_bit_generator(cls):
    def f(x, bits):
        g = getattr(np.random, cls)(bits)  # every example of the loop draws from `bits` in turn
        return g.normal(size=2) + (g.randn() if cls == "RandomState" else g.random())

    b_loop, b_vmap = np.random.PCG64(8), np.random.PCG64(8)
    want = loop(f, examples(4), b_loop)
    got = bt.vmap(f, in_axes=(0, None), randomness="different", fallback="silent")(
        examples(4), b_vmap)
    assert_equal(got, want)
    assert b_vmap.state == b_loop.state


def test_a_captured_generator_reached_through_default_rng_is_the_callers_stream():
    g_loop, g_vmap = np.random.default_rng(4), np.random.default_rng(4)
    want = np.stack([np.random.default_rng(g_loop).normal(size=2) for _ in range(4)])
    got = bt.vmap(lambda x: np.random.default_rng(g_vmap).normal(size=2),
                  randomness="different")(examples(4))
    assert_equal(got, want)


# ---- generators made inside f ------------------------------------------------------------------
MADE = {
    "default_rng(0)": lambda x: np.random.default_rng(0).normal(size=3),
    "default_rng(0), loc=x": lambda x: np.random.default_rng(0).normal(loc=x),
    "default_rng(0), two draws": lambda x: (lambda g: g.normal(size=2).sum() + g.random(3))(
        np.random.default_rng(0)),
    "default_rng(0), gamma(x) then normal": lambda x: (lambda g: g.gamma(x * 2) + g.normal())(
        np.random.default_rng(0)),
    "default_rng(0), shuffle": lambda x: (lambda y: (np.random.default_rng(0).shuffle(y), y)[1])(
        x.copy()),
    "Generator(PCG64(3))": lambda x: np.random.Generator(np.random.PCG64(3)).integers(9, size=3),
    "Generator(Philox(key=2))": lambda x: np.random.Generator(np.random.Philox(key=2)).random(2),
    "default_rng(SeedSequence(5))": lambda x: np.random.default_rng(
        np.random.SeedSequence(5)).random(2),
    "RandomState(0)": lambda x: np.random.RandomState(0).normal(size=3),
    "RandomState(0), loc=x then randn": lambda x: (lambda r: r.normal(loc=x) + r.randn())(
        np.random.RandomState(0)),
    "spawned children": lambda x: np.random.default_rng(1).spawn(2)[1].normal(size=2),
}


@pytest.mark.parametrize("randomness", ["error", "different", "same"])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", sorted(MADE))
def test_a_generator_seeded_inside_f_is_the_loops_whatever_the_mode(name, n, randomness):
    f, xs = MADE[name], examples(n)
    want = loop(f, xs)
    got = bt.vmap(f, randomness=randomness, fallback="error")(xs)
    assert_equal(got, want)


@pytest.mark.parametrize("inner", ["different", "same"])
def test_a_generator_seeded_inside_f_is_a_stream_for_an_inner_vmap(inner):
    def f(x):
        g = np.random.default_rng(0)  # each outer example's own, the same seed
        return bt.vmap(lambda y: y + g.normal(), randomness=inner)(x)

    xs = examples(3)
    if inner == "different":  # the inner loop draws from the outer example's generator in turn
        want = np.stack([(lambda g: np.stack([y + g.normal() for y in x]))(
            np.random.default_rng(0)) for x in xs])
    else:
        want = xs + np.random.default_rng(0).normal()
    assert_equal(bt.vmap(f, randomness="error")(xs), want)


SEEDED = {
    "default_rng": lambda s: np.random.default_rng(s).normal(size=2),
    "RandomState": lambda s: np.random.RandomState(s).normal(size=2),
    "default_rng([s, 1])": lambda s: np.random.default_rng([s, 1]).integers(0, 9, size=2),
}


@pytest.mark.parametrize("n", (0,) + SIZES)
@pytest.mark.parametrize("make", sorted(SEEDED))
def test_a_batched_seed_gives_each_example_its_generator(make, n):
    f = SEEDED[make]
    seeds = np.arange(10, 10 + n)
    got = bt.vmap(f, randomness="different", fallback="error")(seeds)
    if n == 0:
        assert got.shape == (0, 2)
        return
    assert_equal(got, loop(f, seeds))


def test_a_bit_generator_seeded_per_example_reruns():
    f = lambda s: np.random.Generator(np.random.PCG64(s)).normal(size=2)  # noqa: E731
    seeds = np.arange(5)
    assert_equal(bt.vmap(f, randomness="different", fallback="silent")(seeds), loop(f, seeds))
    with pytest.raises(RandomOrderError, match=r"np\.random\.PCG64\(\).*batched"):
        bt.vmap(f, fallback="error")(seeds)


FRESH = {
    "default_rng()": lambda x: x + np.random.default_rng().normal(size=3),
    "Generator(PCG64())": lambda x: x + np.random.Generator(np.random.PCG64()).normal(size=3),
    "RandomState()": lambda x: x + np.random.RandomState().normal(size=3),
    "default_rng(), loc=x": lambda x: np.random.default_rng().normal(loc=x * 100),
}


@pytest.mark.parametrize("n", (0,) + SIZES)
@pytest.mark.parametrize("name", sorted(FRESH))
def test_an_unseeded_generator_made_inside_f_follows_the_mode(name, n):
    f, xs = FRESH[name], examples(n)
    diff = bt.vmap(f, randomness="different")(xs) - xs * (100 if "loc" in name else 1)
    assert diff.shape == (n, 3)
    assert len({tuple(np.round(r, 12)) for r in diff}) == n  # each example its own numbers
    same = bt.vmap(f, randomness="same")(xs) - xs * (100 if "loc" in name else 1)
    assert n == 0 or np.allclose(same, same[0], atol=1e-9)
    with pytest.raises(bt.BatchingError, match=r"without a seed.*randomness='error'"):
        bt.vmap(f)(xs if n else examples(2))


def test_an_unseeded_generator_that_does_not_draw_is_not_an_error():
    out = bt.vmap(lambda x: (np.random.default_rng(), x * 2)[1])(examples(3))
    assert_equal(out, examples(3) * 2)


def test_an_unseeded_seed_sequence_reruns_under_different():
    f = lambda x: x + np.random.default_rng(np.random.SeedSequence()).random(3)  # noqa: E731
    out = bt.vmap(f, randomness="different", fallback="silent")(examples(4))
    assert len(np.unique(out[:, 0] - examples(4)[:, 0])) == 4
    with pytest.raises(bt.BatchingError, match=r"SeedSequence.*randomness='error'"):
        bt.vmap(f)(examples(4))


def test_a_generator_made_inside_escaping_its_vmap_raises():
    kept = []

    def f(x):
        kept.append(np.random.default_rng())
        return x

    bt.vmap(f, randomness="different")(examples(3))
    with pytest.raises(bt.BatchingError, match="used outside that vmap"):
        kept[0].normal()


def test_a_seeded_generator_made_inside_works_after_the_vmap():
    kept = []

    def f(x):
        kept.append(np.random.default_rng(7))
        return x

    bt.vmap(f)(examples(3))
    assert kept[0].normal() == np.random.default_rng(7).normal()


def test_made_inside_objects_are_numpy_instances():
    seen = {}

    def f(x):
        g = np.random.default_rng(0)
        seen["gen"] = isinstance(g, np.random.Generator)
        seen["rs"] = isinstance(np.random.RandomState(1), np.random.RandomState)
        seen["bits"] = isinstance(np.random.PCG64(2), np.random.PCG64)
        seen["ss"] = isinstance(np.random.SeedSequence(3), np.random.SeedSequence)
        seen["plain"] = isinstance(np.random.mtrand._rand, np.random.RandomState)
        return x

    bt.vmap(f)(examples(2))
    assert all(seen.values()), seen


# ---- numpy.random itself -----------------------------------------------------------------------
def test_numpy_random_is_restored_after_return_and_raise():
    bt.vmap(GLOBAL["normal"], randomness="different")(examples(2))
    assert numpy_random_is_pristine()
    with pytest.raises(ZeroDivisionError):
        bt.vmap(lambda x: (np.random.normal(), 1 / 0), randomness="different")(examples(2))
    assert numpy_random_is_pristine()
    with pytest.raises(bt.BatchingError):
        bt.vmap(GLOBAL["normal"])(examples(2))
    assert numpy_random_is_pristine()


def test_other_threads_keep_numpys_behaviour_while_a_vmap_runs():
    inside, go_on = threading.Event(), threading.Event()
    seen = {}

    def f(x):
        inside.set()
        go_on.wait(10)
        return x + np.random.default_rng(1).normal(size=3)

    def other():
        inside.wait(10)
        try:
            seen["replaced"] = np.random.normal is not numpy_random.ORIGINALS["normal"]
            g = np.random.default_rng(5)
            seen["gen"] = (type(g) is numpy_random.ORIGINALS["Generator"],
                           g.normal() == numpy_random.ORIGINALS["default_rng"](5).normal())
            seen["rs"] = np.random.RandomState(3).randint(1000) == \
                numpy_random.ORIGINALS["RandomState"](3).randint(1000)
            np.random.seed(0)
            a = np.random.normal(size=3)
            np.random.seed(0)
            seen["global"] = (a == numpy_random.ORIGINALS["normal"](size=3)).all()
        finally:
            go_on.set()

    t = threading.Thread(target=other)
    t.start()
    out = bt.vmap(f)(examples(3))
    t.join()
    assert seen == {"replaced": True, "gen": (True, True), "rs": True, "global": True}
    assert_equal(out, examples(3) + np.random.default_rng(1).normal(size=3))
    assert numpy_random_is_pristine()


def test_vmaps_on_several_threads_each_draw_their_loops_numbers():
    errors, results = [], {}

    def work(k):
        try:
            f = lambda x, g: x + g.normal(size=3) + np.random.default_rng(k).random(3)  # noqa
            for _ in range(20):
                got = bt.vmap(f, in_axes=(0, None), randomness="different")(
                    examples(5), np.random.default_rng(k))
                want = loop(f, examples(5), np.random.default_rng(k))
                if not np.array_equal(got, want):
                    errors.append(k)
            results[k] = True
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 4
    assert numpy_random_is_pristine()


# ---- the NumPy facts the vectorised draws rest on ------------------------------------------------
ONE_CALL = [("normal", {}), ("binomial", {"n": np.array([5, 500, 5000]), "p": 0.3}),
            ("poisson", {"lam": np.array([0.5, 20.0, 300.0])}),
            ("gamma", {"shape": np.array([0.1, 1.0, 7.0])}),
            ("hypergeometric", {"ngood": np.array([10, 1000, 3]), "nbad": 5, "nsample": 3}),
            ("zipf", {"a": 1.1}), ("vonmises", {"mu": 0.0, "kappa": 1e-9}),
            ("randint", {"low": 0, "high": 2 ** 40}), ("randint", {"low": 0, "high": 10,
                                                                   "dtype": np.int32})]


@pytest.mark.parametrize("name, kw", ONE_CALL, ids=[f"{n}-{i}" for i, (n, _) in
                                                     enumerate(ONE_CALL)])
def test_one_call_of_the_batch_size_is_numpys_stream_of_calls_in_turn(name, kw):
    # What the vectorised draw relies on (rejection samplers and array parameters included):
    # one call of size (B,) + S draws what B calls of size S draw one after the other.
    a, b = np.random.RandomState(3), np.random.RandomState(3)
    each = np.stack([getattr(a, name)(size=(2, 3), **kw) for _ in range(5)])
    whole = getattr(b, name)(size=(5, 2, 3), **kw)
    np.testing.assert_array_equal(each, whole)
    assert str(a.get_state(legacy=False)) == str(b.get_state(legacy=False))


def test_small_integer_draws_are_not_one_stream():
    # NumPy's buffered small integers share a 32-bit word within one call: drawn per example.
    a, b = np.random.RandomState(3), np.random.RandomState(3)
    each = np.stack([a.randint(0, 10, size=3, dtype=np.int8) for _ in range(5)])
    assert not np.array_equal(each, b.randint(0, 10, size=(5, 3), dtype=np.int8))


def test_an_inner_rerun_rewinds_a_stream_of_the_callers():
    def outer(x, g):
        # float(y) of the inner level alone: the inner vmap reruns, from g's state before it
        return x[0] + bt.vmap(lambda y: g.normal() * float(y), randomness="different")(
            np.arange(1.0, 4.0))

    g_loop, g_vmap = np.random.default_rng(12), np.random.default_rng(12)
    want = np.stack([x[0] + np.stack([g_loop.normal() * y for y in np.arange(1.0, 4.0)])
                     for x in examples(3)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bt.PerformanceWarning)
        got = bt.vmap(outer, in_axes=(0, None), randomness="different")(examples(3), g_vmap)
    assert_equal(got, want)
    assert g_vmap.bit_generator.state == g_loop.bit_generator.state


def test_out_that_is_not_batched_reruns():
    def f(x, g):
        buf = np.empty(3)
        g.random(out=buf)
        return buf + x

    want = loop(f, examples(3), np.random.default_rng(0))
    got = bt.vmap(f, in_axes=(0, None), randomness="different", fallback="silent")(
        examples(3), np.random.default_rng(0))
    assert_equal(got, want)
    with pytest.raises(bt.BatchingError, match=r"Generator\.random\(\).*out=.*not batched"):
        bt.vmap(f, in_axes=(0, None), randomness="different", fallback="error")(
            examples(3), np.random.default_rng(0))

    shared = np.zeros(3)

    def into_callers_array(x, g):  # the loop would overwrite the caller's array per example
        g.random(out=shared)
        return shared + x

    with pytest.raises(bt.BatchingError, match=r"out=.*not batched"):
        bt.vmap(into_callers_array, in_axes=(0, None), randomness="different")(
            examples(3), np.random.default_rng(0))
    assert_equal(shared, np.zeros(3))
