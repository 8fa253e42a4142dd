"""Values crossing into C: one marshalling step per entry point, and typed errors for
every Python value that has no C value.

Each test states one behaviour. Where a rule concerns many entry points, the test is
parametrized over all of them, so an entry point that skips the marshalling step
fails by name. A case passes when the call raises the package's typed error (a
``vn.VyreError`` that is also the built-in a Python user expects), whose message
names the value and says ``Fix:``; never a raw OverflowError, UnicodeEncodeError,
AttributeError or a crash.
"""

from __future__ import annotations

import copy
import math
import os
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from support.child import run_child
from support.errors import raised, typed
from support.kernels import DOUBLE

import vyre_native as vn
from vyre_native._lib import lib

# ================================================================ helpers


@dataclass
class Kit:
    """One of every object an entry point takes, on the session device."""

    dev: vn.Device
    prog: vn.Pipeline
    a: vn.Buffer  # 64 floats
    o: vn.Buffer  # 256 bytes, an output
    pre: vn.PrerecordedDispatch  # replayed
    rec: vn.Recording  # replayed
    seq: vn.Sequence
    sub: vn.Submission


@pytest.fixture(scope="module")
def kit(device: vn.Device) -> Kit:
    prog = device.compile(DOUBLE)
    a, o = device.upload(np.arange(64, dtype=np.float32)), device.alloc(256)
    pre = prog.prerecord_persistent_dispatch([a], [o])
    pre.replay()
    rec = prog.record([a], [o])
    sub = rec.replay()
    sub.wait()
    seq = device.sequence().add(prog, [a], [o])
    return Kit(device, prog, a, o, pre, rec, seq, sub)


# Entry points that take a uint64_t from an int: (id, call(kit, value)).
U64_CALLS: list[tuple[str, Callable[[Kit, Any], Any]]] = [
    ("alloc_nbytes", lambda k, v: k.dev.alloc(v)),
    ("alloc_usage", lambda k, v: k.dev.alloc(16, usage=v)),
    ("upload_usage", lambda k, v: k.dev.upload(b"1234", usage=v)),
    ("write_offset", lambda k, v: k.a.write(b"1234", offset=v)),
    ("copy_nbytes", lambda k, v: k.dev.sequence().copy(k.a, k.o, nbytes=v)),
    ("copy_src_offset", lambda k, v: k.dev.sequence().copy(k.a, k.o, src_offset=v)),
    ("copy_dst_offset", lambda k, v: k.dev.sequence().copy(k.a, k.o, dst_offset=v)),
    ("indirect_offset", lambda k, v: k.dev.compile(DOUBLE, indirect=("inp", v))),
    ("output_sizes", lambda k, v: k.prog.prerecord_borrowed_dispatch([bytes(256)], output_sizes=[v])),
]
# Entry points that take a uint32_t.
U32_CALLS: list[tuple[str, Callable[[Kit, Any], Any]]] = [
    (
        "prerecord_workgroups",
        lambda k, v: k.prog.prerecord_persistent_dispatch([k.a], [k.o], workgroups=(v, 1, 1)),
    ),
    ("record_workgroups", lambda k, v: k.prog.record([k.a], [k.o], workgroups=(1, v, 1))),
    (
        "sequence_add_workgroups",
        lambda k, v: k.dev.sequence().add(k.prog, [k.a], [k.o], workgroups=(1, 1, v)),
    ),
    (
        "borrowed_workgroups",
        lambda k, v: k.prog.prerecord_borrowed_dispatch([bytes(256)], workgroups=(v, 1, 1)),
    ),
    ("recording_replay_n", lambda k, v: k.rec.replay(v)),
    ("sequence_replay_n", lambda k, v: k.seq.replay(v)),
]
# Entry points that take an int64_t output index.
INDEX_CALLS: list[tuple[str, Callable[[Kit, Any], Any]]] = [
    ("dispatch_read_output", lambda k, v: k.pre.read_output(v)),
    ("dispatch_read_output_into", lambda k, v: k.pre.read_output_into(v, bytearray())),
    ("dispatch_output_byte_len", lambda k, v: k.pre.output_byte_len(v)),
    ("recording_read_output", lambda k, v: k.rec.read_output(v)),
    ("recording_read_output_into", lambda k, v: k.rec.read_output_into(v, bytearray())),
    ("recording_read_output_async", lambda k, v: k.rec.read_output_async(v)),
]
INT_CALLS = U64_CALLS + U32_CALLS + INDEX_CALLS


def _ids(calls: list[tuple[str, Any]]) -> list[str]:
    return [name for name, _ in calls]


def _fns(calls: list[tuple[str, Any]]) -> list[Any]:
    return [fn for _, fn in calls]


# ================================================================ lists and shapes


@pytest.mark.parametrize(
    "call",
    [
        lambda k: k.dev.submit(range(2**64)),
        lambda k: k.prog.prerecord_borrowed_dispatch(range(2**64)),
        lambda k: vn.worker.Worker().run("k", range(2**64), [], (1, 1, 1)),
    ],
    ids=["submit", "borrowed_inputs", "worker_inputs"],
)
def test_a_list_whose_length_overflows_len_is_refused_naming_the_bound(kit: Kit, call: Any) -> None:
    # len(range(2**64)) raised a raw OverflowError
    typed(lambda: call(kit), vn.InvalidArgumentError, "more than 9223372036854775807 items")


