"""Joining and splitting: concatenate stack hstack vstack dstack column_stack block append
split array_split hsplit vsplit dsplit unstack."""

from __future__ import annotations

import numpy as np

from .core import OpInfo, SampleInput
from .samples import OUT_LOOP, make_array, out_variant

S = SampleInput
F64_I32 = (np.float64, np.int32)


def _a(rng, shape, dtype=np.float64, **kw):
    return make_array(rng, shape, dtype, **kw)


def concatenate_samples(rng, dtype):
    yield S(([_a(rng, (2, 3), dtype), _a(rng, (4, 3), dtype)],), {}, "axis 0")
    yield S(([_a(rng, (2, 3), dtype), _a(rng, (2, 1), dtype), _a(rng, (2, 0), dtype)],),
            {"axis": -1}, "axis -1, size 0")
    yield S(((_a(rng, (3,), dtype), _a(rng, (2,), dtype)),), {}, "tuple of 1-d")
    yield S(([_a(rng, (2, 3), dtype), _a(rng, (3,), dtype)],), {"axis": None}, "axis=None")
    yield S(([_a(rng, (), dtype), _a(rng, (), dtype)],), {"axis": None}, "0-d with axis=None")
    yield S(([_a(rng, (2, 3), dtype), _a(rng, (2, 3), np.float32)],), {"axis": 0},
            "mixed dtypes")
    yield S(([_a(rng, (2, 3), dtype), _a(rng, (2, 3), dtype)],),
            {"axis": 1, "dtype": np.complex128}, "dtype=")
    yield S(([_a(rng, (2, 3), dtype, noncontiguous=True), [[1, 2, 3]]],), {}, "a nested list")
    yield S(([_a(rng, (), dtype), _a(rng, (), dtype)],), {}, "0-d raises")
    yield S(([_a(rng, (2, 3), dtype), _a(rng, (2, 4), dtype)],), {}, "mismatched shapes")
    yield S(([_a(rng, (2, 3), dtype), _a(rng, (3,), dtype)],), {}, "mismatched ranks")
    yield S(([_a(rng, (2, 3), dtype)],), {"axis": 2}, "axis out of range")
    yield S(([_a(rng, (2, 3), dtype), _a(rng, (2, 3), np.float64)],),
            {"dtype": np.int8, "casting": "safe"}, "casting=safe raises")


def stack_samples(rng, dtype):
    yield S(([_a(rng, (3,), dtype), _a(rng, (3,), dtype)],), {}, "axis 0")
    yield S(([_a(rng, (2, 3), dtype)] * 1 + [_a(rng, (2, 3), dtype)],), {"axis": -1}, "axis -1")
    yield S(([_a(rng, (2, 3), dtype), _a(rng, (2, 3), dtype)],), {"axis": 1}, "axis 1")
    yield S(([_a(rng, (), dtype), _a(rng, (), dtype), _a(rng, (), dtype)],), {}, "0-d")
    yield S(([_a(rng, (0, 2), dtype), _a(rng, (0, 2), dtype)],), {"axis": 2}, "size 0")
    yield S(([_a(rng, (2,), dtype), _a(rng, (2,), np.int8)],), {"dtype": np.float32},
            "dtype=")
    yield S(([_a(rng, (2, 3), dtype), _a(rng, (3, 2), dtype)],), {}, "mismatched shapes")
    yield S(([_a(rng, (2, 3), dtype), _a(rng, (2, 3), dtype)],), {"axis": 3},
            "axis out of range")


