"""The rows of csrc/include/'s X-macro tables (status_codes.h, object_kinds.h, usage_bits.h), read
as the tests that hold the compiled module and the Python API to them need them."""

from __future__ import annotations

import pathlib
import re

CSRC = pathlib.Path(__file__).resolve().parent.parent.parent / "csrc" / "include"


def rows(table: str, macro: str) -> list[list[str]]:
    """The arguments of each row of `table` whose macro matches the regex `macro`."""
    text = re.sub(r"/\*.*?\*/", " ", (CSRC / table).read_text(), flags=re.S)
    return [[a.strip() for a in row.split(",")] for row in re.findall(rf"^(?:{macro})\(([^)]*)\)", text, re.M)]