@pytest.mark.parametrize(
    "shape, dims",
    [(np.array(64), (64,)), (np.int64(64), (64,)), (np.array([8, 8]), (8, 8)), (range(64, 65), (64,)), ([2, 32], (2, 32))],
    ids=["0d_array", "numpy_int", "1d_array", "range", "list"],
)
@pytest.mark.parametrize("copy", [True, False])
def test_a_shape_numpy_takes_is_taken(kit: Kit, shape: Any, dims: tuple[int, ...], copy: bool) -> None:
    # a 0-d array raised a raw TypeError (iteration over a 0-d array)
    assert kit.o.read("u4", shape=shape, copy=copy).shape == dims  # 256 bytes: 64 words


@pytest.mark.parametrize(
    "shape", [b"@", {64: "x"}, "64", iter([64]), np.zeros((8, 8), int)], ids=["bytes", "dict", "str", "iterator", "2d"]
)
def test_what_numpy_takes_as_no_shape_is_refused(kit: Kit, shape: Any) -> None:
    # bytes and a dict were taken as (64,); an iterator was walked (itertools.count() never ended)
    typed(lambda: kit.a.read("u4", shape=shape), vn.WrongTypeError, "not a shape")
    typed(lambda: vn.worker.Worker().run("k", [], [("u4", shape)], (1, 1, 1)), vn.WrongTypeError, "not a shape")


@pytest.mark.parametrize("shape", [range(10**12), range(2**64)], ids=["1e12", "2_64"])
def test_a_shape_of_more_dimensions_than_numpy_has_is_refused_before_it_is_walked(kit: Kit, shape: Any) -> None:
    # range(10**12) was walked into a tuple: a raw MemoryError
    typed(lambda: kit.a.read("u4", shape=shape), vn.InvalidArgumentError, "dimensions, above the")


# ================================================================ integers


@pytest.mark.parametrize("call", _fns(U64_CALLS), ids=_ids(U64_CALLS))
def test_an_int_past_64_bits_is_a_typed_value_error_naming_it(kit: Kit, call: Any) -> None:
    typed(lambda: call(kit, 2**64), vn.InvalidArgumentError, 2**64, "uint64_t")


@pytest.mark.parametrize("call", _fns(U32_CALLS), ids=_ids(U32_CALLS))
def test_an_int_past_32_bits_is_a_typed_value_error_naming_it(kit: Kit, call: Any) -> None:
    typed(lambda: call(kit, 2**32), vn.InvalidArgumentError, 2**32, "uint32_t")


@pytest.mark.parametrize("call", _fns(INDEX_CALLS), ids=_ids(INDEX_CALLS))
def test_an_index_past_64_bits_is_a_typed_value_error_naming_it(kit: Kit, call: Any) -> None:
    typed(lambda: call(kit, 2**63), vn.InvalidArgumentError, 2**63, "int64_t")


@pytest.mark.parametrize("call", _fns(U64_CALLS + U32_CALLS), ids=_ids(U64_CALLS + U32_CALLS))
def test_a_negative_int_is_a_typed_value_error_naming_it(kit: Kit, call: Any) -> None:
    typed(lambda: call(kit, -1), vn.InvalidArgumentError, "=-1", "negative")


@pytest.mark.parametrize("call", _fns(INT_CALLS), ids=_ids(INT_CALLS))
@pytest.mark.parametrize("sign", [1, -1], ids=["positive", "negative"])
def test_an_int_of_more_than_4300_digits_is_refused_naming_its_size(kit: Kit, call: Any, sign: int) -> None:
    # the refusal's own f-string raised ValueError: Exceeds the limit (4300 digits) for integer string conversion
    typed(lambda: call(kit, sign * 10**5000), vn.InvalidArgumentError, "int of 16610 bits")


def test_an_override_or_a_handle_argument_of_more_than_4300_digits_is_refused_naming_its_size(kit: Kit) -> None:
    typed(lambda: kit.dev.compile(DOUBLE, constants={"k": 10**5000}), vn.InvalidArgumentError, "int of 16610 bits")
    typed(lambda: vn.Buffer(10**5000), vn.WrongTypeError, "int of 16610 bits")


@pytest.mark.parametrize("call", _fns(INT_CALLS), ids=_ids(INT_CALLS))
@pytest.mark.parametrize("flag", [True, np.True_], ids=["bool", "numpy_bool"])
def test_a_bool_is_refused_where_an_int_is_meant(kit: Kit, call: Any, flag: Any) -> None:
    typed(lambda: call(kit, flag), vn.WrongTypeError, "True", "bool")


@pytest.mark.parametrize("call", _fns(INT_CALLS), ids=_ids(INT_CALLS))
def test_a_float_is_refused_where_an_int_is_meant(kit: Kit, call: Any) -> None:
    typed(lambda: call(kit, 4.0), vn.WrongTypeError, "4.0", "float")


@pytest.mark.parametrize(
    "call",
    [
        lambda k: k.dev.alloc(np.int64(16)),
        lambda k: k.dev.alloc(16, usage=np.uint64(vn.BufferUsage.DEFAULT)),
        lambda k: k.a.write(b"1234", offset=np.uint32(4)),
        lambda k: k.dev.sequence().copy(k.a, k.o, nbytes=np.uint64(16), dst_offset=np.int32(4)),
        lambda k: k.prog.record([k.a], [k.o], workgroups=(np.int32(1), np.uint8(1), np.int64(1))),
        lambda k: k.rec.replay(np.int64(2)).wait(),
        lambda k: k.pre.read_output(np.int64(0)),
        lambda k: k.rec.read_output_into(np.uint16(0), bytearray()),
        lambda k: k.prog.prerecord_borrowed_dispatch([bytes(256)], output_sizes=[np.int64(256)]),
        lambda k: k.dev.compile(DOUBLE, indirect=("inp", np.int64(0))),
    ],
    ids=[
        "alloc",
        "usage",
        "write_offset",
        "copy",
        "workgroups",
        "replay_n",
        "read_output",
        "read_output_into",
        "output_sizes",
        "indirect_offset",
    ],
)
def test_numpy_integer_scalars_are_accepted_as_ints(kit: Kit, call: Any) -> None:
    call(kit)


