"""The (entry, variant) pairs whose default path raises today, with the cause
(a key of ``realcode.causes``): a string for every variant the entry runs, or
a dict per variant. ``tests/test_realcode.py`` marks them ``xfail(strict=True)``:
a fix that makes one pass fails that test until this file is regenerated with

    python -m realcode -j 2 --markdown docs/realcode.md --known realcode/known_errors.py
"""

KNOWN_ERRORS: dict[str, str | dict[str, str]] = {
    'scipy.signal.convolve2d': 'compiled-converts',
    'scipy.signal.correlate2d': 'compiled-converts',
    'scipy.signal.cspline1d_eval': {
        'in_axes=0': 'compiled-rejects',
        'in_axes=-1': 'compiled-rejects',
        'nested': 'compiled-rejects',
    },
    'scipy.signal.freqs': 'roots-dtype',
    'scipy.signal.medfilt2d': 'compiled-converts',
    'scipy.signal.tf2zpk': 'roots-dtype',
    'scipy.stats.epps_singleton_2samp': 'other:TypeError: x[...] = value: the target is a NumPy scalar in each example (a N-d result of a',
    'scipy.stats.f_oneway': 'other:TypeError: x[...] = value: the target is a NumPy scalar in each example (a N-d result of a',
    'scipy.stats.ks_2samp': 'result-bunch',
    'scipy.stats.kstest': 'result-bunch',
    'scipy.stats.linregress': 'result-bunch',
    'scipy.stats.pearsonr': "other:TypeError: PearsonRResult.__init__() missing N required positional arguments: 'alternative",
    'scipy.stats.ttest_1samp': "other:TypeError: TtestResult.__init__() missing N required positional arguments: 'df', 'alternat",
    'scipy.stats.ttest_ind': "other:TypeError: TtestResult.__init__() missing N required positional arguments: 'df', 'alternat",
    'scipy.stats.ttest_rel': "other:TypeError: TtestResult.__init__() missing N required positional arguments: 'df', 'alternat",
}
