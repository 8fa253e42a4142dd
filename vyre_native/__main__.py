"""``python -m vyre_native demo | info | bench``."""

from __future__ import annotations

import sys
import time

import numpy as np

DEMO_WGSL = """
struct Params { scale: f32, n: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(256)
fn saxpy_like(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < params.n) {
        y[i] = params.scale * x[i] + 1.0;
    }
}
"""


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:10.1f} µs"


def demo() -> int:
    import vyre_native as vn

    n = 1 << 20
    t0 = time.perf_counter()
    dev = vn.Device()
    t_device = time.perf_counter() - t0
    info = dev.info
    loaded, _ = vn.library_version()
    print(f"adapter : {info['name']} ({info['adapter_type']}, {info['backend']}), driver {info['driver']}")
    print(f"library : wgpu-native {loaded}")
    print(
        f"problem : y = 2.5 * x + 1 over {n:,} f32 ({n * 4 / 2**20:.0f} MiB in, {n * 4 / 2**20:.0f} MiB out)\n"
    )

    x = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    params = np.zeros(2, dtype=np.uint32)
    params.view(np.float32)[0] = 2.5
    params[1] = n

    steps: list[tuple[str, float]] = [("Device()", t_device)]

    def timed(name: str, fn):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        result = fn()
        steps.append((name, time.perf_counter() - t))
        return result

    prog = timed("compile (WGSL -> pipeline)", lambda: dev.compile(DEMO_WGSL, entry_point="saxpy_like"))
    xb = timed("upload x (4 MiB)", lambda: dev.upload(x))
    pb = timed("upload params", lambda: dev.upload(params))
    yb = timed("alloc y (4 MiB)", lambda: dev.alloc(n * 4))
    groups = (n + 255) // 256
    rec = timed(
        "prerecord (bind groups + encode)",
        lambda: prog.prerecord_persistent_dispatch([xb], [yb], params=pb, workgroups=(groups, 1, 1)),
    )
    timed("replay (submit)", rec.replay)
    out = np.empty(n, dtype=np.float32)
    timed("read_output_into (wait + 4 MiB back)", lambda: rec.read_output_into(0, out))

    expected = np.float32(2.5) * x + np.float32(1.0)
    ok = np.allclose(out, expected, rtol=1e-6, atol=1e-6)

    # Steady-state launch cost: a recording per launch, bind groups from the cache.
    launches = 200
    t = time.perf_counter()
    for _ in range(launches):
        prog.prerecord_persistent_dispatch([xb], [yb], params=pb, workgroups=(groups, 1, 1)).replay()
    host = (time.perf_counter() - t) / launches
    dev.wait_idle()
    steps.append((f"record + replay, mean of {launches} (host)", host))

    for name, seconds in steps:
        print(f"  {name:<44}{_us(seconds)}")
    stats = prog.bind_group_cache_stats()
    print(f"\nbind-group cache: {stats['hits']} hits, {stats['misses']} misses")
    print(
        f"result vs numpy : {'OK' if ok else 'MISMATCH'} (max abs error {np.max(np.abs(out - expected)):.2e})"
    )
    dev.close()
    return 0 if ok else 1


def info() -> int:
    import vyre_native as vn

    dev = vn.Device()
    loaded, expected = vn.library_version()
    print(f"wgpu-native {loaded} (compiled against {expected})")
    for key, text in dev.info.items():
        print(f"{key:>14}: {text}")
    for key, number in dev.limits.items():
        print(f"{key:>40}: {number}")
    dev.close()
    return 0


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "demo"
    if command == "demo":
        return demo()
    if command == "info":
        return info()
    if command == "bench":
        from . import bench

        return bench.main(argv[1:])
    print("usage: python -m vyre_native [demo | info | bench [options]]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