# ================================================================ wrong types


@pytest.mark.parametrize(
    "call",
    [
        lambda k: k.prog.prerecord_persistent_dispatch(None, [k.o]),
        lambda k: k.prog.record([k.a], None),
        lambda k: k.dev.sequence().add(k.prog, None, [k.o]),
        lambda k: k.prog.prerecord_borrowed_dispatch(None),
        lambda k: k.prog.prerecord_borrowed_dispatch([bytes(256)], output_sizes=5),
        lambda k: k.dev.submit(None),
        lambda k: k.dev.compile(DOUBLE, preserve=None),
        lambda k: k.prog.record([k.a], [k.o], workgroups=None),
    ],
    ids=[
        "prerecord_inputs",
        "record_outputs",
        "sequence_add_inputs",
        "borrowed_inputs",
        "borrowed_output_sizes",
        "submit",
        "preserve",
        "workgroups",
    ],
)
def test_a_non_list_where_a_list_is_expected_is_a_typed_error(kit: Kit, call: Any) -> None:
    typed(lambda: call(kit), vn.WrongTypeError)


def test_a_single_name_where_a_list_of_names_is_expected_is_a_typed_error(device: vn.Device) -> None:
    typed(lambda: device.compile(DOUBLE, preserve="out"), vn.WrongTypeError, "['out']")


def test_preserve_takes_names_from_any_iterable(device: vn.Device) -> None:
    for names in (["out"], ("out",), {"out"}, (n for n in ["out"])):
        assert [b.preserve for b in device.compile(DOUBLE, preserve=names).bindings] == [False, True]


@pytest.mark.parametrize(
    "call",
    [
        lambda k: k.prog.prerecord_persistent_dispatch([k.a, "x"], [k.o]),
        lambda k: k.prog.record([k.a], [k.o, 3]),
        lambda k: k.dev.sequence().add(k.prog, [k.a, None], [k.o]),
        lambda k: k.dev.submit([k.rec, "x"]),
        lambda k: k.prog.prerecord_borrowed_dispatch([bytes(256), object()]),
    ],
    ids=["prerecord_inputs", "record_outputs", "sequence_add_inputs", "submit", "borrowed_inputs"],
)
def test_a_wrong_item_in_a_list_names_its_index(kit: Kit, call: Any) -> None:
    typed(lambda: call(kit), vn.WrongTypeError, "[1]")


@pytest.mark.parametrize(
    "call",
    [
        lambda k: k.prog.record([k.a], [k.o], params=b"1234"),
        lambda k: k.dev.sequence().add("main", [k.a], [k.o]),
        lambda k: k.dev.sequence().copy(k.a, bytearray(4)),
        lambda k: k.dev.sequence().clear("buf"),
    ],
    ids=["params", "sequence_add_pipeline", "copy_dst", "clear"],
)
def test_a_wrong_handle_type_is_a_typed_error(kit: Kit, call: Any) -> None:
    typed(lambda: call(kit), vn.WrongTypeError, "not a vn.")


FLAG_CALLS: list[tuple[str, Callable[[Kit, Any], Any]]] = [
    ("recording_replay_timing", lambda k, v: k.rec.replay(timing=v)),
    ("sequence_replay_timing", lambda k, v: k.seq.replay(timing=v)),
    ("submit_timing", lambda k, v: k.dev.submit([k.rec], timing=v)),
    ("clear_outputs", lambda k, v: k.dev.sequence().add(k.prog, [k.a], [k.o], clear_outputs=v)),
]


@pytest.mark.parametrize("call", _fns(FLAG_CALLS), ids=_ids(FLAG_CALLS))
def test_an_array_as_a_flag_is_a_typed_error(kit: Kit, call: Any) -> None:
    typed(lambda: call(kit, np.array([1, 0])), vn.WrongTypeError, "ndarray")


@pytest.mark.parametrize("call", _fns(FLAG_CALLS), ids=_ids(FLAG_CALLS))
def test_an_int_as_a_flag_is_a_typed_error(kit: Kit, call: Any) -> None:
    typed(lambda: call(kit, 1), vn.WrongTypeError, "int")


def test_a_numpy_bool_is_accepted_as_a_flag(kit: Kit) -> None:
    kit.rec.replay(timing=np.False_).wait()
    kit.dev.sequence().add(kit.prog, [kit.a], [kit.o], clear_outputs=np.True_)


@pytest.mark.parametrize("call", _fns(FLAG_CALLS[:3]), ids=_ids(FLAG_CALLS[:3]))
def test_an_unknown_timing_mode_is_a_typed_value_error(kit: Kit, call: Any) -> None:
    typed(lambda: call(kit, "each"), vn.InvalidArgumentError, "'each'", "'dispatch'")


@pytest.mark.parametrize("value", [[], 1, b"low-power"], ids=["list", "int", "bytes"])
def test_a_power_preference_of_the_wrong_type_is_a_typed_error(value: Any) -> None:
    typed(lambda: vn.Device(power_preference=value), vn.WrongTypeError, "power_preference", "'low-power'")


