"""The package type-checks: ``mypy`` with the configuration in pyproject.toml (``[tool.mypy]``:
the public modules strict, the others mypy's default checks) reports no error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_passes():
    pytest.importorskip("mypy", reason="mypy is not installed (it is in the test extra: "
                                       "pip install -e '.[test]')")
    run = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True,
                         text=True)
    assert run.returncode == 0, f"mypy found errors:\n{run.stdout}{run.stderr}"