def _tup_samples(extra=()):
    def gen(rng, dtype):
        yield S(([_a(rng, (3,), dtype), _a(rng, (3,), dtype)],), {}, "1-d")
        yield S(([_a(rng, (2, 3), dtype), _a(rng, (2, 3), dtype)],), {}, "2-d")
        yield S(([_a(rng, (), dtype), _a(rng, (), dtype)],), {}, "0-d")
        yield S(([_a(rng, (2, 3, 2), dtype), _a(rng, (2, 3, 2), dtype)],), {}, "3-d")
        yield S(([_a(rng, (1, 3), dtype), _a(rng, (3,), dtype)],), {}, "mixed ranks")
        yield S(([_a(rng, (2, 0), dtype), _a(rng, (2, 0), dtype)],), {}, "size 0")
        yield S(((_a(rng, (2, 3), dtype, noncontiguous=True), _a(rng, (2, 3), dtype)),), {},
                "tuple, non-contiguous")
        yield S(([_a(rng, (2, 3), dtype), _a(rng, (3, 4), dtype)],), {}, "mismatched")
        for name, kw in extra:
            yield S(([_a(rng, (2, 3), dtype), _a(rng, (2, 3), np.float32)],), kw, name)
    return gen


_DTYPE_KW = [("dtype=", {"dtype": np.float32}),
             ("casting=safe raises", {"dtype": np.int16, "casting": "safe"})]


def column_stack_samples(rng, dtype):
    yield S(([_a(rng, (3,), dtype), _a(rng, (3,), dtype)],), {}, "1-d become columns")
    yield S(([_a(rng, (3,), dtype), _a(rng, (3, 2), dtype)],), {}, "1-d and 2-d")
    yield S(([_a(rng, (), dtype), _a(rng, (1, 2), dtype)],), {}, "0-d")
    yield S(([_a(rng, (0,), dtype), _a(rng, (0, 2), dtype)],), {}, "size 0")
    yield S(([_a(rng, (2, 2, 2), dtype), _a(rng, (2, 1, 2), dtype)],), {}, "3-d")
    yield S(([_a(rng, (3,), dtype), _a(rng, (4,), dtype)],), {}, "mismatched")


def block_samples(rng, dtype):
    A, B = _a(rng, (2, 2), dtype), _a(rng, (2, 3), dtype)
    C, D = _a(rng, (1, 2), dtype), _a(rng, (1, 3), dtype)
    yield S(([[A, B], [C, D]],), {}, "2x2 blocks")
    yield S(([_a(rng, (3,), dtype), _a(rng, (2,), dtype)],), {}, "1-d list")
    yield S(([[_a(rng, (), dtype), _a(rng, (), dtype)]],), {}, "0-d leaves raised to 2-d")
    yield S(([[_a(rng, (2,), dtype)], [_a(rng, (1, 2), dtype)]],), {}, "mixed leaf ranks")
    yield S(([_a(rng, (2, 3), dtype), _a(rng, (2, 1), dtype)],), {}, "depth 1, 2-d leaves")
    yield S(([[[_a(rng, (1, 1, 2), dtype), _a(rng, (1, 1, 1), dtype)]],
               [[_a(rng, (1, 1, 3), dtype)]]],), {}, "depth 3")
    yield S(([[_a(rng, (2, 0), dtype), _a(rng, (2, 2), dtype)]],), {}, "size 0 block")
    yield S(([[_a(rng, (1, 2), dtype), 7]],), {}, "a Python scalar leaf")
    yield S((_a(rng, (2, 3), dtype),), {}, "depth 0: a copy")
    yield S(([[_a(rng, (2, 2), dtype)], _a(rng, (2, 2), dtype)],), {}, "mismatched depths")
    yield S(([[_a(rng, (2, 2), dtype), _a(rng, (3, 2), dtype)]],), {}, "mismatched shapes")
    yield S(([[_a(rng, (2, 2), dtype)], []],), {}, "empty list")
    yield S(([(_a(rng, (2,), dtype), _a(rng, (2,), dtype))],), {}, "tuple raises")