@pytest.mark.parametrize(
    ("adapter", "cls"),
    [(1.5, vn.WrongTypeError), (-1, vn.InvalidArgumentError), (2**40, vn.InvalidArgumentError)],
    ids=["float", "negative", "past_32_bits"],
)
def test_an_adapter_that_is_no_index_is_a_typed_error(adapter: Any, cls: type[vn.VyreError]) -> None:
    typed(lambda: vn.Device(adapter=adapter), cls, "adapter")


@pytest.mark.parametrize(
    ("constants", "cls", "named"),
    [
        ({"k": "abc"}, vn.WrongTypeError, "constants['k']"),
        ({"k": None}, vn.WrongTypeError, "constants['k']"),
        ({1: 2.0}, vn.WrongTypeError, "constants key"),
        ([("k", 1.0)], vn.WrongTypeError, "mapping"),
        ({"k": math.nan}, vn.InvalidArgumentError, "nan"),
        ({"k": math.inf}, vn.InvalidArgumentError, "inf"),
        ({"k": 2**1100}, vn.InvalidArgumentError, "double"),
    ],
    ids=["str_value", "none_value", "int_key", "list", "nan", "inf", "huge_int"],
)
def test_constants_that_are_no_finite_numbers_are_typed_errors(
    device: vn.Device, constants: Any, cls: type[vn.VyreError], named: str
) -> None:
    typed(lambda: device.compile(DOUBLE, constants=constants), cls, named)


def test_numpy_scalars_are_accepted_as_constants(device: vn.Device) -> None:
    src = "override k: f32 = 1.0;\noverride n: u32 = 1u;\n" + DOUBLE.replace("* 2.0", "* k")
    prog = device.compile(src, constants={"k": np.float32(3.0), "n": np.int64(2)})
    a = device.upload(np.ones(64, np.float32))
    rec = prog.prerecord_persistent_dispatch([a], [device.alloc(256)])
    rec.replay()
    assert np.frombuffer(rec.read_output(0), np.float32)[0] == 3.0


@pytest.mark.parametrize(
    ("timeout", "cls"),
    [
        ("1", vn.WrongTypeError),
        (True, vn.WrongTypeError),
        (math.nan, vn.InvalidArgumentError),
        (-1, vn.InvalidArgumentError),
    ],
    ids=["str", "bool", "nan", "negative"],
)
def test_a_wait_timeout_that_is_no_time_is_a_typed_error(
    kit: Kit, timeout: Any, cls: type[vn.VyreError]
) -> None:
    typed(lambda: kit.sub.wait(timeout), cls, "timeout")


def test_a_numpy_float_is_accepted_as_a_wait_timeout(kit: Kit) -> None:
    kit.sub.wait(np.float64(5.0))


# ================================================================ text

LONE = "\ud800"


@pytest.mark.parametrize(
    "call",
    [
        lambda d: d.compile(DOUBLE + "// " + LONE + "\n"),
        lambda d: d.compile(DOUBLE, entry_point="ma" + LONE),
        lambda d: d.compile(DOUBLE, preserve=["o" + LONE]),
        lambda d: d.compile(DOUBLE, constants={"k" + LONE: 1.0}),
        lambda d: d.compile(DOUBLE, indirect=("a" + LONE, 0)),
        lambda d: vn.Device(backend="vulkan" + LONE),
        lambda d: vn.enumerate_adapters(backend="vulkan" + LONE),
    ],
    ids=["wgsl", "entry_point", "preserve", "constants_key", "indirect_name", "backend", "enumerate_backend"],
)
def test_text_with_a_lone_surrogate_is_a_typed_value_error(device: vn.Device, call: Any) -> None:
    typed(lambda: call(device), vn.InvalidArgumentError, "surrogate", "'\\ud800'")


NUL = "\0"


@pytest.mark.parametrize(
    "call",
    [
        lambda k: k.dev.compile(DOUBLE, entry_point="main" + NUL + "junk"),
        lambda k: k.dev.compile(DOUBLE, preserve=["out" + NUL + "junk"]),
        lambda k: k.dev.compile(DOUBLE, constants={"k" + NUL + "junk": 1.0}),
        lambda k: k.dev.compile(DOUBLE, indirect=("inp" + NUL + "junk", 0)),
        lambda k: vn.Device(backend="vulkan" + NUL + "gl"),
        lambda k: vn.enumerate_adapters(backend="vulkan" + NUL + "gl"),
        lambda k: vn.Device(required_features=["shader-f16" + NUL + "ray-query"]),
        lambda k: k.prog.prerecord_persistent_dispatch(bind={"inp" + NUL + "junk": k.a, "out": k.o}),
        lambda k: k.prog.record(bind={"inp": k.a, "out" + NUL + "junk": k.o}),
        lambda k: k.dev.sequence().add(k.prog, bind={"inp" + NUL + "junk": k.a, "out": k.o}),
        lambda k: k.prog.prerecord_borrowed_dispatch(
            bind={"inp" + NUL + "junk": bytes(256)}, output_sizes=[256]
        ),
    ],
    ids=[
        "entry_point",
        "preserve",
        "constants_key",
        "indirect_name",
        "backend",
        "enumerate_backend",
        "required_features",
        "prerecord_bind_key",
        "record_bind_key",
        "sequence_bind_key",
        "borrowed_bind_key",
    ],
)
def test_text_with_an_embedded_nul_is_a_typed_value_error_naming_the_argument(kit: Kit, call: Any) -> None:
    # C reads a string up to its first NUL: passed on, "shader-f16\0ray-query" would ask for
    # shader-f16 alone, and bind={"x\0junk": b} would bind x.
    msg = typed(lambda: call(kit), vn.InvalidArgumentError, "NUL character at position")
    assert "=" in msg.split(" holds ")[0], msg  # "<argument>=<value> holds ..."


