"""Products and numpy.linalg: behaviour the OpInfo sweep cannot draw (data-dependent shapes
across a batch, mixed result dtypes across examples, registration safety)."""

from __future__ import annotations

import numpy as np
import pytest

import batchtensor as bt


def _loop(f, *args):
    return [f(*(a[i] for a in args)) for i in range(len(args[0]))]


def test_lstsq_mixed_rank_residuals_raise():
    # Example 0 has full column rank (residuals shape (1,)), example 1 not (shape (0,)): the
    # per-example results cannot be stacked, and vmap says so instead of guessing.
    rng = np.random.default_rng(0)
    a = rng.normal(size=(2, 5, 3))
    a[1, :, 2] = a[1, :, 0]
    b = rng.normal(size=(2, 5))
    shapes = {r[1].shape for r in _loop(np.linalg.lstsq, a, b)}
    assert shapes == {(1,), (0,)}
    with pytest.raises(bt.BatchingError, match="residuals"):
        bt.vmap(np.linalg.lstsq)(a, b)


def test_lstsq_uniform_rank_deficiency_matches_loop():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 5, 3))
    a[:, :, 2] = a[:, :, 0]
    b = rng.normal(size=(3, 5, 2))
    x, res, rank, s = bt.vmap(np.linalg.lstsq)(a, b)
    ref = _loop(np.linalg.lstsq, a, b)
    np.testing.assert_allclose(x, np.stack([r[0] for r in ref]), rtol=1e-8, atol=1e-10)
    assert res.shape == (3, 0) and rank.dtype == np.int32 and list(rank) == [2, 2, 2]


def test_eig_mixed_real_and_complex_examples():
    # NumPy returns real eigenvalues for a matrix whose eigenvalues are all real, complex ones
    # otherwise; a batch holding both kinds is complex (as np.stack of the loop's results).
    sym = np.array([[2.0, 1.0], [1.0, 3.0]])
    rot = np.array([[0.0, -1.0], [1.0, 0.0]])
    a = np.stack([sym, rot])
    w = bt.vmap(np.linalg.eigvals)(a)
    ref = np.stack(_loop(np.linalg.eigvals, a))
    assert w.dtype == ref.dtype == np.complex128
    np.testing.assert_allclose(w, ref)
    # (NumPy 2.4's eigenvalues of a symmetric matrix are real; 2.5's are complex always)
    both = np.stack([sym, sym])
    assert bt.vmap(np.linalg.eigvals)(both).dtype == np.stack(_loop(np.linalg.eigvals, both)).dtype


def test_singular_matrix_in_batch_raises_linalgerror():
    a = np.stack([np.eye(3), np.zeros((3, 3))])
    with pytest.raises(np.linalg.LinAlgError):
        bt.vmap(np.linalg.inv)(a)


def test_stacked_op_rejects_examples_without_core_dims():
    # a batch of 3 vectors of length 3 must not be inverted as one 3x3 matrix
    with pytest.raises(np.linalg.LinAlgError, match="1-dimensional"):
        bt.vmap(np.linalg.inv)(np.eye(3) * 2)
    with pytest.raises(ValueError):
        bt.vmap(np.linalg.solve, in_axes=(None, 0))(np.eye(3), np.ones(3))  # 0-d b


def test_variadic_bdims_user_op_with_too_few_dims_uses_the_loop():
    def my_inv(x):
        return np.linalg.inv(x)

    bt.boxed.variadic_bdims(my_inv, core_ranks={"x": 2})
    old = bt.config.fallback
    bt.config.fallback = "silent"
    try:
        with pytest.raises(np.linalg.LinAlgError, match="1-dimensional"):
            bt.vmap(lambda x: bt_call(my_inv, x))(np.eye(3) * 2)
    finally:
        bt.config.fallback = old


def bt_call(op, x):
    """Call a plain Python function registered with the registry on a BatchedTensor."""
    from batchtensor.dispatch import function_call

    return function_call(op, (x,), {})


def test_matvec_fast_paths_match_loop():
    rng = np.random.default_rng(2)
    w = rng.normal(size=(4, 3))
    xs = rng.normal(size=(5, 3))
    np.testing.assert_allclose(bt.vmap(lambda x: w @ x)(xs), np.stack([w @ x for x in xs]))
    ys = rng.normal(size=(5, 4))
    np.testing.assert_allclose(bt.vmap(lambda y: y @ w)(ys), np.stack([y @ w for y in ys]))


def test_einsum_path_report_is_per_example():
    x = np.ones((4, 2, 3))
    y = np.ones((3, 5))
    path, report = bt.vmap(lambda a: np.einsum_path("ij,jk->ik", a, y), out_axes=None)(x)
    ref_path, ref_report = np.einsum_path("ij,jk->ik", x[0], y)
    assert path == ref_path and report == ref_report
