"""Interop with wgpu-py in one process: shared wgpu-native objects, references kept right."""

from __future__ import annotations

import gc

import numpy as np
import pytest
import wgpu

import vyre_native as vn

TRIPLE = """
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&o)) { o[gid.x] = a[gid.x] * 3.0; }
}
"""
STORAGE_RW = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST


@pytest.fixture(scope="module")
def gpu_device():  # type: ignore[no-untyped-def]
    return wgpu.gpu.request_adapter_sync().request_device_sync()


def test_device_from_wgpu_describes_the_same_adapter(gpu_device) -> None:  # type: ignore[no-untyped-def]
    dev = vn.Device.from_wgpu(gpu_device)
    assert dev.info["backend"] == gpu_device.adapter.info["backend_type"]
    assert dev.limits["max_buffer_size"] == gpu_device.limits["max-buffer-size"]


def test_the_same_wgpu_device_gives_the_same_vn_device(gpu_device) -> None:  # type: ignore[no-untyped-def]
    assert vn.Device.from_wgpu(gpu_device) is vn.Device.from_wgpu(gpu_device)


def test_a_wgpu_buffer_feeds_a_vn_kernel(gpu_device) -> None:  # type: ignore[no-untyped-def]
    x = np.arange(128, dtype=np.float32)
    wb = gpu_device.create_buffer_with_data(data=x, usage=STORAGE_RW)
    dev = vn.Device.from_wgpu(gpu_device)
    a = vn.Buffer.from_wgpu(wb)
    assert a.device is dev and a.byte_len == x.nbytes
    rec = dev.compile(TRIPLE).prerecord_persistent_dispatch([a], [dev.alloc(x.nbytes)], workgroups=(2, 1, 1))
    rec.replay()
    np.testing.assert_array_equal(np.frombuffer(rec.read_output(0), np.float32), 3 * x)


def test_a_vn_buffer_reads_back_through_wgpu_py(gpu_device) -> None:  # type: ignore[no-untyped-def]
    dev = vn.Device.from_wgpu(gpu_device)
    data = np.arange(32, dtype=np.uint32)
    wb = dev.upload(data).to_wgpu()
    assert isinstance(wb, wgpu.GPUBuffer) and wb.size == data.nbytes
    np.testing.assert_array_equal(np.frombuffer(gpu_device.queue.read_buffer(wb), np.uint32), data)


def test_each_side_keeps_the_buffer_alive_after_the_other_lets_go(gpu_device) -> None:  # type: ignore[no-untyped-def]
    dev = vn.Device.from_wgpu(gpu_device)
    data = np.arange(16, dtype=np.float32)
    vb = dev.upload(data)
    wb = vb.to_wgpu()
    vb.release()
    del vb
    gc.collect()
    np.testing.assert_array_equal(np.frombuffer(gpu_device.queue.read_buffer(wb), np.float32), data)

    wb2 = gpu_device.create_buffer_with_data(data=data, usage=STORAGE_RW)
    adopted = vn.Buffer.from_wgpu(wb2)
    wb2._release()  # wgpu-py drops its reference; ours keeps the buffer
    del wb2
    gc.collect()
    np.testing.assert_array_equal(np.frombuffer(adopted.read(), np.float32), data)


def test_adopting_one_wgpu_buffer_again_gives_the_same_native_buffer(gpu_device) -> None:  # type: ignore[no-untyped-def]
    wb = gpu_device.create_buffer(size=64, usage=STORAGE_RW)
    first, second = vn.Buffer.from_wgpu(wb), vn.Buffer.from_wgpu(wb)
    assert first is not second and first.allocation_identity == second.allocation_identity


def test_adopted_buffers_leave_no_native_objects(gpu_device) -> None:  # type: ignore[no-untyped-def]
    dev = vn.Device.from_wgpu(gpu_device)
    gc.collect()
    before = vn.debug.live_objects()["buffers"]
    wb = gpu_device.create_buffer(size=64, usage=STORAGE_RW)
    for _ in range(20):
        vn.Buffer.from_wgpu(wb).release()
        dev.upload(b"abcd" * 4).to_wgpu()
    gc.collect()
    # the adopted buffer's native record lives as long as the wgpu-py buffer it watches
    assert vn.debug.live_objects()["buffers"] == before + 1
    del wb
    gc.collect()
    assert vn.debug.live_objects()["buffers"] == before


def test_from_wgpu_rejects_what_is_not_a_wgpu_object() -> None:
    with pytest.raises(vn.WrongTypeError, match="GPUDevice.*Fix:"):
        vn.Device.from_wgpu(object())
    with pytest.raises(vn.WrongTypeError, match="GPUBuffer.*Fix:"):
        vn.Buffer.from_wgpu("not a buffer")


def test_to_wgpu_needs_a_device_from_wgpu(device: vn.Device) -> None:
    with pytest.raises(vn.WrongTypeError, match="from_wgpu.*Fix:|Fix:.*from_wgpu"):
        device.upload(b"abcd").to_wgpu()


def test_a_wgpu_buffer_of_unaligned_size_is_refused(gpu_device) -> None:  # type: ignore[no-untyped-def]
    wb = gpu_device.create_buffer(size=6, usage=STORAGE_RW)
    with pytest.raises(vn.InvalidArgumentError, match="6 bytes.*Fix:"):
        vn.Buffer.from_wgpu(wb)
