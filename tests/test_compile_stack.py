"""The compiler front cannot overflow the stack: whatever shape makes naga recurse
(chains of declarations each naming the next, call chains, nesting), vn_shader_create
either compiles it or refuses it with a ShaderError that has a place; never a crash.

naga walks a chain of declarations one stack level per link (296 bytes a link, every
kind alike, measured against wgpu-native 29 on x86-64), and nests per bracket (about 3
KiB a level): on an 8 MiB stack about 28,000 links killed the process. The module is
made on a thread whose stack is sized to the source (vn_wgsl_compile_stack:
VN_WGSL_STACK_BASE_KIB plus VN_WGSL_STACK_BYTES_PER_BYTE a byte, more than twice what
the densest chain needs) and sources are at most VN_WGSL_MAX_SOURCE_BYTES long. Each
test that could crash runs in a child process (support.child), so a crash fails it."""

from __future__ import annotations

import pytest

import vyre_native as vn
from support.chains import DECLARATIONS, NESTINGS, chain, nested, padded
from support.child import run_child
from vyre_native._lib import lib

#: past what killed the process on an 8 MiB stack (about 28,000 links)
LINKS = 30_000
CAP = lib.VN_WGSL_MAX_SOURCE_BYTES

# C-facing: the module alone (vn_shader_create), as a child reports it.
SHADER_CHILD = """
from support.chains import chain, nested, padded
from vyre_native._lib import ffi, lib
dev = vn.Device()

def create(text):
    data = text.encode()
    out = ffi.new("vn_shader **")
    st = lib.vn_shader_create(dev._live(), data, len(data), lib.VN_CHECKS_ALL, out)
    line, column = ffi.new("uint32_t *"), ffi.new("uint32_t *")
    placed = lib.vn_last_error_position(line, column)
    if st == lib.VN_OK:
        lib.vn_shader_release(out[0])
        return {"status": st, "bytes": len(data)}
    return {"status": st, "bytes": len(data), "msg": ffi.string(lib.vn_last_error()).decode(),
            "place": [line[0], column[0]] if placed else None}
"""


@pytest.mark.parametrize("kind", DECLARATIONS)
def test_a_declaration_chain_past_the_old_crash_compiles_in_c(kind: str) -> None:
    res = run_child(SHADER_CHILD + f"report(create(chain({kind!r}, {LINKS}, used={kind != 'fn'})))", timeout=300)
    assert res["status"] == lib.VN_OK, res


@pytest.mark.parametrize("kind", DECLARATIONS)
def test_a_declaration_chain_past_the_old_crash_compiles_through_compile(kind: str) -> None:
    # fn: a chain the entry point does not reach (naga still walks it; one it reaches is
    # inlined by lavapipe at pipeline creation, in minutes and gigabytes at this length)
    res = run_child(
        f"""
        from support.chains import chain
        dev = vn.Device()
        p = dev.compile(chain({kind!r}, {LINKS}, used={kind != 'fn'}))
        rec = p.record([], [dev.alloc(4)])
        rec.replay().wait()
        report(np.frombuffer(rec.read_output(0), np.uint32).tolist())
        """,
        timeout=300,
    )
    assert res == [1]


def test_a_chain_as_dense_as_a_source_at_the_size_limit_holds_compiles() -> None:
    """The densest chain (alias, the shortest names) in a source of exactly
    VN_WGSL_MAX_SOURCE_BYTES: the most stack any accepted source needs of this shape."""
    links = CAP // 17 - 100  # 17 bytes a link (below 238,328 names), and room for the entry point
    res = run_child(SHADER_CHILD + f"report(create(padded(chain('alias', {links}), {CAP})))", timeout=300)
    assert res == {"status": lib.VN_OK, "bytes": CAP}


def test_a_source_past_the_size_limit_is_a_shader_error_at_the_first_byte_past_it() -> None:
    res = run_child(SHADER_CHILD + f"report(create(padded(chain('const', 1000), {CAP + 1})))", timeout=300)
    assert res["status"] == lib.VN_ERROR_SHADER
    # the first byte past the limit: the padding comment's line break, after its text
    head = padded(chain("const", 1000), CAP + 1)[:CAP]
    assert res["place"] == [head.count("\n") + 1, len(head) - head.rindex("\n")], res
    assert f"{CAP + 1} bytes long, past the {CAP} bytes" in res["msg"] and "Fix: split the module" in res["msg"]


def test_compile_refuses_a_source_past_the_size_limit_with_its_place(device: vn.Device) -> None:
    text = padded(chain("alias", 10), CAP + 100)
    with pytest.raises(vn.ShaderError, match=r"past the \d+ bytes vyre_native compiles.*Fix:") as err:
        device.compile(text)
    head = text[:CAP]  # the padding comment's line holds the first byte past the limit
    assert (err.value.line, err.value.column) == (head.count("\n") + 1, len(head) - head.rindex("\n"))


