"""Stride tricks (docs/semantics.md, "Stride tricks"): ``as_strided`` with shape and strides
computed from ``x.strides`` gives the loop's view of each example, reached through
``numpy.lib.stride_tricks`` and through library modules that bound it by name at import;
compared with the loop, under in_axes 0 and -1, partial, nested and on 8 threads."""

from __future__ import annotations


import numpy as np
import pytest

import batchtensor as bt
from batchtensor.errors import LayoutError
from loop_reference import assert_same, loop_vmap, on_threads, vectorised

RNG = np.random.default_rng(21)


def frames(x, n=3, hop=2):
    """Overlapping frames along the last axis, as signal code builds them."""
    count = 1 + (x.shape[-1] - n) // hop
    step = x.strides[-1]
    return np.lib.stride_tricks.as_strided(
        x, shape=x.shape[:-1] + (count, n), strides=x.strides[:-1] + (step * hop, step))


LAYOUTS = {
    "C": lambda a: a,
    "F": np.asfortranarray,
    "transposed": lambda a: np.ascontiguousarray(a.T).T,
    "negative strides": lambda a: a[::-1, ::-1],
    "read-only": lambda a: np.lib.stride_tricks.as_strided(a, writeable=False),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("in_axes", [0, -1])
def test_frames_of_an_input_view_its_memory(layout, in_axes):
    xs = LAYOUTS[layout](RNG.normal(size=(4, 9)) if in_axes == 0 else RNG.normal(size=(9, 4)))
    got = vectorised(frames, xs, in_axes=in_axes)
    assert np.shares_memory(got, xs)  # the loop's frames are views of the caller's array
    assert got.flags.writeable == xs.flags.writeable


@pytest.mark.parametrize("size", [0, 1, 3])
def test_batch_sizes(size):
    xs = RNG.normal(size=(size, 7))
    got = bt.vmap(frames, fallback="error")(xs)
    assert got.shape == (size, 3, 3)
    if size:
        assert_same(got, loop_vmap(frames)(xs))


@pytest.mark.parametrize("case", ["0-d repeated", "size-0 axis", "same", "diagonal",
                                  "writeable=False", "integers"])
def test_edge_cases(case):
    def as_strided(*args, **kwargs):  # through the module, where vmap reaches it
        return np.lib.stride_tricks.as_strided(*args, **kwargs)

    f, xs = {
        "0-d repeated": (lambda x: as_strided(x, (3,), (0,)), RNG.normal(size=4)),
        "size-0 axis": (frames, np.zeros((3, 2, 0))),
        "same": (lambda x: as_strided(x), RNG.normal(size=(3, 2, 4))),
        "diagonal": (lambda x: as_strided(x, (min(x.shape),), (sum(x.strides),)),
                     RNG.normal(size=(3, 4, 5))),
        "writeable=False": (lambda x: as_strided(x, writeable=False), RNG.normal(size=(3, 4))),
        "integers": (frames, RNG.integers(0, 9, (3, 8)).astype(np.int16)),
    }[case]
    if case == "size-0 axis":
        f = lambda x: as_strided(x, (0, 2), (8, 8))  # noqa: E731
    got = vectorised(f, xs)
    assert got.flags.writeable == (case != "writeable=False")


def test_error_as_numpy_gives_it():
    f = lambda x: np.lib.stride_tricks.as_strided(x, (2,), (8, 8))  # noqa: E731
    with pytest.raises(ValueError, match="mismatch in length of strides and shape"):
        bt.vmap(f)(RNG.normal(size=(3, 4)))


def test_writes_through_the_view_reach_the_input():
    def overwrite_every_other(x):
        v = np.lib.stride_tricks.as_strided(x, (x.shape[0] // 2,), (x.strides[0] * 2,))
        v[:] = -1
        return x.sum()

    xs, ys = RNG.normal(size=(4, 6)), None
    ys = xs.copy()
    got = bt.vmap(overwrite_every_other, fallback="error")(xs)
    want = np.stack([overwrite_every_other(y) for y in ys])
    assert_same(got, want)
    assert np.array_equal(xs, ys)  # the loop's writes reached the caller's rows: so do ours


def test_partial_and_nested():
    xs, w = RNG.normal(size=(3, 9)), RNG.normal(size=3)
    vectorised(lambda x, w: frames(x) @ w, xs, w, in_axes=(0, None))
    nested = RNG.normal(size=(2, 3, 9))
    got = bt.vmap(bt.vmap(frames), in_axes=1, fallback="error")(nested)
    assert_same(got, np.stack([np.stack([frames(y) for y in nested[:, j]]) for j in range(3)]))


def test_interleaved_memory_runs_per_example():
    """``x * 2`` of an input mapped along its last axis holds each example's values spread
    over the batch's memory, while each example of the loop owns its memory: no view of the
    batch is the loop's, so the function runs per example (and says why)."""
    xs = RNG.normal(size=(9, 4))
    f = lambda x: frames(x * 2)  # noqa: E731
    with pytest.raises(LayoutError, match="interleaved"):
        bt.vmap(f, in_axes=-1, fallback="error")(xs)
    with pytest.warns(bt.PerformanceWarning, match="laid out differently"):
        got = bt.vmap(f, in_axes=-1)(xs)
    assert_same(got, loop_vmap(f, -1)(xs))


def test_threads():
    def run(i):
        xs = RNG.normal(size=(5, 11)) + i
        for _ in range(20):
            assert_same(bt.vmap(frames, fallback="error")(xs), loop_vmap(frames)(xs))

    on_threads(run)


# ---- real code, unchanged: libraries that imported as_strided by name ---------------------------
def test_skimage_view_as_windows_and_blocks():
    util = pytest.importorskip("skimage.util", reason="scikit-image is not installed")
    images = RNG.normal(size=(3, 8, 9))
    got = vectorised(lambda im: util.view_as_windows(im, (3, 2), 2), images)
    assert np.shares_memory(got, images)
    vectorised(lambda im: util.view_as_blocks(im[:8, :9], (4, 3)), images)


def test_sklearn_extract_patches_2d():
    image = pytest.importorskip("sklearn.feature_extraction.image",
                                reason="scikit-learn is not installed")
    vectorised(lambda im: image.extract_patches_2d(im, (3, 2)), RNG.normal(size=(3, 6, 5)))


def test_scipy_structured_matrices():
    linalg = pytest.importorskip("scipy.linalg", reason="SciPy is not installed")
    c, r = RNG.normal(size=(4, 5)), RNG.normal(size=(4, 3))
    vectorised(linalg.toeplitz, c, r)
    vectorised(linalg.hankel, c, r)
    vectorised(linalg.circulant, c)
    vectorised(lambda a: linalg.convolution_matrix(a, 4, mode="same"), c)


def test_modules_imported_later_are_reached_and_numpy_restored():
    """A module that binds ``as_strided`` after batchtensor was imported is reached at the
    next vmap; outside a vmap every module holds NumPy's own function again."""
    import sys
    import types

    original = np.lib.stride_tricks.as_strided
    mod = types.ModuleType("late_strided_user")
    exec("from numpy.lib.stride_tricks import as_strided\n"
         "def pairs(x):\n"
         "    return as_strided(x, (x.shape[0] - 1, 2), (x.strides[0], x.strides[0]))\n",
         vars(mod))
    sys.modules[mod.__name__] = mod
    try:
        xs = RNG.normal(size=(3, 5))
        vectorised(lambda x: mod.pairs(x), xs)
        assert mod.as_strided is original and np.lib.stride_tricks.as_strided is original
    finally:
        del sys.modules[mod.__name__]


def test_as_strided_bound_where_vmap_cannot_reach_it_reruns():
    """A local name for ``as_strided`` (bound before the vmap, in no module) keeps NumPy's own
    function, which reads ``__array_interface__``: per example it has one, so the function
    runs per example, with the loop's result."""
    as_strided = np.lib.stride_tricks.as_strided

    def pairs(x):
        return as_strided(x, (x.shape[0] - 1, 2), (x.strides[0], x.strides[0]))

    xs = RNG.normal(size=(3, 5))
    with pytest.raises(AttributeError, match="__array_interface__"):
        bt.vmap(pairs, fallback="error")(xs)
    with pytest.warns(bt.PerformanceWarning, match=r"converted \(its memory interface"):
        got = bt.vmap(pairs)(xs)
    assert_same(got, loop_vmap(pairs)(xs))


def test_a_name_the_script_binds_after_its_first_vmap_is_reached():
    """A script or notebook imports as it goes: names its namespace gains after a first vmap
    of one of its functions are looked at again at the next vmap."""
    namespace: dict = {}
    exec("import numpy as np\n"
         "def double(x):\n"
         "    return x * 2\n", namespace)
    xs = RNG.normal(size=(3, 5))
    vectorised(namespace["double"], xs)
    exec("from numpy.lib.stride_tricks import as_strided\n"
         "def pairs(x):\n"
         "    return as_strided(x, (x.shape[0] - 1, 2), (x.strides[0], x.strides[0]))\n",
         namespace)
    vectorised(namespace["pairs"], xs)
    assert namespace["as_strided"] is np.lib.stride_tricks.as_strided
