"""What the duck-backend sweep leaves out, and why.

``python -m opinfo --backend duck`` (and ``tests/test_duck_backend.py``) run the sweep with the
physical inputs made ``DuckArray``s (``opinfo/duck.py``: CuPy's contract on a hidden ndarray).
Entries with no meaning on such a backend are excluded by group (``DUCK_EXCLUDED``); samples
that meet an inherent NumPy-only behaviour, or a value read on the host, are expected
differences (``DUCK_EXPECTED``), each with its reason.
"""

from __future__ import annotations

from .core import OpInfo, SampleInput

__all__ = ["DUCK_EXCLUDED", "DUCK_EXPECTED", "HOST_OUTPUTS", "UNMAPPED_WRITES_GAP",
           "duck_excluded", "duck_expected"]

#: group -> (reason, OpInfo names; a name ending in "*" is a prefix)
DUCK_EXCLUDED: dict[str, tuple[str, tuple[str, ...]]] = {
    "numpy.ma": (
        "masked arrays are NumPy's own ndarray subclass: a masked batch holds NumPy arrays "
        "(docs/semantics.md, NumPy backend only), and CuPy has no numpy.ma",
        ("ma.*", "ma *", "np.mean of a masked array", "ufunc add of masked arrays",
         "ufunc log of a masked array")),
    "NumPy's memory model": (
        "what an example reveals about NumPy memory: flags.aligned and writeable, base chains "
        "of views made inside the function, setflags, byteswap, getfield / setfield, resize, "
        "to_device, the flat setter; CuPy's ndarray has none of these (or no read-only "
        "arrays to answer with)",
        ("ndarray.flags", "ndarray.flags.computed", "ndarray.base.caller",
         "ndarray.base.from_dlpack",
         "ndarray.setflags*", "ndarray.byteswap*", "ndarray.getfield", "ndarray.setfield",
         "ndarray.resize.input", "ndarray.resize.referenced", "ndarray.to_device*",
         "ndarray.flat.assign")),
    "methods CuPy's ndarray lacks": (
        "searchsorted is a function in CuPy, not an ndarray method",
        ("ndarray.searchsorted",)),
    "SciPy functions that convert": (
        "the rules call SciPy's function on the physical value, and SciPy converts it with "
        "np.asarray; NumPy's protocols do not hand SciPy's functions to CuPy (cupyx.scipy is "
        "another namespace)",
        ("scipy.linalg.norm", "scipy.linalg.eigh", "scipy.stats.moment",
         "scipy.sparse.coo_array.toarray", "scipy.sparse.coo_array.tocsr")),
    "compiled kernels per example": (
        "the rules hand each example to SciPy's (astropy's) compiled kernel, which reads a "
        "NumPy buffer (a typed memoryview, Pythran) or iterates it as host values (np.nditer); "
        "CuPy has no such kernels",
        ("scipy.stats._morestats.swilk", "scipy.stats._stats_py._kendall_dis",
         "scipy.stats._stats_py._weightedrankedtau", "scipy.stats._stats_py._toint64",
         "scipy.stats._stats_mstats_common.siegelslopes_pythran",
         "scipy.stats._continuous_distns.kolmogn*",
         "astropy.stats._stats.ks_2samp")),
    "np.vectorize": (
        "np.vectorize calls a Python function on each element as a host value, so it "
        "converts its arguments with np.asarray; CuPy's cupy.vectorize compiles the function "
        "into a kernel instead, another callable",
        ("vectorize.*",)),
    "array-api-compat's device()": (
        "array-api-extra's code asks array-api-compat for the arrays' device, which reads the "
        "physical array's .device: CuPy's ndarray has one, the strict test backend has none",
        ("scipy._lib.array_api_extra.apply_where*",)),
    "scikit-learn functions that convert": (
        "scikit-learn validates its input with np.asarray before the compiled kernel the rule "
        "stands for is reached, and has no CuPy path for these (sklearn.metrics.pairwise)",
        ("sklearn.metrics*",)),
}

_HOST_READ = ("the rule reads a value on the host to size or place its result (CuPy "
              "synchronises there; the strict duck refuses every host read)")
_BINCOUNT = ("the counts go through the outer level's np.bincount, whose length is max(x) + 1: "
             + _HOST_READ)
_MASK = ("a boolean mask batched at an outer level selects its count of elements per example: "
         + _HOST_READ)
_WHERE = ("NumPy's reductions dispatch on the array and out= only: with the array unbatched "
          "and where= batched, the duck (CuPy) gets the call and meets the BatchedTensor, and "
          "CuPy's reductions take no where=")
_REFLECTED = ("a NumPy scalar compared with an array hands the ufunc a 0-d ndarray, which "
              "CuPy refuses beside its own arrays: the per-example loop fails on CuPy too")
