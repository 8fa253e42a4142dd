"""WGSL kernels several test files (and child scenarios) share."""

# out[i] = inp[i] * 2 for every element of out.
DOUBLE = """
@group(0) @binding(0) var<storage, read> inp: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&out)) { out[i] = inp[i] * 2.0; }
}
"""

# acc[i] += k, k a var<immediate> (a device with the "immediates" feature).
ADD_IMMEDIATE = """
var<immediate> k: u32;
@group(0) @binding(0) var<storage, read_write> acc: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&acc)) { acc[gid.x] = acc[gid.x] + k; }
}
"""

# out[i] = inp[i] * params.scale.
SCALE = """
struct Params { scale: f32, pad0: f32, pad1: f32, pad2: f32 }
@group(0) @binding(0) var<storage, read> inp: array<f32>;
@group(0) @binding(1) var<uniform> params: Params;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&out)) { out[i] = inp[i] * params.scale; }
}
"""

# y[i] = x[i] * p.scale + p.shift; the uniform sits between the input and the output.
AFFINE = """
struct Params { scale: f32, shift: f32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<uniform> p: Params;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&y)) { y[i] = x[i] * p.scale + p.shift; }
}
"""

# out[i] = inp[i] + 1 (u32): a read-only binding and a writable one.
INC_U32 = """
@group(0) @binding(0) var<storage, read> inp: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x;
    if (i < arrayLength(&out)) { out[i] = inp[i] + 1u; }
}
"""

# out[i] = value for every element; value an override constant, 1 unless compile() sets it.
FILL_U32 = """
override value: u32 = 1u;
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&out)) { out[gid.x] = value; }
}
"""

# acc[i] += 1 for every element (an in/out state, compiled with preserve=["acc"]): the
# number of launches that ran is readable afterwards.
COUNTER = """
@group(0) @binding(0) var<storage, read_write> acc: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&acc)) { acc[gid.x] = acc[gid.x] + 1u; }
}
"""

# acc[i] *= 2 for every element (u32; an in/out state, compiled with preserve=["acc"]).
DOUBLE_IN_PLACE = """
@group(0) @binding(0) var<storage, read_write> acc: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&acc)) { acc[gid.x] = acc[gid.x] * 2u; }
}
"""

# state[i] += 1.0 for every element (f32; an in/out state, compiled with
# preserve=["state"]).
COUNTER_F32 = """
@group(0) @binding(0) var<storage, read_write> state: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&state)) { state[i] = state[i] + 1.0; }
}
"""

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
