"""WGSL kernels several test files (and child scenarios) share."""

def elementwise(
    body: str, *bindings: str, ty: str = "f32", head: str = "", guard: str = "", size: int = 64
) -> str:
    """The WGSL of a kernel that runs ``body`` once per element, at ``i = gid.x``
    (workgroups of ``size``), where ``guard`` holds: by default ``i`` below the length of
    the first read_write binding. ``bindings`` are group 0's, numbered in the order
    given: ``"read NAME"`` or ``"read_write NAME"`` (a var<storage>, an array of ``ty``
    unless written ``NAME: TYPE``) or ``"uniform NAME: TYPE"``; ``head`` (a struct, an
    override, a var<immediate>) comes before them. The one place the binding header and
    the bounds check are written."""
    decls = []
    for number, binding in enumerate(bindings):
        access, name = binding.split(" ", 1)
        space = "uniform" if access == "uniform" else f"storage, {access}"
        typed = name if ":" in name else f"{name}: array<{ty}>"
        decls.append(f"@group(0) @binding({number}) var<{space}> {typed};")
    if not guard:
        written = next(b.split(" ", 1)[1] for b in bindings if b.startswith("read_write "))
        guard = f"i < arrayLength(&{written})"
    return (
        f"{head}\n" + "\n".join(decls) + f"\n\n@compute @workgroup_size({size})\n"
        "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {\n"
        f"    let i = gid.x;\n    if ({guard}) {{ {body} }}\n}}\n"
    )


# out[i] = inp[i] * 2 for every element of out.
DOUBLE = elementwise("out[i] = inp[i] * 2.0;", "read inp", "read_write out")

# acc[i] += k, k a var<immediate> (a device with the "immediates" feature).
ADD_IMMEDIATE = elementwise("acc[i] = acc[i] + k;", "read_write acc", ty="u32", head="var<immediate> k: u32;")

# out[i] = inp[i] * params.scale.
SCALE = elementwise(
    "out[i] = inp[i] * params.scale;",
    *("read inp", "uniform params: Params", "read_write out"),
    head="struct Params { scale: f32, pad0: f32, pad1: f32, pad2: f32 }",
)

# y[i] = x[i] * p.scale + p.shift; the uniform sits between the input and the output.
AFFINE = elementwise(
    "y[i] = x[i] * p.scale + p.shift;",
    *("read x", "uniform p: Params", "read_write y"),
    head="struct Params { scale: f32, shift: f32 }",
)

# out[i] = inp[i] + 1 (u32): a read-only binding and a writable one.
INC_U32 = elementwise("out[i] = inp[i] + 1u;", "read inp", "read_write out", ty="u32")

# out[i] = value for every element; value an override constant, 1 unless compile() sets it.
FILL_U32 = elementwise("out[i] = value;", "read_write out", ty="u32", head="override value: u32 = 1u;")

# acc[i] += 1 for every element (an in/out state, compiled with preserve=["acc"]): the
# number of launches that ran is readable afterwards.
COUNTER = elementwise("acc[i] = acc[i] + 1u;", "read_write acc", ty="u32")

# acc[i] *= 2 for every element (u32; an in/out state, compiled with preserve=["acc"]).
DOUBLE_IN_PLACE = elementwise("acc[i] = acc[i] * 2u;", "read_write acc", ty="u32")

# state[i] += 1.0 for every element (f32; an in/out state, compiled with
# preserve=["state"]).
COUNTER_F32 = elementwise("state[i] = state[i] + 1.0;", "read_write state")

# out[gid.x & 63] = a hash looped n.x * n.y times: a launch as long as the caller asks
# (support.childlib.long_recording sizes it).
LONG = """
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<uniform> n: vec4<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    var acc = gid.x;
    for (var j = 0u; j < n.y; j = j + 1u) {
        for (var i = 0u; i < n.x; i = i + 1u) {
            acc = (acc ^ (acc << 13u)) ^ (i * 2654435761u + j);
            acc = acc ^ (acc >> 17u);
        }
    }
    out[gid.x & 63u] = acc;
}
"""
