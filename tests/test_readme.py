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


def section(path: str, name: str) -> str:
    """The text between a file's ``--8<-- [start:name]`` and ``--8<-- [end:name]`` lines,
    as pymdownx.snippets (mkdocs.yml) includes it."""
    found = re.search(
        rf"^[^\n]*--8<-- \[start:{name}\][^\n]*\n(.*?)^[^\n]*--8<-- \[end:{name}\]",
        (ROOT / path).read_text(),
        re.DOTALL | re.MULTILINE,
    )
    assert found, f"{path} has no section {name!r}"
    return found.group(1)


def rendered(doc: str) -> str:
    """A page with its ``--8<-- "FILE:section"`` lines replaced by what they include."""
    return re.sub(
        r'^--8<-- "([^":]+):([^"]+)"$',
        lambda m: section(m[1], m[2]),
        (ROOT / doc).read_text(),
        flags=re.MULTILINE,
    )


BLOCKS = [
    (doc, i, block)
    for doc in DOCS
    for i, block in enumerate(re.findall(r"```python\n(.*?)```", rendered(doc), re.DOTALL))
]


@pytest.mark.parametrize("doc", WITH_EXAMPLES)
def test_doc_has_python_examples(doc: str) -> None:
    assert any(d == doc for d, _, _ in BLOCKS)


@pytest.mark.parametrize(("doc", "index", "block"), BLOCKS, ids=[f"{d}-{i}" for d, i, _ in BLOCKS])
def test_doc_example_runs(doc: str, index: int, block: str) -> None:
    exec(compile(block, f"{doc} block {index}", "exec"), {"__name__": "doc_example"})  # noqa: S102 - running the docs is the point


def test_the_pitch_is_written_once() -> None:
    # README.md owns it; docs/index.md includes it; docs/PYPI.md (the PyPI page, one file
    # there) carries a copy, held equal here.
    assert '--8<-- "README.md:pitch"' in (ROOT / "docs/index.md").read_text()
    assert section("docs/PYPI.md", "pitch") == section("README.md", "pitch")


def test_readme_first_screen_and_length() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; at most 300"
    assert any(ln.startswith("```") for ln in lines[:40]), "no code in README.md's first 40 lines"
    text = "\n".join(lines)
    assert "/vyre_native/" in text, "README.md does not name the documentation site's path"
    # CI calls the second; a new user types the first.
    assert "\nbash scripts/demo.sh " in text and "\nbash scripts/test.sh " in text
