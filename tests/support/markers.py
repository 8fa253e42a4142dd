"""pytest markers several test files share."""

from __future__ import annotations

import os

import pytest

#: RSS measures nothing under AddressSanitizer: freed memory sits in its quarantine.
not_under_asan = pytest.mark.skipif(
    "libasan" in os.environ.get("LD_PRELOAD", ""),
    reason="under AddressSanitizer freed memory sits in its quarantine, so RSS measures nothing here",
)