def append_samples(rng, dtype):
    yield S((_a(rng, (2, 3), dtype), _a(rng, (4,), dtype)), {}, "axis=None flattens")
    yield S((_a(rng, (2, 3), dtype), _a(rng, (1, 3), dtype)), {"axis": 0}, "axis 0")
    yield S((_a(rng, (2, 3), dtype), _a(rng, (2, 2), dtype)), {"axis": -1}, "axis -1")
    yield S((_a(rng, (), dtype), _a(rng, (), dtype)), {}, "0-d")
    yield S((_a(rng, (0,), dtype), _a(rng, (3,), np.float32)), {}, "size 0, mixed dtype")
    yield S((_a(rng, (3,), dtype), [1, 2]), {}, "a Python list")
    yield S((_a(rng, (2, 3), dtype), _a(rng, (3,), dtype)), {"axis": 0}, "rank mismatch")
    yield S((_a(rng, (), dtype), _a(rng, (), dtype)), {"axis": 0}, "0-d with an axis")


def split_samples(rng, dtype):
    yield S((_a(rng, (6,), dtype), 3), {}, "sections")
    yield S((_a(rng, (6,), dtype), [1, 4]), {}, "indices")
    yield S((_a(rng, (3, 4), dtype), 2), {"axis": -1}, "axis -1")
    yield S((_a(rng, (3, 4), dtype), [0, 5]), {"axis": 1}, "indices past the end")
    yield S((_a(rng, (2, 0), dtype), 2), {"axis": 0}, "size 0")
    yield S((_a(rng, (0, 3), dtype), 3), {}, "empty axis, 3 sections")
    yield S((_a(rng, (4, 3), dtype, noncontiguous=True), (2,)), {"axis": 0}, "tuple index")
    yield S((_a(rng, (5,), dtype), 2), {}, "uneven sections")
    yield S((_a(rng, (), dtype), 1), {}, "0-d")
    yield S((_a(rng, (4,), dtype), 2), {"axis": 1}, "axis out of range")


def array_split_samples(rng, dtype):
    yield S((_a(rng, (5,), dtype), 2), {}, "uneven sections")
    yield S((_a(rng, (3, 7), dtype), 3), {"axis": 1}, "axis 1")
    yield S((_a(rng, (2, 4), dtype), [1, 3]), {"axis": -1}, "indices")
    yield S((_a(rng, (2,), dtype), 5), {}, "more sections than elements")
    yield S((_a(rng, (4,), dtype), 0), {}, "0 sections")
    yield S((_a(rng, (), dtype), 1), {}, "0-d")


def hsplit_samples(rng, dtype):
    yield S((_a(rng, (6,), dtype), 2), {}, "1-d")
    yield S((_a(rng, (2, 6), dtype), [1, 2]), {}, "2-d")
    yield S((_a(rng, (2, 4, 3), dtype), 2), {}, "3-d")
    yield S((_a(rng, (), dtype), 1), {}, "0-d raises")
    yield S((_a(rng, (2, 5), dtype), 2), {}, "uneven")


def vsplit_samples(rng, dtype):
    yield S((_a(rng, (4, 3), dtype), 2), {}, "2-d")
    yield S((_a(rng, (4, 2, 3), dtype), [1]), {}, "3-d")
    yield S((_a(rng, (4,), dtype), 2), {}, "1-d raises")


def dsplit_samples(rng, dtype):
    yield S((_a(rng, (2, 2, 4), dtype), 2), {}, "3-d")
    yield S((_a(rng, (2, 1, 4, 2), dtype), [1, 3]), {}, "4-d")
    yield S((_a(rng, (2, 4), dtype), 2), {}, "2-d raises")




def _batched_points(kind):
    """Split points as an array argument (batched by the sweep), the same in every example;
    different ones per example: tests/test_dispatch.py."""
    def gen(rng, dtype):
        if kind == "sections":
            yield S((_a(rng, (6,), dtype), np.array(3)), {}, "sections as a 0-d array")
        yield S((_a(rng, (4, 6), dtype), np.array([1, 4])), {"axis": -1} if kind != "h" else {},
                "indices as an array")
    return gen


def _batched_points_3d(rng, dtype):
    yield S((_a(rng, (4, 6, 4), dtype), np.array([1, 3])), {}, "indices as an array")


