"""The fast paths give the general path's results exactly, on the OpInfo samples.

Four kinds of hot path skip the dispatcher's general machinery, and each must be invisible:

- the aligned fast path of a ufunc (``plumbing.unary_fast_path`` / ``binary_fast_paths``),
  which the Python operators *are* and which ``dispatch.array_ufunc`` / ``ufunc_call`` run
  first, against the boxed pointwise handler (``slots.ufunc_pointwise``);
- ``plumbing.matmul_fast`` (``x @ w``, ``w @ x``, ``np.matmul``) against the matmul rule;
- the in-place operators (``inplace_fast_path``) against the handler with ``out=``;
- the ``OpEntry.fast`` hooks of functions (reductions, ``np.where``, ``np.stack``...) against
  the same call with the hook removed.

Same values (NaN where NaN), dtype, shape, and the same 0-d kind (NumPy scalar or 0-d array)
per example; an error on one path must be the same error type on the other.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest

import batchtensor as bt
from batchtensor import operators, plumbing
from batchtensor.pytree import flatten, unflatten
from batchtensor.registry import REGISTRY, slots
from batchtensor.tensor import BatchedTensor, scalar_per_example
from opinfo import DATABASE
from opinfo.sweep import check_structure, draw_examples

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's, on both paths

N = 3  # examples per batch
LAYOUTS = [(0, 0), (0, None), (None, 0), (-1, -1), (0, -1)]  # in_axes of the first two arrays


def _calls(info, dtype, axes):
    """``(template, leaves, batched)`` per sample: leaves with the arrays stacked along their
    in_axes entry (cycled over ``axes``), ``batched`` the positions to wrap and their bdims."""
    for examples in draw_examples(info, dtype, N):
        arrays = check_structure(info, examples)
        if not arrays:
            continue
        per = [flatten((e.args, e.kwargs))[0] for e in examples]
        leaves, td = flatten((examples[0].args, examples[0].kwargs))
        leaves = list(leaves)
        batched = {}
        for k, j in enumerate(arrays):
            ax = axes[k % len(axes)]
            if ax is None:
                continue
            ax = ax % (per[0][j].ndim + 1)
            leaves[j] = np.stack([p[j] for p in per], axis=ax)
            batched[j] = ax
        if batched:
            yield td, leaves, batched


def _run(fn, td, leaves, batched):
    """``fn(*args, **kwargs)`` at a fresh level: ``("ok", outputs, 0-d kinds)`` unwrapped, or
    ``("raised", type)``."""
    with bt.vmap_level(N) as level:
        wrapped = [BatchedTensor(v, batched[j]) if j in batched else v
                   for j, v in enumerate(leaves)]
        args, kwargs = unflatten(td, wrapped)
        try:
            res = fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001  (compared between the two paths)
            return ("raised", type(e))
        outs, _ = flatten(res)
        kinds = [scalar_per_example(o) if type(o) is BatchedTensor else None for o in outs]
        return ("ok", [level.unwrap(o) for o in outs], kinds)


def _same(a, b) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "raised":
        return a[1] is b[1]
    if a[2] != b[2] or len(a[1]) != len(b[1]):
        return False
    for x, y in zip(a[1], b[1]):
        x, y = np.asarray(x), np.asarray(y)
        if x.dtype != y.dtype or x.shape != y.shape:
            return False
        if not np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"):
            return False
    return True


def _ufunc_infos(nin: int):
    return [i for i in DATABASE if isinstance(i.op, np.ufunc) and i.op.nin == nin
            and i.op.nout == 1 and i.op.signature is None]


def _positional(td, leaves) -> bool:
    _, kwargs = unflatten(td, leaves)
    return not kwargs


def _first(res, otherwise):
    return otherwise() if res is None else res


class _Counting:
    """Wraps a fast path and counts the calls it served (returned something other than its
    miss value), so that a test over samples the fast path never takes cannot pass."""

    def __init__(self, fn, miss):
        self.fn, self.miss, self.hits = fn, miss, 0

    def __call__(self, *args):
        res = self.fn(*args)
        if res is not self.miss:
            self.hits += 1
        return res


@pytest.mark.parametrize("info", _ufunc_infos(1), ids=lambda i: i.name)
def test_unary_fast_path_is_the_pointwise_handler(info):
    fast = plumbing.unary_fast_path(info.op, "__fast__")
    for dtype in info.dtypes[:2]:
        for td, leaves, batched in _calls(info, dtype, [0, -1]):
            if not _positional(td, leaves) or 0 not in batched:
                continue
            general = _run(lambda *a: slots.ufunc_pointwise(info.op, a, {}), td, leaves, batched)
            assert _same(_run(fast, td, leaves, batched), general), (info.name, dtype, batched)
            # NumPy's protocol: np.sin(x) reaches dispatch.array_ufunc's unary case
            assert _same(_run(info.op, td, leaves, batched), general), (info.name, dtype)


@pytest.mark.parametrize("info", _ufunc_infos(2), ids=lambda i: i.name)
def test_binary_fast_path_is_the_pointwise_handler(info):
    fast = _Counting(plumbing.binary_fast_paths(info.op)[2], None)
    tested = 0
    for dtype in info.dtypes[:2]:
        for axes in LAYOUTS:
            for td, leaves, batched in _calls(info, dtype, axes):
                if not _positional(td, leaves):
                    continue
                tested += 1
                general = _run(lambda *a: slots.ufunc_pointwise(info.op, a, {}), td, leaves,
                               batched)
                hit = _run(lambda *a: _first(fast(*a), lambda: slots.ufunc_pointwise(
                    info.op, a, {})), td, leaves, batched)
                assert _same(hit, general), (info.name, dtype, axes)
                # NumPy's protocol: np.add(x, y) reaches dispatch.ufunc_call's fast path
                assert _same(_run(info.op, td, leaves, batched), general), (info.name, dtype)
    assert fast.hits or not tested, f"{info.name}: no sample took the aligned fast path"


_MATMUL_INFO = next(i for i in DATABASE if i.op is np.matmul)


def test_matmul_fast_path_is_the_rule():
    """``plumbing.matmul_fast`` (``x @ w``, ``w @ x``, and ``np.matmul`` through
    ``dispatch.array_ufunc``) gives the matmul rule's result, on every layout of the OpInfo
    samples: the fast path answered directly, through NumPy's protocol, and through both
    operators (``ndarray.__matmul__`` of a plain left operand reaches ``array_ufunc``)."""
    fast = _Counting(plumbing.matmul_fast, None)
    tested = 0
    for dtype in _MATMUL_INFO.dtypes:
        for axes in LAYOUTS:
            for td, leaves, batched in _calls(_MATMUL_INFO, dtype, axes):
                if not _positional(td, leaves):
                    continue
                tested += 1

                def rule(*a):
                    return slots.function_call(np.matmul, a, {})

                general = _run(rule, td, leaves, batched)
                hit = _run(lambda *a: _first(fast(*a), lambda: rule(*a)), td, leaves, batched)
                assert _same(hit, general), (dtype, axes)
                assert _same(_run(np.matmul, td, leaves, batched), general), (dtype, axes)
                assert _same(_run(operator.matmul, td, leaves, batched), general), (dtype, axes)
    assert tested and fast.hits, "no matmul sample took the fast path"


@pytest.mark.parametrize("ufunc", [np.subtract, np.power, np.arctan2, np.less],
                         ids=lambda u: u.__name__)
@pytest.mark.parametrize("outer_first", [True, False], ids=["outer op inner", "inner op outer"])
def test_an_outer_levels_operand_in_the_aligned_fast_path_is_the_loop(ufunc, outer_first):
    """``front_aligned`` of a value of the current level and one of an outer level runs the
    outer level's ``either`` (``plumbing.EITHER``, made at ``dispatch.ufunc_call``'s first
    call for the ufunc) before its dispatcher: operands in the ufunc's order, every example
    pair its own value (non-commutative ufuncs, different rows on both sides)."""
    rng = np.random.default_rng(0)
    A, B = rng.uniform(0.5, 2.0, size=(4, 3)), rng.uniform(0.5, 2.0, size=(5, 3))
    with bt.vmap_level(2):  # (a first call through NumPy's protocol: EITHER has it)
        ufunc(BatchedTensor(A[:2], 0), BatchedTensor(B[:2], 0))
    assert ufunc in plumbing.EITHER

    def op(a, b):  # (a: the outer level's value in the inner vmap; b: the inner one's)
        return ufunc(a, b) if outer_first else ufunc(b, a)

    got = bt.vmap(bt.vmap(op, (None, 0)), (0, None))(A, B)
    want = np.stack([np.stack([op(a, b) for b in B]) for a in A])
    np.testing.assert_array_equal(got, want)


_OPERATOR = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
             "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
             "pow": operator.pow, "and": operator.and_, "or": operator.or_,
             "xor": operator.xor, "lshift": operator.lshift, "rshift": operator.rshift,
             "lt": operator.lt, "le": operator.le, "eq": operator.eq, "ne": operator.ne,
             "gt": operator.gt, "ge": operator.ge}
_INPLACE = {"add": operator.iadd, "sub": operator.isub, "mul": operator.imul,
            "truediv": operator.itruediv, "floordiv": operator.ifloordiv, "mod": operator.imod,
            "pow": operator.ipow, "and": operator.iand, "or": operator.ior,
            "xor": operator.ixor, "lshift": operator.ilshift, "rshift": operator.irshift}
_UFUNC_INFO = {i.op: i for i in _ufunc_infos(2)}


@pytest.mark.parametrize("name", sorted({**operators.BINARY, **operators.COMPARISON}))
def test_operators_are_the_pointwise_handler(name):
    ufunc = {**operators.BINARY, **operators.COMPARISON}[name]
    info = _UFUNC_INFO[ufunc]
    for dtype in info.dtypes[:2]:
        for axes in LAYOUTS:
            for td, leaves, batched in _calls(info, dtype, axes):
                if not _positional(td, leaves):
                    continue
                general = _run(lambda *a: slots.ufunc_pointwise(ufunc, a, {}), td, leaves,
                               batched)
                assert _same(_run(_OPERATOR[name], td, leaves, batched), general), \
                    (name, dtype, axes)


@pytest.mark.parametrize("name", sorted(_INPLACE))
def test_inplace_operators_write_what_the_handler_writes(name):
    ufunc = operators.BINARY[name]
    info = _UFUNC_INFO[ufunc]

    def general(x, y):
        slots.ufunc_pointwise(ufunc, (x, y), {"out": (x,)})
        return x

    for dtype in info.dtypes[:2]:
        for axes in [(0, 0), (0, None), (-1, -1), (0, -1)]:
            for td, leaves, batched in _calls(info, dtype, axes):
                if not _positional(td, leaves) or 0 not in batched:
                    continue
                first = leaves[0]
                if not isinstance(first, np.ndarray) or first.ndim < 2:
                    continue  # a NumPy scalar per example rebinds: not a write
                copies = [[v.copy() if k == 0 else v for k, v in enumerate(leaves)]
                          for _ in range(2)]
                a = _run(_INPLACE[name], td, copies[0], batched)
                b = _run(general, td, copies[1], batched)
                assert _same(a, b), (name, dtype, axes)
                if a[0] == "ok":
                    assert np.array_equal(copies[0][0], copies[1][0], equal_nan=True)


def _key(info):
    return info.covers if info.covers is not None else info.op


def _output_array_hook(fast) -> bool:
    """scipy.ndimage's ``output=`` handler (rules/scipy_ndimage.py) sits in the fast slot but
    is no fast path: without it the call takes the per-example loop or reruns, so no general
    path gives its result to compare with. tests/test_scipy_ndimage_output.py checks it
    against the loop."""
    return getattr(fast, "__qualname__", "").startswith("_into_output_array.")


_HOOKED: dict = {}
for _info in DATABASE:
    _fast = getattr(REGISTRY.get(_key(_info)), "fast", None)
    if _fast is not None and not _output_array_hook(_fast):
        _HOOKED.setdefault(REGISTRY[_key(_info)], []).append(_info)


@pytest.mark.parametrize("entry", list(_HOOKED), ids=lambda e: e.name)
def test_function_hooks_are_the_general_path(entry, monkeypatch):
    hook = _Counting(entry.fast, NotImplemented)
    for info in _HOOKED[entry]:
        for dtype in info.dtypes[:2]:
            for axes in [(0,), (-1,), (0, None)]:
                for td, leaves, batched in _calls(info, dtype, axes):
                    monkeypatch.setattr(entry, "fast", hook)
                    fast = _run(info.op, td, leaves, batched)
                    monkeypatch.setattr(entry, "fast", None)
                    general = _run(info.op, td, leaves, batched)
                    assert _same(fast, general), (info.name, dtype, axes)
    assert hook.hits, f"{entry.name}: no sample took its fast hook"


def test_direct_hook_of_stack_takes_only_one_level():
    """``BatchedTensor.__array_function__`` calls np.stack's hook itself with the level of the
    first value (``registry.DIRECT``): values of another level, plain arrays or a level that
    has closed must still reach the dispatcher, and give the loop's results."""
    from batchtensor.registry import DIRECT, record_paths

    assert np.stack in DIRECT
    a = np.arange(6.0).reshape(2, 3)
    b = np.arange(12.0).reshape(4, 3) * 10

    def loop(f):
        return np.stack([np.stack([f(x, y) for y in b]) for x in a])

    for f in (lambda x, y: np.stack([x, y, x + y]),     # inner values, x of the outer level
              lambda x, y: np.stack([y, x], axis=-1),   # first of the inner level
              lambda x, y: np.stack((x, np.ones(3), y)),
              lambda x, y: np.stack([x * 1.0, y * 1.0], axis=1)):
        got = bt.vmap(bt.vmap(f, (None, 0)), (0, None))(a, b)
        np.testing.assert_array_equal(got, loop(f))
    with record_paths() as log:
        np.testing.assert_array_equal(bt.vmap(lambda x: np.stack([x, 2 * x]))(a),
                                      np.stack([np.stack([x, 2 * x]) for x in a]))
    assert (np.stack, "rule") in log
    kept = []
    bt.vmap(lambda x: kept.append(x) or x)(a)
    with pytest.raises(bt.EscapedBatchedTensorError):
        np.stack([kept[0], kept[0]])