def test_wgsl_may_hold_a_nul_in_a_comment_as_wgsl_allows(kit: Kit) -> None:
    # WGSL goes to C with its length, so nothing cuts it; a comment may hold any code point.
    prog = kit.dev.compile(DOUBLE + "// " + NUL + " a NUL in a comment\n")
    assert [b.name for b in prog.bindings] == ["inp", "out"]


def test_a_library_path_with_an_embedded_nul_is_a_typed_value_error() -> None:
    from vyre_native._marshal import to_path

    path = "/opt/lib" + NUL + "wgpu.so"
    typed(lambda: to_path(path, "WGPU_LIB_PATH"), vn.InvalidArgumentError, "WGPU_LIB_PATH", "position 8")


def test_wgsl_with_a_lone_surrogate_names_its_line_and_column(device: vn.Device) -> None:
    src = "// one\n// tw" + LONE + "o\n" + DOUBLE
    typed(lambda: device.compile(src), vn.InvalidArgumentError, "line 2, column 6")


def test_wgsl_that_is_not_text_is_a_typed_error(device: vn.Device) -> None:
    typed(lambda: device.compile(DOUBLE.encode()), vn.WrongTypeError, "bytes", "str")


def test_a_wgpu_lib_path_that_is_not_utf8_is_loaded_as_its_bytes() -> None:
    # Not UTF-8, so not text: the path goes to dlopen as the file system's bytes, and a
    # missing file is the LibraryError of any missing file, not an UnicodeEncodeError.
    res = run_child(
        "report(outcome(vn.Device))",
        env={"WGPU_LIB_PATH": os.fsdecode(b"/nonexistent/lib\xffwgpu.so")},
    )
    raised(res, vn.LibraryError, "/nonexistent/lib")


# ================================================================ host memory

OBJECTS = np.array([1.0, None, "x", 2], dtype=object)
OBJECT_FIELDS = np.zeros(4, dtype=[("x", "<f4"), ("o", "O")])


@pytest.mark.parametrize("data", [OBJECTS, OBJECT_FIELDS], ids=["object_array", "object_field"])
@pytest.mark.parametrize(
    "call",
    [
        lambda k, x: k.dev.upload(x),
        lambda k, x: k.a.write(x),
        lambda k, x: k.prog.prerecord_borrowed_dispatch([x], output_sizes=[256]),
    ],
    ids=["upload", "write", "borrowed_input"],
)
def test_a_buffer_of_python_objects_is_refused_as_data(kit: Kit, call: Any, data: np.ndarray) -> None:
    typed(
        lambda: call(kit, data),
        vn.WrongTypeError,
        "Python objects",
        "format 'T{" if data.dtype.names else "format 'O'",
    )


# Entry points that read into caller memory: (id, call(kit, destination)).
READ_INTO_CALLS: list[tuple[str, Callable[[Kit, Any], Any]]] = [
    ("read_into", lambda k, x: k.a.read_into(x)),
    ("dispatch_read_output_into", lambda k, x: k.pre.read_output_into(0, x)),
    ("recording_read_output_into", lambda k, x: k.rec.read_output_into(0, x)),
    ("result_into", lambda k, x: k.a.read_async().result_into(x)),
]


@pytest.mark.parametrize("data", ["object_array", "object_field"])
@pytest.mark.parametrize("call", _fns(READ_INTO_CALLS), ids=_ids(READ_INTO_CALLS))
def test_reading_into_python_objects_is_refused_and_leaves_them_intact(
    kit: Kit, call: Any, data: str
) -> None:
    # 64 object slots: as large as any destination here, so only the format refuses it.
    dest = np.array([f"s{i}" for i in range(64)], dtype=object)
    if data == "object_field":
        dest = np.zeros(64, dtype=[("x", "<f8"), ("o", "O")])
        dest["o"] = [f"s{i}" for i in range(64)]
    before = [str(x) for x in dest.ravel()]
    typed(lambda: call(kit, dest), vn.WrongTypeError, "Python objects")
    assert [str(x) for x in dest.ravel()] == before


def test_plain_structured_data_is_accepted_even_with_an_o_in_a_field_name(kit: Kit) -> None:
    data = np.zeros(16, dtype=[("Origin", "<f4"), ("Offset", "<u4")])
    data["Origin"] = 1.5
    assert kit.dev.upload(data).read() == data.tobytes()


@pytest.mark.parametrize("call", _fns(READ_INTO_CALLS), ids=_ids(READ_INTO_CALLS))
def test_a_bytearray_with_a_live_export_is_refused_when_it_must_resize(kit: Kit, call: Any) -> None:
    dest = bytearray(10)
    view = memoryview(dest)
    typed(lambda: call(kit, dest), vn.InvalidArgumentError, "10 bytes", "256 bytes", "live export")
    assert len(dest) == 10
    view.release()
    assert call(kit, dest) == 256 and len(dest) == 256


def test_a_bytearray_with_a_live_export_is_filled_when_it_has_the_right_size(kit: Kit) -> None:
    dest = bytearray(256)
    view = np.frombuffer(dest, np.float32)
    kit.dev.upload(np.arange(64, dtype=np.float32)).read_into(dest)
    np.testing.assert_array_equal(view, np.arange(64, dtype=np.float32))


