"""Named bindings: ``bind={"name": buffer}`` instead of inputs / outputs / params.

Every binding the entry point uses is named once; an unknown or missing name is a
BindingError listing the pipeline's bindings; mixing the two forms is a BindingError.
Outputs for ``read_output(i)`` stay the read_write bindings in (group, binding) order,
whatever order the names come in. Kernel results are compared against numpy.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.kernels import ADD_IMMEDIATE, DOUBLE

import vyre_native as vn
from vyre_native._lib import ffi, lib
from vyre_native.reflect.entry import _KIND_CODES

# Two outputs across two groups, a uniform, and a preserved counter.
AFFINE = """
struct Params { scale: f32, shift: f32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<uniform> params: Params;
@group(0) @binding(2) var<storage, read_write> scaled: array<f32>;
@group(1) @binding(0) var<storage, read_write> shifted: array<f32>;
@group(1) @binding(1) var<storage, read_write> runs: array<u32, 4>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&scaled)) {
        scaled[i] = params.scale * x[i];
        shifted[i] = x[i] + params.shift;
    }
    if (i == 0u) { runs[0] = runs[0] + 1u; }
}
"""

N = 64


@pytest.fixture(scope="module")
def affine(device: vn.Device) -> vn.Pipeline:
    return device.compile(AFFINE, preserve=["runs"])


@pytest.fixture()
def x() -> np.ndarray:
    return np.linspace(-2, 2, N, dtype=np.float32)


def affine_bind(device: vn.Device, x: np.ndarray) -> dict[str, vn.Buffer]:
    """Named in reverse (group, binding) order, on purpose."""
    return {
        "runs": device.upload(np.zeros(4, np.uint32)),
        "shifted": device.alloc(4 * N),
        "scaled": device.alloc(4 * N),
        "params": device.upload(np.array([3.0, 0.5], np.float32)),
        "x": device.upload(x),
    }


# ---------------------------------------------------------------- correctness vs numpy


def test_prerecord_by_name_matches_numpy(device: vn.Device, double: vn.Pipeline, x: np.ndarray) -> None:
    rec = double.prerecord_persistent_dispatch(bind={"out": device.alloc(4 * N), "inp": device.upload(x)})
    rec.replay()
    np.testing.assert_array_equal(rec.read_output(0, np.float32), 2 * x)


def test_record_by_name_matches_numpy(device: vn.Device, double: vn.Pipeline, x: np.ndarray) -> None:
    rec = double.record(bind={"inp": device.upload(x), "out": device.alloc(4 * N)})
    rec.replay(2).wait()
    np.testing.assert_array_equal(rec.read_output(0, np.float32), 2 * x)


def test_sequence_add_by_name_matches_numpy(device: vn.Device, double: vn.Pipeline, x: np.ndarray) -> None:
    mid, out = device.alloc(4 * N), device.alloc(4 * N)
    seq = device.sequence()
    seq.add(double, bind={"inp": device.upload(x), "out": mid})
    seq.add(double, bind={"out": out, "inp": mid})
    seq.replay().wait()
    np.testing.assert_array_equal(out.read(np.float32), 4 * x)


def test_borrowed_dispatch_takes_host_buffers_by_name(affine: vn.Pipeline, x: np.ndarray) -> None:
    runs = np.array([5, 0, 0, 0], np.uint32)
    rec = affine.prerecord_borrowed_dispatch(
        bind={"runs": runs, "params": np.array([3.0, 0.5], np.float32), "x": x}, output_sizes=[4 * N, 4 * N]
    )
    rec.replay()
    np.testing.assert_allclose(rec.read_output(0, np.float32), 3 * x)
    np.testing.assert_allclose(rec.read_output(1, np.float32), x + 0.5)
    np.testing.assert_array_equal(rec.read_output(2, np.uint32), [6, 0, 0, 0])


def test_outputs_are_read_write_bindings_in_group_binding_order_whatever_the_name_order(
    device: vn.Device, affine: vn.Pipeline, x: np.ndarray
) -> None:
    rec = affine.record(bind=affine_bind(device, x))
    rec.replay(2).wait()
    np.testing.assert_allclose(rec.read_output(0, np.float32), 3 * x)
    np.testing.assert_allclose(rec.read_output(1, np.float32), x + 0.5)
    np.testing.assert_array_equal(rec.read_output(2, np.uint32), [2, 0, 0, 0])


def test_named_and_positional_forms_bind_the_same(device: vn.Device, affine: vn.Pipeline, x: np.ndarray) -> None:
    b = affine_bind(device, x)
    named = affine.prerecord_persistent_dispatch(bind=b)
    positional = affine.prerecord_persistent_dispatch(
        [b["x"]], [b["scaled"], b["shifted"], b["runs"]], params=b["params"]
    )
    named.replay()
    first = [named.read_output(i) for i in range(3)]
    positional.replay()
    assert [positional.read_output(i) for i in range(2)] == first[:2]
    assert affine.bind_group_cache_stats()["hits"] >= 2  # the same buffers: the same bind groups


def test_a_uniform_is_named_like_any_binding(device: vn.Device, affine: vn.Pipeline, x: np.ndarray) -> None:
    b = affine_bind(device, x)
    b["params"] = device.upload(np.array([-1.0, 0.0], np.float32))
    rec = affine.record(bind=b)
    rec.replay().wait()
    np.testing.assert_allclose(rec.read_output(0, np.float32), -x)


# ---------------------------------------------------------------- Binding.is_output


def test_is_output_is_true_for_every_read_write_binding(affine: vn.Pipeline) -> None:
    got = {b.name: (b.is_output, b.preserve) for b in affine.bindings}
    assert got == {
        "x": (False, False),
        "params": (False, False),
        "scaled": (True, False),
        "shifted": (True, False),
        "runs": (True, True),
    }


def test_a_preserved_binding_takes_an_outputs_handle(device: vn.Device, affine: vn.Pipeline, x: np.ndarray) -> None:
    b = affine_bind(device, x)
    outputs = [b[binding.name] for binding in affine.bindings if binding.is_output]
    rec = affine.record([b["x"]], outputs, params=b["params"])
    assert len(rec.outputs) == 3


# ---------------------------------------------------------------- errors


def test_an_unknown_name_raises_binding_error_listing_the_pipelines_names(
    device: vn.Device, double: vn.Pipeline
) -> None:
    with pytest.raises(vn.BindingError, match=r"`input`.*`inp`.*`out`.*Fix:"):
        double.record(bind={"input": device.alloc(4 * N), "out": device.alloc(4 * N)})


def test_a_missing_name_raises_binding_error_listing_the_pipelines_names(
    device: vn.Device, affine: vn.Pipeline, x: np.ndarray
) -> None:
    b = affine_bind(device, x)
    del b["shifted"], b["params"]
    with pytest.raises(vn.BindingError, match=r"does not name `params`, `shifted`.*`x`.*`runs`.*Fix:"):
        affine.prerecord_persistent_dispatch(bind=b)


def test_an_empty_bind_names_every_binding_missing(double: vn.Pipeline) -> None:
    with pytest.raises(vn.BindingError, match=r"`inp`, `out`.*Fix:"):
        double.record(bind={})


@pytest.mark.parametrize("form", ["inputs", "outputs", "params"])
def test_mixing_bind_with_a_positional_argument_raises_binding_error(
    device: vn.Device, affine: vn.Pipeline, x: np.ndarray, form: str
) -> None:
    b = affine_bind(device, x)
    positional = {"inputs": [b["x"]], "outputs": [b["scaled"]], "params": b["params"]}
    with pytest.raises(vn.BindingError, match=r"bind=.*inputs/outputs/params.*Fix:"):
        affine.record(bind=b, **{form: positional[form]})  # type: ignore[arg-type]


def test_mixing_forms_in_sequence_add_raises_and_adds_nothing(
    device: vn.Device, double: vn.Pipeline, x: np.ndarray
) -> None:
    seq = device.sequence()
    inp, out = device.upload(x), device.alloc(4 * N)
    with pytest.raises(vn.BindingError, match="Fix:"):
        seq.add(double, [inp], bind={"out": out, "inp": inp})
    assert len(seq) == 0


def test_a_borrowed_dispatch_naming_an_allocated_output_raises_binding_error(
    affine: vn.Pipeline, x: np.ndarray
) -> None:
    host = {"x": x, "params": np.ones(2, np.float32), "runs": np.zeros(4, np.uint32), "scaled": x}
    with pytest.raises(vn.BindingError, match=r"`scaled`.*allocates.*Fix:"):
        affine.prerecord_borrowed_dispatch(bind=host, output_sizes=[4 * N, 4 * N])


def test_a_borrowed_dispatch_with_a_missing_name_raises_binding_error(affine: vn.Pipeline, x: np.ndarray) -> None:
    with pytest.raises(vn.BindingError, match=r"does not name `runs`.*Fix:"):
        affine.prerecord_borrowed_dispatch(bind={"x": x, "params": np.ones(2, np.float32)}, output_sizes=[256, 256])


def test_a_borrowed_dispatch_mixing_inputs_and_bind_raises_binding_error(double: vn.Pipeline, x: np.ndarray) -> None:
    with pytest.raises(vn.BindingError, match=r"bind=.*Fix:"):
        double.prerecord_borrowed_dispatch([x], bind={"inp": x}, output_sizes=[4 * N])


def test_a_named_buffer_that_does_not_fit_names_its_binding(device: vn.Device, double: vn.Pipeline) -> None:
    usage = vn.BufferUsage.STORAGE | vn.BufferUsage.COPY_SRC
    with pytest.raises(vn.BindingError, match=r"bind\['out'\].*`out`.*COPY_DST.*Fix:"):
        double.record(bind={"inp": device.alloc(4 * N), "out": device.alloc(4 * N, usage=usage)})


def test_bind_that_is_not_a_mapping_raises_wrong_type_error(device: vn.Device, double: vn.Pipeline) -> None:
    with pytest.raises(vn.WrongTypeError, match="Fix:"):
        double.record(bind=[("inp", device.alloc(4 * N))])  # type: ignore[arg-type]


def test_a_bind_key_that_is_not_a_str_raises_wrong_type_error(device: vn.Device, double: vn.Pipeline) -> None:
    with pytest.raises(vn.WrongTypeError, match="Fix:"):
        double.record(bind={0: device.alloc(4 * N), "out": device.alloc(4 * N)})  # type: ignore[dict-item]


def test_a_bind_value_that_is_not_a_buffer_raises_wrong_type_error(double: vn.Pipeline) -> None:
    with pytest.raises(vn.WrongTypeError, match=r"bind\['inp'\].*Fix:"):
        double.record(bind={"inp": b"bytes", "out": b"bytes"})  # type: ignore[dict-item]


def test_named_bindings_take_immediates_too(device: vn.Device) -> None:
    if "immediates" not in device.features:
        pytest.skip(f"adapter {device.info['name']} has no immediates")
    prog = device.compile(ADD_IMMEDIATE, preserve=["acc"])
    acc = device.upload(np.arange(N, dtype=np.uint32))
    rec = prog.record(immediates=np.uint32(7).tobytes(), bind={"acc": acc})
    rec.replay(2).wait()
    np.testing.assert_array_equal(acc.read(np.uint32), np.arange(N) + 14)


@pytest.mark.parametrize("name", ["गति", "వేగం", "e\u0301lan"], ids=["hindi", "telugu", "decomposed_e_acute"])
def test_a_binding_named_with_combining_marks_binds_by_its_whole_name(device: vn.Device, name: str) -> None:
    # naga compiles these names (XID_Start XID_Continue*); reflection must read them whole.
    prog = device.compile(DOUBLE.replace("inp", name))
    assert [b.name for b in prog.bindings] == [name, "out"]
    data = device.upload(np.arange(N, dtype=np.float32))
    rec = prog.prerecord_persistent_dispatch(bind={name: data, "out": device.alloc(4 * N)})
    rec.replay()
    assert (np.frombuffer(rec.read_output(0), dtype=np.float32) == 2 * np.arange(N)).all()


THREE_KINDS = """
@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read_write> b: array<u32>;
@group(0) @binding(2) var<uniform> c: vec4<u32>;
@compute @workgroup_size(1) fn main() { b[0] = a[0] + c.x; }
"""


def test_binding_kinds_are_cs_one_table(device: vn.Device) -> None:
    """C's table of binding kinds (binding_kinds.c) names every kind; the names a
    pipeline's bindings carry, and Python's table of codes, are those."""
    kinds = range(int(lib.VN_BINDING_KIND_COUNT))
    names = [ffi.string(lib.vn_binding_kind_name(k)).decode() for k in kinds]
    assert names == ["storage_read", "storage_read_write", "uniform"]
    assert [ffi.string(lib.vn_binding_kind_wgsl(k)).decode() for k in kinds] == [
        "var<storage, read>",
        "var<storage, read_write>",
        "var<uniform>",
    ]
    assert lib.vn_binding_kind_name(lib.VN_BINDING_KIND_COUNT) == ffi.NULL
    assert lib.vn_binding_kind_wgsl(lib.VN_BINDING_KIND_COUNT + 7) == ffi.NULL
    assert [b.kind for b in device.compile(THREE_KINDS).bindings] == names
    assert _KIND_CODES == {name: k for k, name in zip(kinds, names)}
