"""wgpu-native's log reaches logging.getLogger("vyre_native"), at the level it is enabled for.

Each test runs in a child interpreter: the route is set up when wgpu-native loads, once
per process, at the level the logger has then.
"""

from __future__ import annotations

from support.child import run_logging_child as run_child


def test_wgpu_native_debug_messages_reach_the_logger_when_it_is_enabled_for_debug() -> None:
    records = run_child(
        """
        logging.getLogger("vyre_native").setLevel(logging.DEBUG)
        import vyre_native as vn
        vn.Device().close()
        deadline = time.monotonic() + 10
        while not records and time.monotonic() < deadline:
            time.sleep(0.05)
        """
    )
    assert records, "no wgpu-native message was logged"
    assert any(level == "DEBUG" for level, _ in records)


def test_at_the_default_level_debug_messages_are_not_logged() -> None:
    records = run_child(
        """
        import vyre_native as vn
        vn.Device().close()
        time.sleep(0.5)
        """
    )
    assert not [r for r in records if r[0] in ("DEBUG", "INFO")]


def test_raising_the_loggers_level_later_takes_effect_without_a_restart() -> None:
    records = run_child(
        """
        import vyre_native as vn
        vn.Device().close()
        time.sleep(0.2)
        assert not records
        logging.getLogger("vyre_native").setLevel(logging.DEBUG)
        time.sleep(1.5)  # the forwarding thread re-reads the level at least once a second
        vn.Device().close()
        deadline = time.monotonic() + 10
        while not records and time.monotonic() < deadline:
            time.sleep(0.05)
        """
    )
    assert any(level == "DEBUG" for level, _ in records)