# ================================================================ handles

HANDLES: list[tuple[str, Callable[[Kit], Any]]] = [
    ("Device", lambda k: k.dev),
    ("Buffer", lambda k: k.a),
    ("Pipeline", lambda k: k.prog),
    ("PrerecordedDispatch", lambda k: k.pre),
    ("Recording", lambda k: k.rec),
    ("Sequence", lambda k: k.seq),
    ("Submission", lambda k: k.sub),
    ("PendingRead", lambda k: k.a.read_async()),
]


@pytest.mark.parametrize("make", _fns(HANDLES), ids=_ids(HANDLES))
@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_a_handle_refuses_to_be_pickled_saying_why(kit: Kit, make: Any, protocol: int) -> None:
    handle = make(kit)
    msg = typed(
        lambda: pickle.dumps(handle, protocol=protocol), vn.NotPicklableError, "cannot be pickled", "Fix:",
        "one vn.Device per worker", repr(handle),
    )
    assert f"vn.{type(handle).__name__}" in msg


# Not handles, but over one: a view of a buffer, the mapped memory under a copy=False read
OVER_HANDLES: list[tuple[str, Callable[[Kit], Any]]] = [
    ("BufferView", lambda k: k.a.view(0, 16)),
    ("MappedStaging", lambda k: k.a.read(np.float32, copy=False).base.base),
]


@pytest.mark.parametrize("make", _fns(HANDLES + OVER_HANDLES), ids=_ids(HANDLES + OVER_HANDLES))
@pytest.mark.parametrize("how", ["pickle", "__reduce__", "__reduce_ex__"])
def test_every_way_to_pickle_a_handle_is_refused_saying_why(kit: Kit, make: Any, how: str) -> None:
    # pickle calls __reduce_ex__; some serialisers call __reduce__ itself, which was an
    # untyped TypeError ("a class that defines __slots__ ...") for a view or mapped memory
    obj = make(kit)
    calls = {
        "pickle": lambda: pickle.dumps(obj),
        "__reduce__": obj.__reduce__,
        "__reduce_ex__": lambda: obj.__reduce_ex__(2),
    }
    typed(calls[how], vn.NotPicklableError, "cannot be pickled", "Fix:", f"vn.{type(obj).__name__}")


@pytest.mark.parametrize("make", _fns(HANDLES), ids=_ids(HANDLES))
@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy], ids=["copy", "deepcopy"])
def test_a_handle_refuses_to_be_copied_saying_why(kit: Kit, make: Any, how: Any) -> None:
    handle = make(kit)
    typed(lambda: how(handle), vn.WrongTypeError, "cannot be copied", f"vn.{type(handle).__name__}")


def test_a_list_of_handles_refuses_to_be_deep_copied(kit: Kit) -> None:
    typed(lambda: copy.deepcopy([kit.a, kit.o]), vn.WrongTypeError, "vn.Buffer")


@pytest.mark.parametrize(
    ("cls", "args"),
    [
        (vn.Buffer, (5,)),
        (vn.Buffer, ()),
        (vn.Pipeline, ("@compute fn main() {}",)),
        (vn.PrerecordedDispatch, ([],)),
        (vn.Recording, (None,)),
        (vn.Sequence, (None, None)),
        (vn.Submission, (1,)),
        (vn.PendingRead, (object(),)),
    ],
    ids=[
        "Buffer",
        "Buffer_no_args",
        "Pipeline",
        "PrerecordedDispatch",
        "Recording",
        "Sequence",
        "Submission",
        "PendingRead",
    ],
)
def test_a_handle_class_called_directly_is_a_typed_error_saying_what_makes_one(
    cls: type, args: tuple
) -> None:
    typed(lambda: cls(*args), vn.WrongTypeError, f"vn.{cls.__name__}(", "not made by calling the class")


def test_a_released_handle_in_a_list_names_its_index(kit: Kit) -> None:
    gone = kit.dev.alloc(256)
    gone.release()
    typed(lambda: kit.prog.record([kit.a], [gone]), vn.ReleasedError, "outputs[0]")


# ================================================================ one owner: C's checks, C's messages


@pytest.mark.parametrize("call", _fns(INDEX_CALLS), ids=_ids(INDEX_CALLS))
@pytest.mark.parametrize("index", [1, -1])
def test_an_output_index_out_of_range_is_c_s_output_index_error(kit: Kit, call: Any, index: int) -> None:
    msg = typed(lambda: call(kit, index), vn.OutputIndexError, f"output index {index}", "1 output(s)")
    assert "Fix: pass an index from 0 to 0" in msg
    with pytest.raises(IndexError):
        call(kit, index)


@pytest.mark.parametrize("call", _fns(U32_CALLS[-2:]), ids=_ids(U32_CALLS[-2:]))
def test_a_launch_count_of_zero_is_c_s_value_error(kit: Kit, call: Any) -> None:
    typed(lambda: call(kit, 0), vn.InvalidArgumentError, "n=0", "nothing to launch")