def unstack_samples(rng, dtype):
    yield S((_a(rng, (3,), dtype),), {}, "1-d")
    yield S((_a(rng, (2, 3), dtype),), {"axis": 1}, "axis 1")
    yield S((_a(rng, (2, 3, 4), dtype, noncontiguous=True),), {"axis": -1}, "axis -1")
    yield S((_a(rng, (0, 3), dtype),), {}, "empty axis: no parts")
    yield S((_a(rng, (), dtype),), {}, "0-d raises")
    yield S((_a(rng, (2, 3), dtype),), {"axis": 2}, "axis out of range")


def _stack_of_array(x):
    """``np.stack`` given one array as the sequence: not a list the rule can see."""
    return np.stack(x, axis=1)


def stack_array_samples(rng, dtype):
    yield S((_a(rng, (3, 2), dtype),), {}, "array as the sequence")


OPS = [
    OpInfo("concatenate", np.concatenate, concatenate_samples, "rule",
           dtypes=F64_I32 + (np.complex64, np.bool_)),
    OpInfo("stack", np.stack, stack_samples, "rule", dtypes=(np.float64, np.bool_)),
    OpInfo("stack.array_arg", _stack_of_array, stack_array_samples, "loop", covers=np.stack,
           loop_reason="the sequence is one batched array, not a list of arrays"),
    OpInfo("hstack", np.hstack, _tup_samples(_DTYPE_KW), "rule", dtypes=F64_I32),
    OpInfo("vstack", np.vstack, _tup_samples(_DTYPE_KW), "rule"),
    OpInfo("dstack", np.dstack, _tup_samples(), "rule", dtypes=(np.int64,)),
    OpInfo("column_stack", np.column_stack, column_stack_samples, "rule",
           dtypes=(np.float64, np.bool_)),
    OpInfo("block", np.block, block_samples, "rule", dtypes=F64_I32),
    OpInfo("append", np.append, append_samples, "rule", dtypes=(np.float64, np.uint8)),
    OpInfo("split", np.split, split_samples, "rule", dtypes=F64_I32 + (np.complex128,)),
    OpInfo("array_split", np.array_split, array_split_samples, "rule"),
    OpInfo("hsplit", np.hsplit, hsplit_samples, "rule"),
    OpInfo("split.batched_points", np.split, _batched_points("sections"), "rule",
           covers=np.split, unbatched_self=True),
    OpInfo("array_split.batched_points", np.array_split, _batched_points("sections"), "rule",
           covers=np.array_split, unbatched_self=True),
    OpInfo("hsplit.batched_points", np.hsplit, _batched_points("h"), "rule", covers=np.hsplit,
           unbatched_self=True),
    OpInfo("vsplit.batched_points", np.vsplit, _batched_points_3d, "rule", covers=np.vsplit,
           unbatched_self=True),
    OpInfo("dsplit.batched_points", np.dsplit, _batched_points_3d, "rule", covers=np.dsplit,
           unbatched_self=True),
    OpInfo("vsplit", np.vsplit, vsplit_samples, "rule", dtypes=(np.complex128,)),
    OpInfo("dsplit", np.dsplit, dsplit_samples, "rule"),
    OpInfo("unstack", np.unstack, unstack_samples, "rule", dtypes=F64_I32),
]


def _join_out_cases(rng, dtype):
    a = lambda *s: make_array(rng, s, dtype)  # noqa: E731
    yield ([a(2, 3), a(2, 3)],), {}, "two arrays"
    yield ([a(2, 3), a(2, 3)],), {"axis": -1}, "axis=-1"


OPS += [
    OpInfo("concatenate.out", np.concatenate, out_variant(np.concatenate, _join_out_cases),
           "loop", dtypes=F64_I32, inplace=2, loop_reason=OUT_LOOP),
    OpInfo("stack.out", np.stack, out_variant(np.stack, _join_out_cases), "loop",
           dtypes=F64_I32, inplace=2, loop_reason=OUT_LOOP),
]
