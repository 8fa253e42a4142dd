"""A release on another thread racing a call (tests/test_lifetime.py). argv: the race
(a key of RACES) and the rounds. Each round makes fresh handles, then runs the call on
this thread while another thread releases the victim, each after a random pause: the
release lands before, during or after the call. Reports how many rounds finished and
how many raised ReleasedError."""

from __future__ import annotations

import random
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from support.childlib import report
from support.kernels import DOUBLE

import vyre_native as vn

JITTER_S = 0.001
Handles = dict[str, Any]


def _recording(h: Handles) -> None:
    h["rec"] = h["p"].record([h["a"]], [h["o"]])


def _replayed_recording(h: Handles) -> None:
    _recording(h)
    h["rec"].replay()


def _sequence(h: Handles) -> None:
    h["seq"] = h["dev"].sequence()
    h["seq"].add(h["p"], [h["a"]], [h["o"]])


def _pipeline(h: Handles) -> None:
    h["p"] = h["dev"].compile(DOUBLE)


def _submission(h: Handles) -> None:
    h["sub"] = h["p"].record([h["a"]], [h["o"]]).replay(50)


def _nothing(h: Handles) -> None:
    pass


# race -> (what the round makes besides a, o and p; the handle released; the call)
RACES: dict[str, tuple[Callable[[Handles], None], str, Callable[[Handles], object]]] = {
    "input_during_prerecord": (_nothing, "a", lambda h: h["p"].prerecord_persistent_dispatch([h["a"]], [h["o"]]).replay()),
    "output_during_record": (_nothing, "o", lambda h: h["p"].record([h["a"]], [h["o"]]).replay()),
    "pipeline_during_record": (_pipeline, "p", lambda h: h["p"].record([h["a"]], [h["o"]]).replay()),
    "recording_during_submit_of_256": (_recording, "rec", lambda h: h["dev"].submit([h["rec"]] * 256)),
    "sequence_during_submit": (_sequence, "seq", lambda h: h["dev"].submit([h["seq"]] * 200)),
    "recording_during_replay": (_recording, "rec", lambda h: h["rec"].replay(200)),
    "buffer_during_read": (_nothing, "a", lambda h: h["a"].read()),
    "recording_during_read_output": (_replayed_recording, "rec", lambda h: h["rec"].read_output(0)),
    "submission_during_wait": (_submission, "sub", lambda h: h["sub"].wait()),
}  # fmt: skip


def main(race: str, rounds: int) -> None:
    setup, victim, call = RACES[race]
    dev = vn.Device()
    prog = dev.compile(DOUBLE)
    counts = {"ok": 0, "released": 0}
    for _ in range(rounds):
        h: Handles = {
            "dev": dev,
            "a": dev.upload(np.arange(64, dtype=np.float32)),
            "o": dev.alloc(256),
            "p": prog,
        }
        setup(h)
        start = threading.Barrier(2)

        def release_it(h: Handles = h, start: threading.Barrier = start) -> None:
            start.wait()
            time.sleep(random.random() * JITTER_S)
            h[victim].release()

        thread = threading.Thread(target=release_it)
        thread.start()
        start.wait()
        time.sleep(random.random() * JITTER_S)
        try:
            call(h)
            counts["ok"] += 1
        except vn.ReleasedError:
            counts["released"] += 1
        thread.join()
    dev.wait_idle()
    report(counts)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