def test_a_usage_that_is_no_set_of_flags_is_c_s_value_error(device: vn.Device) -> None:
    typed(lambda: device.alloc(16, usage=0x400), vn.InvalidArgumentError, "0x400", "WGPUBufferUsage")


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda p: p.prerecord_borrowed_dispatch([], output_sizes=[256]), "0 host buffer(s)"),
        (lambda p: p.prerecord_borrowed_dispatch([bytes(256)] * 2, output_sizes=[256]), "2 host buffer(s)"),
        (lambda p: p.prerecord_borrowed_dispatch([bytes(256)], output_sizes=[]), "output_sizes has 0"),
        (lambda p: p.prerecord_borrowed_dispatch([bytes(256)]), "runtime-sized"),
    ],
    ids=["too_few_host_buffers", "too_many_host_buffers", "too_few_sizes", "size_not_inferable"],
)
def test_a_borrowed_dispatch_that_does_not_fit_the_bindings_is_c_s_binding_error(
    kit: Kit, call: Any, named: str
) -> None:
    msg = typed(lambda: call(kit.prog), vn.BindingError, named)
    assert "`inp`" in msg or "`out`" in msg


def test_a_borrowed_dispatch_made_in_c_holds_no_python_buffers(kit: Kit) -> None:
    before = vn.debug.live_objects()["buffers"]
    rec = kit.prog.prerecord_borrowed_dispatch([np.arange(64, dtype=np.float32)], output_sizes=[256])
    assert vn.debug.live_objects()["buffers"] == before + 2  # held by the dispatch
    rec.replay()
    np.testing.assert_array_equal(np.frombuffer(rec.read_output(0), np.float32), np.arange(64) * 2)
    del rec
    assert vn.debug.live_objects()["buffers"] == before


# ================================================================ values at the edge of numpy and Python
#
# One rule: an array of fixed-size items that hold no Python objects is plain bytes, on
# every path (upload, write, read_into, read with a dtype, copy=True or copy=False);
# what numpy or Python cannot represent at all is a typed error with a Fix.

DATETIMES = np.array([0, 1, 2**40, -5], dtype="M8[s]")


@pytest.mark.parametrize("dtype", ["M8[s]", "m8[ns]"], ids=["datetime64", "timedelta64"])
def test_a_datetime_array_uploads_and_reads_back_as_its_bytes(kit: Kit, dtype: str) -> None:
    data = DATETIMES.astype(dtype) if dtype.startswith("M") else DATETIMES.view("i8").astype(dtype)
    buf = kit.dev.upload(data)
    assert buf.read() == data.tobytes()


def test_a_datetime_array_is_written_as_its_bytes(kit: Kit) -> None:
    buf = kit.dev.alloc(DATETIMES.nbytes)
    buf.write(DATETIMES)
    assert buf.read() == DATETIMES.tobytes()


def test_a_datetime_array_is_read_into_as_its_bytes(kit: Kit) -> None:
    buf = kit.dev.upload(DATETIMES)
    dest = np.zeros_like(DATETIMES)
    assert buf.read_into(dest) == DATETIMES.nbytes
    assert (dest == DATETIMES).all()


@pytest.mark.parametrize("copy", [True, False])
def test_a_datetime_dtype_reads_the_same_array_with_and_without_a_copy(kit: Kit, copy: bool) -> None:
    out = kit.dev.upload(DATETIMES).read("M8[s]", copy=copy)
    assert out.dtype == DATETIMES.dtype and (out == DATETIMES).all()


def test_a_structure_with_a_datetime_field_uploads_as_its_bytes(kit: Kit) -> None:
    data = np.zeros(4, dtype=[("t", "M8[ms]"), ("x", "<f8")])
    data["x"] = 2.5
    assert kit.dev.upload(data).read() == data.tobytes()


def test_a_subarray_dtype_reads_as_its_items_with_and_without_a_copy(kit: Kit) -> None:
    buf = kit.dev.upload(np.arange(64, dtype=np.float32))
    item = np.dtype(("<f4", (4,)))  # 64 floats: 16 items of 4 floats
    copied, mapped = buf.read(item), buf.read(item, copy=False)
    assert copied.shape == mapped.shape == (16, 4) and copied.dtype == mapped.dtype == np.float32
    assert (copied == mapped).all()


def test_a_closed_mmap_is_a_typed_value_error(kit: Kit) -> None:
    import mmap

    region = mmap.mmap(-1, 16)
    region.close()
    typed(lambda: kit.dev.upload(region), vn.InvalidArgumentError, "mmap", "closed")


@pytest.mark.parametrize("copy", [True, False])
def test_an_empty_read_of_a_shape_numpy_cannot_make_is_a_typed_value_error(kit: Kit, copy: bool) -> None:
    empty = kit.dev.alloc(0)
    shape = (0, 2**63 - 1)  # no bytes, but numpy refuses it: 4 * (2**63 - 1) passes its intp
    typed(lambda: empty.read("f4", shape=shape, copy=copy), vn.InvalidArgumentError, "9223372036854775807")


@pytest.mark.parametrize("copy", [True, False])
def test_a_read_of_more_dimensions_than_numpy_has_is_a_typed_value_error(kit: Kit, copy: bool) -> None:
    empty = kit.dev.alloc(0)
    shape = (0,) + (1,) * 64
    typed(lambda: empty.read("f4", shape=shape, copy=copy), vn.InvalidArgumentError, "65 dimensions")


def test_a_wait_timeout_past_a_double_waits_without_limit(kit: Kit) -> None:
    kit.rec.replay().wait(timeout=10**400)  # about 10**392 years: no OverflowError


def test_a_negative_wait_timeout_past_a_double_is_a_typed_value_error(kit: Kit) -> None:
    typed(lambda: kit.rec.replay().wait(timeout=-(10**400)), vn.InvalidArgumentError, "wait timeout")


