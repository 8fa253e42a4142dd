"""The README's and the documentation site's (docs/, docs/PYPI.md among it) Python
examples run as written, each block in a fresh namespace."""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: every page of the site (mkdocs.yml's docs_dir), and the README
DOCS = ("README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")))
#: the pages that teach by example: each must keep at least one
WITH_EXAMPLES = (
    "README.md",
    "docs/PYPI.md",
    "docs/index.md",
    "docs/guide/devices-and-buffers.md",
    "docs/guide/pipelines.md",
    "docs/guide/recordings.md",
    "docs/guide/interop.md",
    "docs/guide/errors.md",
    "docs/guide/scaling.md",
)
BLOCKS = [
    (doc, i, block)
    for doc in DOCS
    for i, block in enumerate(re.findall(r"```python\n(.*?)```", (ROOT / doc).read_text(), re.DOTALL))
]


@pytest.mark.parametrize("doc", WITH_EXAMPLES)
def test_doc_has_python_examples(doc: str) -> None:
    assert any(d == doc for d, _, _ in BLOCKS)


@pytest.mark.parametrize(("doc", "index", "block"), BLOCKS, ids=[f"{d}-{i}" for d, i, _ in BLOCKS])
def test_doc_example_runs(doc: str, index: int, block: str) -> None:
    exec(compile(block, f"{doc} block {index}", "exec"), {"__name__": "doc_example"})  # noqa: S102 - running the docs is the point
