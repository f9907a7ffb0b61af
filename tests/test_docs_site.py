"""The documentation site (docs/: Sphinx, myst-parser, numpydoc) builds with no warning."""

from __future__ import annotations

import importlib
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_docs_site_builds_without_warnings(tmp_path):
    missing = []
    for module in ("sphinx", "myst_parser", "numpydoc"):
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    if missing:
        pytest.skip(f"the docs build needs {', '.join(missing)} (the test extra): not installed")
    out = tmp_path / "html"
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q", "docs",
         str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, (f"sphinx exited {build.returncode}:\n{build.stdout}\n"
                                   f"{build.stderr}")
    assert (out / "index.html").is_file()
    api = out / "api.html"
    assert api.is_file()
    assert 'id="batchtensor.vmap"' in api.read_text(encoding="utf-8")  # the vmap entry
