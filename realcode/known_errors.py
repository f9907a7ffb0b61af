"""The (entry, variant) pairs whose default path raises today, with the cause
(a key of ``realcode.causes``): a string for every variant the entry runs, or
a dict per variant. ``tests/test_realcode.py`` marks them ``xfail(strict=True)``:
a fix that makes one pass fails that test until this file is regenerated with

    python -m realcode -j 2 --markdown docs/realcode.md --known realcode/known_errors.py
"""

KNOWN_ERRORS: dict[str, str | dict[str, str]] = {
}
