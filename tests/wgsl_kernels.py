"""WGSL kernels several test files share (tests/ is on sys.path: see pyproject's pytest options)."""

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

# acc[i] += 1 for every element (an in/out state, compiled with preserve=["acc"]): the
# number of launches that ran is readable afterwards.
COUNTER = """
@group(0) @binding(0) var<storage, read_write> acc: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&acc)) { acc[gid.x] = acc[gid.x] + 1u; }
}
"""
