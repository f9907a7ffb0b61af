"""A visible corpus of real library code run unchanged under ``bt.vmap``.

Each module holds the entries of one library's functions (imported from the library on first
use, never re-typed); ``python -m realcode`` runs every entry mapped four ways against the
per-example loop and reports which ran fully vectorised, which needed the per-op loop or the
whole-function rerun, and which gave a wrong result or an error (``docs/realcode.md``).
"""

from __future__ import annotations

from . import (astropy_stats, scipy_distributions, scipy_mstats, scipy_signal, scipy_spatial,
               scipy_stats,
               skimage_exposure, skimage_filters, skimage_metrics, sklearn_metrics,
               sklearn_pairwise, sklearn_preprocessing, stride_tricks)
from .core import BATCH, NESTED, VARIANTS, Entry, Outcome, Status, cases, run_case, run_entry

__all__ = ["MODULES", "ENTRIES", "BY_NAME", "Entry", "Outcome", "Status", "VARIANTS", "BATCH",
           "NESTED", "cases", "run_case", "run_entry"]

#: one module per library area, in the order the report lists them
MODULES = {
    "sklearn.metrics": sklearn_metrics,
    "sklearn.metrics.pairwise": sklearn_pairwise,
    "sklearn.preprocessing": sklearn_preprocessing,
    "scipy.stats": scipy_stats,
    "scipy.stats distributions": scipy_distributions,
    "scipy.stats.mstats": scipy_mstats,
    "scipy.signal": scipy_signal,
    "scipy.spatial.distance": scipy_spatial,
    "astropy.stats": astropy_stats,
    "skimage.metrics": skimage_metrics,
    "skimage.exposure": skimage_exposure,
    "skimage.filters": skimage_filters,
    "windows and structured matrices (as_strided)": stride_tricks,
}

ENTRIES: list[Entry] = [e for m in MODULES.values() for e in m.ENTRIES]
BY_NAME: dict[str, Entry] = {e.name: e for e in ENTRIES}
assert len(BY_NAME) == len(ENTRIES), "two entries share a name: give one a label"