@pytest.mark.parametrize("kind", NESTINGS)
def test_nesting_at_the_depth_limit_compiles_and_one_past_is_a_shader_error(kind: str) -> None:
    depth = lib.VN_WGSL_MAX_NESTING_DEPTH - 2  # the entry point's block and o[...] nest too
    res = run_child(
        f"""
        from support.chains import nested
        dev = vn.Device()
        p = dev.compile(nested({kind!r}, {depth}))
        try:
            dev.compile(nested({kind!r}, {lib.VN_WGSL_MAX_NESTING_DEPTH + 1}))
            refused = None
        except vn.ShaderError as e:
            refused = [e.line, e.column]
        report(refused)
        """,
        timeout=300,
    )
    assert res is not None and res[0] >= 1, "one level past the limit compiled"


def test_a_chain_compiles_from_a_thread_with_a_small_stack() -> None:
    """The compile's stack is its own: a caller on a 256 KiB thread (threading.stack_size)
    compiles what would overflow even an 8 MiB one."""
    res = run_child(
        f"""
        from support.chains import chain
        threading.stack_size(256 * 1024)
        dev = vn.Device()
        out = []
        t = threading.Thread(target=lambda: out.append(outcome(lambda: dev.compile(chain('const', {LINKS})))))
        t.start(); t.join()
        report(out)
        """,
        timeout=300,
    )
    assert res == [{"ok": True}]


def test_a_pipeline_of_a_used_struct_chain_is_made_from_a_thread_with_a_small_stack() -> None:
    """Pipeline creation runs on the compile's own stack too: the driver walks a chain of
    nested structs the entry point uses one frame a link (lavapipe: about 90 bytes), and
    3,000 links made on a 256 KiB caller thread crashed the process in
    vkCreateComputePipelines (SIGSEGV) before."""
    res = run_child(
        """
        from support.chains import chain
        threading.stack_size(256 * 1024)
        dev = vn.Device()
        out = []
        t = threading.Thread(target=lambda: out.append(outcome(lambda: dev.compile(chain('struct', 3000)))))
        t.start(); t.join()
        report(out)
        """,
        timeout=300,
    )
    assert res == [{"ok": True}]


def test_a_stack_the_system_refuses_is_an_out_of_memory_error() -> None:
    """A thread whose stack cannot be reserved (here a test-sized 2 TiB one, past any
    machine's memory under the default overcommit heuristic) is a typed error, no crash."""
    with open("/proc/sys/vm/overcommit_memory") as f:
        if f.read().strip() == "1":
            pytest.skip("vm.overcommit_memory = 1 grants any reservation")
    res = run_child(
        SHADER_CHILD
        + """
lib.vn_test_control(lib.VN_TEST_COMPILE_STACK_KIB, 2**31 - 1)
report(create(chain('const', 10)))
""",
    )
    assert res["status"] == lib.VN_ERROR_OUT_OF_MEMORY, res
    assert "a stack of 2199023254528 bytes" in res["msg"] and "Fix:" in res["msg"]


def test_the_compile_stack_switch_takes_no_negative_size() -> None:
    assert lib.vn_test_control(lib.VN_TEST_COMPILE_STACK_KIB, -1) == -1
    assert lib.vn_test_control(lib.VN_TEST_COMPILE_STACK_KIB, 0) == 0


KEPT_THREAD_CHILD = """
import threading
from vyre_native._lib import introspect, lib

def made():
    return int(introspect(lib.VN_INTROSPECT_STACK_THREADS).stack_threads)

dev = vn.Device()
src = "@compute @workgroup_size(1) fn main() {{}}"
dev.compile(src).release()                      # makes the kept thread
before = made()
for i in range(20):
    dev.compile(src + "\\n" * i).release()      # module and pipeline on it: no new thread
serial = made() - before
errors = []
def compile_many():
    try:
        for i in range(10):
            dev.compile(src + " " * i).release()
    except Exception as err:
        errors.append(repr(err))
threads = [threading.Thread(target=compile_many) for _ in range(4)]
[t.start() for t in threads]; [t.join() for t in threads]
big = dev.compile({big!r})                      # past the kept thread's stack: a thread of its own
report({{"serial": serial, "errors": errors, "big_bindings": len(big.bindings), "after_big": made() - before}})
"""


def test_compiles_one_after_another_reuse_one_kept_thread_and_concurrent_or_large_ones_still_compile() -> None:
    """A compile runs on a thread whose stack is sized for it; making one per compile cost
    more than compiling a source the driver had cached (issue 26's compile_seen row). So
    sources up to 64 KiB go to one thread kept for the process (pipeline.c,
    vn_run_on_stack); a compile while another thread's holds it, or a longer source, gets a
    thread of its own, and compiles either way."""
    big = "@group(0) @binding(0) var<storage, read_write> o: array<u32>;\n" + "// pad\n" * 12_000
    big += "@compute @workgroup_size(1) fn main() { o[0] = 1u; }\n"
    res = run_child(KEPT_THREAD_CHILD.format(big=big), timeout=240)
    assert res["serial"] == 0, res
    assert res["errors"] == [], res
    assert res["big_bindings"] == 1
    assert res["after_big"] >= 2, res  # the long source's module and pipeline: new threads