@pytest.mark.parametrize(
    "wait", ["x", None, -1.0, math.inf, 10**19, 3600.5], ids=["str", "none", "negative", "inf", "1e19", "past_an_hour"]
)
def test_live_objects_with_a_wait_that_is_no_time_is_a_typed_error(wait: Any) -> None:
    from vyre_native import debug

    typed(lambda: debug.live_objects(wait=wait), vn.VyreError, "live_objects wait")


def test_live_objects_waits_up_to_an_hour() -> None:
    from vyre_native import debug

    assert debug.live_objects(wait=3600) == debug.live_objects(wait=0)


@pytest.mark.parametrize("offset", [2**64 - 1, 2**64 - 4, 7, 5])
def test_a_refused_indirect_offset_s_fix_names_one_that_passes(kit: Kit, offset: int) -> None:
    # 2**64 - 1 was refused as "not a multiple of 4", and the aligned 2**64 - 4 then for the size
    args = kit.dev.alloc(16)
    text = typed(lambda: kit.dev.sequence().add(kit.prog, [kit.a], [kit.o], indirect=(args, offset)), vn.BindingError,
                 "an offset of at most 4")
    assert "multiple of 4" not in text
    kit.dev.sequence().add(kit.prog, [kit.a], [kit.o], indirect=(args, 4))


def test_an_indirect_offset_whose_end_passes_2_to_the_64_states_the_true_end(kit: Kit) -> None:
    args = kit.dev.alloc(16)
    offset = 2**64 - 4
    # offset + 12 wraps to 8 in uint64_t: the message must not say "(needs 8)".
    typed(
        lambda: kit.prog.record([kit.a], [kit.o], indirect=(args, offset)),
        vn.BindingError,
        f"at offset {offset}",
        f"(needs {offset + 12})",
    )


# ================================================================ long values keep their message


def _long_named(name: str) -> str:
    return (
        f"@group(0) @binding(0) var<storage, read> {name}: array<f32, 64>;\n"
        "@group(0) @binding(1) var<storage, read_write> out: array<f32>;\n"
        "@compute @workgroup_size(64)\n"
        f"fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{ out[gid.x] = {name}[gid.x]; }}\n"
    )


@pytest.mark.parametrize("form", ["positional", "named"])
def test_a_message_naming_a_3000_character_binding_keeps_its_values_and_fix(kit: Kit, form: str) -> None:
    name = "n" * 2999 + "Z"
    prog = kit.dev.compile(_long_named(name))
    small = kit.dev.upload(np.zeros(4, dtype=np.float32))
    call = (
        (lambda: prog.record([small], [kit.o])) if form == "positional"
        else (lambda: prog.record(bind={name: small, "out": kit.o}))
    )
    msg = typed(call, vn.BindingError, "has 16 bytes", "needs at least 256", "Fix: pass a buffer of at least 256")
    assert msg.startswith("pipeline `main`: ")
    assert "nnn...nnn" in msg and "nZ`" in msg  # the name's middle went; its start and end stayed
    assert len(msg.encode()) < 2048


def test_a_5000_character_wgpu_lib_path_keeps_its_message_and_fix() -> None:
    path = "/nonexistent/" + "d" * 5000 + "/libwgpu_native.so"
    res = run_child("report(outcome(vn.Device))", env={"WGPU_LIB_PATH": path})
    assert "LibraryError" in res["mro"], res
    msg = res["msg"]
    assert msg.startswith("could not load wgpu-native from '/nonexistent/ddd"), msg
    assert "ddd...ddd" in msg and "/libwgpu_native.so'" in msg, msg  # the path's start and end
    assert msg.endswith("library file."), msg  # the whole Fix


def test_a_3000_character_feature_name_is_shown_by_its_start_and_end() -> None:
    name = "x" * 2999 + "Z"
    msg = typed(lambda: vn.Device(required_features=[name]), vn.InvalidArgumentError, "Fix: use the names")
    assert "xxx...xxx" in msg and "xZ' is not a WebGPU" in msg, msg  # not cut after 64 characters


# ================================================================ what a refusal shows


class _FailingRepr:
    def __repr__(self) -> str:
        raise ValueError("repr broke")


def _deep_list(depth: int) -> list[object]:
    deep: list[object] = []
    for _ in range(depth):
        deep = [deep]
    return deep


@pytest.mark.parametrize("value", [_FailingRepr(), _deep_list(100_000)], ids=["repr-raises", "nested-100000"])
def test_a_refused_value_whose_repr_fails_is_named_by_its_type(device: vn.Device, value: object) -> None:
    with pytest.raises(vn.WrongTypeError, match="whose repr raised .*Fix:"):
        device.alloc(value)  # type: ignore[arg-type]
    with pytest.raises(vn.WrongTypeError, match="whose repr raised .*Fix:"):
        device.compile(value)  # type: ignore[arg-type]


# ================================================================ list arguments are bounded


def test_a_list_argument_past_the_bound_is_refused_before_it_is_walked(device: vn.Device, double) -> None:  # type: ignore[no-untyped-def]
    huge = range(10**12)  # walked item by item, this would run for hours and keep every item
    with pytest.raises(vn.InvalidArgumentError, match=r"1000000000000 items.*Fix:"):
        device.submit(huge)  # type: ignore[arg-type]
    with pytest.raises(vn.InvalidArgumentError, match=r"1000000000000 items.*Fix:"):
        double.prerecord_borrowed_dispatch([b"\0" * 256], workgroups=(1, 1, 1), output_sizes=huge)
    with pytest.raises(vn.InvalidArgumentError, match=r"1000000000000 items.*Fix:"):
        double.record(huge, [], workgroups=(1, 1, 1))  # type: ignore[arg-type]
