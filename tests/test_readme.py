"""The README's and the package page's (docs/PYPI.md) Python examples run as written,
each block in a fresh namespace."""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ("README.md", "docs/PYPI.md")
BLOCKS = [
    (doc, i, block)
    for doc in DOCS
    for i, block in enumerate(re.findall(r"```python\n(.*?)```", (ROOT / doc).read_text(), re.DOTALL))
]


@pytest.mark.parametrize("doc", DOCS)
def test_doc_has_python_examples(doc: str) -> None:
    assert any(d == doc for d, _, _ in BLOCKS)


@pytest.mark.parametrize(("doc", "index", "block"), BLOCKS, ids=[f"{d}-{i}" for d, i, _ in BLOCKS])
def test_doc_example_runs(doc: str, index: int, block: str) -> None:
    exec(compile(block, f"{doc} block {index}", "exec"), {"__name__": "doc_example"})  # noqa: S102 - running the docs is the point
