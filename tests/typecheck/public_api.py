"""What the public API's signatures promise, checked by mypy (tests/test_types.py runs
mypy --strict on this file) and run as a program (assert_type is a no-op at run time,
so running it proves the examples work as well as type-check)."""

from __future__ import annotations

import asyncio
from typing import Any, assert_type

import numpy as np
from numpy.typing import NDArray

import vyre_native as vn

WGSL = """
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) { y[gid.x] = 2.0 * x[gid.x]; }
"""


def main() -> None:
    with vn.Device() as dev:
        assert_type(dev, vn.Device)
        assert_type(dev.info, dict[str, str])
        assert_type(dev.limits, dict[str, int])
        assert_type(dev.features, frozenset[str])
        assert_type(vn.enumerate_adapters(), list[dict[str, str]])
        assert_type(vn.library_version(), tuple[str, str])
        prog = assert_type(dev.compile(WGSL, entry_point="main"), vn.Pipeline)
        assert_type(prog.bindings, list[vn.Binding])
        assert_type(prog.immediate_size, int)
        assert_type(prog.label, str)
        x = assert_type(dev.upload(np.arange(64, dtype=np.float32)), vn.Buffer)
        y = assert_type(dev.alloc(256), vn.Buffer)
        with assert_type(dev.alloc(4), vn.Buffer) as scratch:
            assert_type(scratch, vn.Buffer)
        pre = assert_type(prog.prerecord_persistent_dispatch([x], [y]), vn.PrerecordedDispatch)
        assert_type(pre.replay(), int)
        assert_type(pre.read_output(0), bytes)
        assert_type(pre.read_output(0, np.float32), NDArray[Any])
        assert_type(pre.read_output_into(0, bytearray()), int)
        assert_type(pre.read_output(0, np.float32, copy=False), NDArray[Any])
        assert_type(pre.read_output(0, copy=False), memoryview)
        assert_type(pre.read_output_async(0), vn.PendingRead)
        rec = assert_type(prog.record([x], [y]), vn.Recording)
        sub = assert_type(rec.replay(2), vn.Submission)
        assert_type(sub.wait(), None)
        assert_type(sub.done, bool)
        assert_type(rec.read_output(0), bytes)
        assert_type(rec.read_output(0, dtype=np.float32, shape=(64,)), NDArray[Any])
        assert_type(rec.read_output(0, dtype=np.float32, copy=False), NDArray[Any])
        seq = assert_type(dev.sequence(), vn.Sequence)
        seq.add(prog, [x], [y])
        arena = dev.alloc(1024)
        view = assert_type(arena.view(256, 256), vn.BufferView)
        assert_type(view.buffer, vn.Buffer)
        assert_type(view.offset, int)
        assert_type(view.nbytes, int)
        assert_type(view.read(), bytes)
        assert_type(view.read(np.float32), NDArray[Any])
        assert_type(view.read(np.float32, copy=False), NDArray[Any])
        assert_type(view.read_into(bytearray()), int)
        assert_type(view.read_async(), vn.PendingRead)
        assert_type(view.write(np.zeros(4, np.float32)), None)
        named = assert_type(prog.record(bind={"x": x, "y": view}), vn.Recording)
        assert_type(named.outputs, list[vn.Buffer | vn.BufferView])
        assert_type(prog.prerecord_persistent_dispatch(bind={"x": view, "y": y}), vn.PrerecordedDispatch)
        borrowed = prog.prerecord_borrowed_dispatch(bind={"x": np.ones(64, np.float32)}, output_sizes=[256])
        assert_type(borrowed, vn.PrerecordedDispatch)
        args = dev.upload(np.array([1, 1, 1], np.uint32))
        assert_type(prog.record([x], [y], indirect=(args, 0)), vn.Recording)
        assert_type(seq.add(prog, bind={"x": x, "y": y}, indirect=(args.view(0, 12), 0)), vn.Sequence)
        # one name everywhere a dispatch is recorded: outputs kept as they are
        assert_type(prog.record([x], [y], clear_outputs=False), vn.Recording)
        assert_type(prog.prerecord_persistent_dispatch([x], [y], clear_outputs=False), vn.PrerecordedDispatch)
        assert_type(seq.add(prog, [x], [y], clear_outputs=False), vn.Sequence)
        assert_type(seq.copy(view, y.view(0, 256)), vn.Sequence)
        # byte-exact transfers: any offset and size, queued now
        assert_type(dev.copy(arena.view(5, 3), y, nbytes=3, src_offset=0, dst_offset=1), None)
        assert_type(arena.view(5, 3).write(b"abc", offset=0), None)
        assert_type(seq.clear(view), vn.Sequence)
        assert_type(seq.replay(), vn.Submission)
        assert_type(dev.submit([rec, seq]), vn.Submission)
        pending = assert_type(y.read_async(), vn.PendingRead)
        assert_type(pending.done, bool)
        assert_type(pending.result(), bytes)
        assert_type(y.read(), bytes)
        assert_type(y.read(np.uint32), NDArray[Any])
        zero_copy = assert_type(y.read(np.float32, shape=(8, 8), copy=False), NDArray[Any])
        assert isinstance(zero_copy.base, np.ndarray) and isinstance(zero_copy.base.base, vn.MappedStaging)
        assert_type(y.read(copy=False), memoryview)
        flag: bool = False
        assert_type(y.read(copy=flag), bytes | memoryview)
        assert_type(y.read_async().result(np.float32, copy=False), NDArray[Any])
        assert_type(y.read_async().result(copy=False), memoryview)

        async def awaited() -> None:
            assert_type(await rec.replay(), vn.Submission)
            assert_type(await y.read_async(), bytes)

        asyncio.run(awaited())


if __name__ == "__main__":
    main()
