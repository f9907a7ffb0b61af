"""Sphinx configuration of batchtensor's documentation site.

From the repository root: ``python -m sphinx -b html -W --keep-going docs OUT``, OUT a folder
outside the repository (tests/test_docs_site.py builds it so, warnings as errors).
"""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # the checkout's package

import batchtensor  # noqa: E402

project = "batchtensor"
author = "the batchtensor developers"
copyright = "2026, the batchtensor developers"
release = version = batchtensor.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "numpydoc"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "build", "**/__pycache__", ".*"]

html_theme = "alabaster"

# links to a section of a page (``semantics.md#randomness``) resolve to its heading
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the signatures show the parameters; the docstrings say what they are
# defaults as the source spells them (``dtype=np.float64``, ``kind=REDUCE``): Sphinx's own
# description of a default fails on an Enum whose __repr__ is str's (registry.StrEnum)
autodoc_preserve_defaults = True

# numpydoc's member tables want an autosummary stub page per method; the members a class shows
# are autodoc's (``:members:`` in api.rst)
numpydoc_show_class_members = False


def _repository_root_images(app, doctree):
    """README.md, which quickstart.md includes, names its images from the repository root."""
    from docutils import nodes

    for image in doctree.findall(nodes.image):
        if image["uri"].startswith("docs/"):
            image["uri"] = image["uri"][len("docs/"):]


def setup(app):
    # before Sphinx's image collector (priority 500) resolves and checks the paths
    app.connect("doctree-read", _repository_root_images, priority=100)
