"""The command line: ``python -m vyre_native`` (or ``vyre-native``) ``demo | info | bench``.

A failure prints the error's message (what happened, then its Fix) and exits 1,
without a traceback; ``-h`` on any command says what it takes, and no command at all
prints the help and exits 0. As Unix tools do: bad
arguments print the usage and exit 2, a closed pipe (``info | head -1``) ends the
output quietly (exit 141, as SIGPIPE would), and text the terminal's encoding cannot
show is replaced, never an error.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
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
    return f"{seconds * 1e6:10.1f} {_MICRO}s"


_MICRO = "µ"


def _micro(stream: object) -> str:
    """µ, or u where ``stream``'s encoding has no µ (PYTHONIOENCODING=ascii)."""
    try:
        "µ".encode(getattr(stream, "encoding", None) or "ascii")
    except (UnicodeEncodeError, LookupError):
        return "u"
    return "µ"


def demo(backend: str | None = None) -> int:
    import vyre_native as vn

    n = 1 << 20
    t0 = time.perf_counter()
    dev = vn.Device(backend=backend)
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


ALL_BACKENDS = ("vulkan", "metal", "dx12", "gl")


def info(backend: str | None) -> int:
    """Every adapter of every backend (or of ``backend``), with its features; then the
    default device's limits."""
    import vyre_native as vn
    from vyre_native.device import adapters_with_features

    loaded, expected = vn.library_version()
    print(f"vyre_native {vn.__version__}, wgpu-native {loaded} (compiled against {expected})")
    default = adapters_with_features(backend)
    print(
        f"\nadapters a default Device{'(backend=' + repr(backend) + ')' if backend else ''} chooses from "
        f"(Device(adapter=i) picks one): {len(default)}"
    )
    for i, (adapter, features) in enumerate(default):
        _print_adapter(f"[{i}]", adapter, features)
    if backend is None:
        # The GL fallback is never chosen unless asked for: list it apart.
        gl = adapters_with_features("gl")
        print(f'\nOpenGL adapters (only with Device(backend="gl")): {len(gl)}')
        for i, (adapter, features) in enumerate(gl):
            _print_adapter(f"[{i}]", adapter, features)
    if not default:
        print(
            "\nno adapter on the primary backends: a default Device() would fail. Fix: install a Vulkan driver "
            '(Debian: apt-get install mesa-vulkan-drivers), or use backend="gl".'
        )
        return 1
    with vn.Device(backend=backend) as dev:
        print(f"\ndefault device: {dev.info['name']} ({dev.info['backend']}); its limits:")
        for key, number in dev.limits.items():
            print(f"  {key:>40}: {number}")
    return 0


def _print_adapter(tag: str, adapter: dict[str, str], features: frozenset[str]) -> None:
    print(f"  {tag} {adapter['name']}")
    print(
        f"      backend {adapter['backend']}, type {adapter['adapter_type']}, vendor {adapter['vendor'] or '-'}, "
        f"driver {adapter['driver'] or '-'}"
    )
    print(f"      features: {' '.join(sorted(features)) or '(none)'}")


def _version_text() -> str:
    import vyre_native as vn

    try:
        loaded, expected = vn.library_version()
        native = f"wgpu-native {loaded} (compiled against {expected})"
    except vn.VyreError as err:
        native = f"wgpu-native not loadable: {err}"
    return f"vyre_native {vn.__version__}, {native}"


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="vyre_native: record, replay and read back WebGPU compute dispatches, hot path in C.",
    )
    parser.add_argument("--version", action="store_true", help="print the package and wgpu-native versions")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo_cmd = commands.add_parser("demo", help="compile, record, replay, read back and check against numpy")
    demo_cmd.add_argument("--backend", choices=ALL_BACKENDS, help="the backend to run on (default: primary)")
    info_cmd = commands.add_parser(
        "info", help="list every adapter with its backend and features, and the limits"
    )
    info_cmd.add_argument("--backend", choices=ALL_BACKENDS, help="list only this backend's adapters")
    commands.add_parser(
        "bench",
        help="run the benchmark suite (from a source checkout); `bench -h` for its options",
        add_help=False,
    )
    return parser


def main(argv: list[str], prog: str = "python -m vyre_native") -> int:
    """Run the command line; returns the exit status. Output the streams cannot encode
    is replaced, and a reader that closes the pipe ends it quietly. ``prog`` is the
    command as typed (``vyre-native`` from the console script), for usage and errors."""
    global _MICRO
    _quiet_wayland()
    reconfigure = getattr(sys.stdout, "reconfigure", None)  # stderr already backslash-escapes
    if reconfigure is not None:
        reconfigure(errors="replace")
    _MICRO = _micro(sys.stdout)
    try:
        status = _run(argv, prog)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
    except BrokenPipeError:
        # Python's recipe: point stdout at devnull, so the flush at exit cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 128 + int(getattr(signal, "SIGPIPE", 13))
    return status


def _quiet_wayland() -> None:
    """Give libwayland an absolute XDG_RUNTIME_DIR where it has none. Mesa's Vulkan
    device-select layer connects to Wayland in every instance's adapter enumeration, and
    without one libwayland prints "error: XDG_RUNTIME_DIR is invalid or not set" each
    time (10 lines for ``info``). The package leaves the environment alone (it is the
    host's); this process is the command line's own. Adapters and their order do not
    change: with no compositor at that path the layer finds none either way."""
    if os.name == "posix" and not os.environ.get("XDG_RUNTIME_DIR", "").startswith("/"):
        os.environ["XDG_RUNTIME_DIR"] = tempfile.gettempdir()


def _run(argv: list[str], prog: str) -> int:
    import vyre_native as vn

    parser = _parser(prog)
    if argv[:1] == ["bench"]:
        # bench parses its own arguments (and passes those after -- to pytest).
        from . import bench

        return bench.main(argv[1:], prog=f"{parser.prog} bench")
    args = parser.parse_args(argv)
    try:
        if args.version:
            print(_version_text())
            return 0
        if args.command == "demo":
            return demo(args.backend)
        if args.command == "info":
            return info(args.backend)
        if args.command is None:
            # A bare `python -m vyre_native` is a request for help, as `-h` is.
            parser.print_help()
            return 0
    except vn.VyreError as err:
        where = f"{parser.prog} {args.command}" if args.command else parser.prog
        print(f"{where}: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    parser.print_help(sys.stderr)
    return 2


def entry() -> None:
    """The ``vyre-native`` console script."""
    sys.exit(main(sys.argv[1:], prog=os.path.basename(sys.argv[0]) or "vyre-native"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))  # python -m vyre_native: argv[0] is this file's path
