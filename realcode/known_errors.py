"""The (entry, variant) pairs whose default path raises today, with the cause
(a key of ``realcode.causes``): a string for every variant the entry runs, or
a dict per variant. ``tests/test_realcode.py`` marks them ``xfail(strict=True)``:
a fix that makes one pass fails that test until this file is regenerated with

    python -m realcode -j 2 --markdown docs/realcode.md --known realcode/known_errors.py
"""

KNOWN_ERRORS: dict[str, str | dict[str, str]] = {
    'scipy.signal.convolve2d': 'compiled-converts',
    'scipy.signal.correlate2d': 'compiled-converts',
    'scipy.signal.freqs': 'roots-dtype',
    'scipy.signal.medfilt2d': 'compiled-converts',
    'scipy.signal.tf2zpk': 'roots-dtype',
    'scipy.stats.epps_singleton_2samp': 'scalar-target',
    'scipy.stats.f_oneway': 'scalar-target',
}
