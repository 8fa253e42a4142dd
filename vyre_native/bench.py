"""``python -m vyre_native bench``: find the benchmark suite and run its report.

The suite and the code that reports it (``benchmarks/report.py``) live in the source
checkout, not in this package: this only finds them, through ``--suite DIR``,
``$VN_BENCH_SUITE``, ``./benchmarks``, the current folder, a parent's
``benchmarks/``, or the checkout beside this package (an editable install), and
hands every argument to the report's ``main``. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pathlib
import sys

__all__ = ["find_suite", "main"]


#: the suite of the checkout beside this package (an editable install)
_BESIDE = pathlib.Path(__file__).resolve().parent.parent / "benchmarks"


def _is_suite(path: pathlib.Path) -> bool:
    return (path / "report.py").is_file() and (path / "conftest.py").is_file()


def find_suite(explicit: str | None) -> pathlib.Path | None:
    """The benchmarks/ folder, or None."""
    candidates: list[pathlib.Path] = []
    if explicit:
        candidates.append(pathlib.Path(explicit))
    env = os.environ.get("VN_BENCH_SUITE")
    if env:
        candidates.append(pathlib.Path(env))
    cwd = pathlib.Path.cwd()
    candidates += [cwd / "benchmarks", cwd]
    candidates += [p / "benchmarks" for p in cwd.parents]
    candidates.append(_BESIDE)
    for c in candidates:
        if _is_suite(c):
            return c.resolve()
    return None


def _suite_argument(argv: list[str]) -> str | None:
    """The value of ``--suite`` among our own arguments (those before ``--``)."""
    ours = argv[: argv.index("--")] if "--" in argv else argv
    for i, arg in enumerate(ours):
        if arg == "--suite" and i + 1 < len(ours):
            return ours[i + 1]
        if arg.startswith("--suite="):
            return arg.split("=", 1)[1]
    return None


def _usage(prog: str) -> argparse.ArgumentParser:
    """What ``bench`` takes before it has found the suite, whose report parses the rest."""
    parser = argparse.ArgumentParser(
        prog=prog, description="Run the benchmark suite and report it.", add_help=False
    )
    parser.add_argument("--suite", metavar="DIR", help="the benchmarks/ folder")
    parser.add_argument("options", nargs="*", metavar="OPTION", help="the report's options (see bench -h)")
    return parser


def main(argv: list[str], prog: str = "bench") -> int:
    """Run ``benchmarks/report.py``'s ``main(argv)``; returns the process exit status. A
    suite that cannot be found is a usage error (usage, then the error; exit 2)."""
    explicit = _suite_argument(argv)
    if explicit is not None and not _is_suite(pathlib.Path(explicit)):
        _usage(prog).print_usage(sys.stderr)
        print(
            f"{prog}: error: --suite {explicit} is not the benchmarks/ folder (it has no report.py and "
            "conftest.py). Fix: pass the checkout's benchmarks/ folder.",
            file=sys.stderr,
        )
        return 2
    suite = find_suite(explicit)
    ours = argv[: argv.index("--")] if "--" in argv else argv
    if suite is None and any(a in ("-h", "--help") for a in ours):
        # Help is not an error: what bench takes, and where the report's own options come from.
        _usage(prog).print_help()
        print(
            "\nThe report's options are listed by bench -h run where the benchmarks/ folder is found "
            "(the source checkout, --suite DIR or VN_BENCH_SUITE); none is found from here."
        )
        return 0
    if suite is None:
        _usage(prog).print_usage(sys.stderr)
        print(
            f"{prog}: error: the benchmarks/ folder was not found (it is in the source checkout, not the "
            "installed package). Fix: run from the repository, or pass --suite PATH/TO/benchmarks (or set "
            "VN_BENCH_SUITE).",
            file=sys.stderr,
        )
        return 2
    spec = importlib.util.spec_from_file_location("vyre_native_bench_report", suite / "report.py")
    if spec is None or spec.loader is None:
        print(f"{prog}: cannot load {suite / 'report.py'}. Fix: check the checkout.", file=sys.stderr)
        return 2
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    if not any(a == "--suite" or a.startswith("--suite=") for a in argv):
        argv = ["--suite", str(suite), *argv]
    status: int = report.main(argv, prog=prog)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