_FREQ = ("NumPy does not dispatch fftfreq: its own code multiplies a NumPy array by d, so the "
         "per-example loop fails on CuPy too (cupy.fft.fftfreq is CuPy's)")
_SIMD = ("the duck computes with NumPy underneath, whose SIMD loop writes wrong values into "
         "a strided bool out= (vmap's staging for it, boxed/pointwise.py, is for NumPy "
         "arrays); CuPy has no such bug")

#: (OpInfo name, sample name or None for every sample) -> (scope, reason); scope "all" leaves
#: the sample out, "nested" only its nested variants
DUCK_EXPECTED: dict[tuple[str, str | None], tuple[str, str]] = {
    ("bincount", None): ("all", "the output length is max(x) + 1: " + _HOST_READ),
    **{(name, None): ("nested", _BINCOUNT)
       for name in ("histogram", "histogram.float32", "histogram2d", "histogramdd")},
    ("histogram.batched_bins", "batched edges"): ("nested", _BINCOUNT),
    **{(name, sample): ("nested", _MASK)
       for name, sample in [("getitem.bool_mask", None), ("compress", None),
                            ("ndarray.compress", None), ("extract", None),
                            ("ix_", "bool array, same count"), ("setitem", "mask, same count"),
                            ("piecewise", "two conditions, same counts"),
                            ("piecewise", "otherwise value, non-elementwise f"),
                            ("ndarray.flat.getitem", "boolean mask (batched), two True")]},
    ("trim_zeros", None): ("all", "the result is a view at the examples' common offset: "
                                  + _HOST_READ),
    **{("insert.array_index", sample): ("all", "the positions shape the result: " + _HOST_READ)
       for sample in ("index array", "boolean mask array, equal counts")},
    ("pad.through_numpy", "pad_width as an array"): ("all", "pad_width shapes the result: "
                                                            + _HOST_READ),
    **{(name, sample): ("all", _WHERE)
       for name, sample in [("sum", "where= batched"), ("sum", "where= broadcast"),
                            ("prod", "where= batched"), ("prod", "where= broadcast"),
                            ("min", "where= with initial"), ("max", "where= with initial"),
                            ("nansum", "where="), ("nansum", "where= broadcast"),
                            ("nanprod", "where="), ("nanprod", "where= broadcast"),
                            ("nanmin", "where= with initial"),
                            ("nanmax", "where= with initial")]},
    **{(f"operator.{op}", f"{scalar} op array (reflected)"): ("all", _REFLECTED)
       for op in ("eq", "ne", "lt", "le", "gt", "ge")
       for scalar in ("float32", "float64", "int32", "bool")},
    **{(name, f"n {parity}, batched d"): ("all", _FREQ)
       for name in ("fft.fftfreq", "fft.rfftfreq") for parity in ("even", "odd")},
    **{(f"ufunc.{name}.out", sample): ("all", _SIMD)
       for name in ("isfinite", "isinf", "isnan", "signbit")
       for sample in ("out=", "inputs broadcast into out=")},
}

#: OpInfo entries whose op itself turns a host answer (a dtype, a report) into a NumPy array:
#: their outputs may be plain ndarrays on the duck backend
HOST_OUTPUTS = frozenset({"result_type", "min_scalar_type", "common_type", "einsum_path"})

#: Why the sweep on the duck backend does not check writes into unmapped (in_axes=None)
#: arguments: a backend without read-only arrays gets no read-only view of them, so vmap
#: (batchtensor/api.py, ``_foreign_snapshots``) copies them before the pass and, where the pass
#: changed one, puts it back and runs per example (tests/test_duck_backend.py). A batched write
#: then gives the loop's result where NumPy's read-only view gives the shared-state error first
#: (fill_diagonal with a batched value at batch size 1), and two ops' argument checks differ
#: there (clip's out= with where=, isnat's out= reading flags.writeable).
UNMAPPED_WRITES_GAP = ("no read-only views there: vmap compares copies instead, and the "
                       "sweep's NumPy expectations of which error comes first do not hold")


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(name == p or (p.endswith("*") and name.startswith(p[:-1])) for p in patterns)


def duck_excluded(info: OpInfo) -> str | None:
    """The reason ``info`` does not run on the duck backend, or None."""
    for group, (reason, names) in DUCK_EXCLUDED.items():
        if _matches(info.name, names):
            return f"{group}: {reason}"
    return None


def duck_expected(info: OpInfo, sample: SampleInput) -> tuple[str, str] | None:
    """``(scope, reason)`` where a sample of ``info`` is an expected difference on the duck
    backend (scope "all": not run; "nested": its nested variants not run), or None."""
    for key in ((info.name, sample.name), (info.name, None)):
        if key in DUCK_EXPECTED:
            return DUCK_EXPECTED[key]
    return None
