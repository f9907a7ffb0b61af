"""README.md's Python examples run as written (one namespace, in order)."""

from __future__ import annotations

import pathlib
import re
import warnings

import pytest

from batchtensor.foreign import forget
from batchtensor.registry import REGISTRY

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def _blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_examples_run():
    pytest.importorskip("onnx", reason="the README's ONNX example needs the onnx extra")
    pytest.importorskip("onnxruntime", reason="the README's ONNX example needs onnxruntime")
    namespace: dict = {}
    blocks = _blocks()
    assert len(blocks) >= 6
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for block in blocks:
            if "..." in block:  # signatures and skeletons, not runnable code
                continue
            exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102
    bt, bad, xs = namespace["bt"], namespace["bad"], namespace["xs"]
    with pytest.raises(Exception, match="shared by every example"):
        bt.vmap(bad, fallback="error")(xs)
    with pytest.warns(bt.PerformanceWarning, match="reruns once per example"):
        got = bt.vmap(bad)(xs)
    assert (got[:, 0] == xs[:, 0]).all() and (got[:, 1:] == 0).all()


@pytest.mark.parametrize("page", ["running_existing_code.md", "semantics.md", "foreign.md"])
def test_docs_examples_run(page):
    """The Python blocks of a docs page run as written (one namespace, in order)."""
    text = (README.parent / "docs" / page).read_text()
    if "bt.onnx" in text:
        pytest.importorskip("onnx", reason=f"{page}'s ONNX example needs the onnx extra")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    namespace: dict = {}
    before = set(REGISTRY)
    try:
        for block in blocks:
            exec(compile(block, page, "exec"), namespace)  # noqa: S102
    finally:  # a rule the page registers (foreign.md: scipy.signal.medfilt's) goes again, or
        # the docstring example that registers the same one fails after it on this worker
        for op in set(REGISTRY) - before:
            forget(op)
