"""Tests of GPU timing need timestamp queries, which WebGPU makes optional. Every
adapter the suite is run on has them (lavapipe, the H200), so where they are missing
the tests fail, saying so, instead of skipping: a skip would pass quietly on a device
that lost the feature. On an adapter that lacks it, deselect them: -m "not timestamps"."""

from __future__ import annotations

import pytest

import vyre_native as vn


def require_timestamps(device: vn.Device) -> None:
    """Fail the test unless `device` has timestamp queries."""
    if not device.timestamps:
        offered = "offers it" if "timestamp-query" in device.features else "does not offer it"
        pytest.fail(
            f"the device on adapter {device.info['name']!r} has no timestamp queries (the adapter {offered}); "
            'this test times work on the GPU. On an adapter without the feature, deselect: -m "not timestamps"'
        )
