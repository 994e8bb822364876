"""The ``tilewise`` command (``tilewise --help``: :data:`DESCRIPTION`, the commands and
:data:`EPILOG`, plain text)."""

from __future__ import annotations

import argparse
import os
import sys

from .errors import TilewiseError

DESCRIPTION = "tilewise: a tile-level GPU kernel language and compiler."
EPILOG = """\
FILE is a Python file that defines a @T.prim_func kernel (FILE:FUNC names one when it
defines several). "tilewise COMMAND -h" shows a command's options. A user mistake is one
message on stderr and exit status 2; 1 means the command ran and its check failed (a
mismatch). The tutorial is docs/tutorial.md."""


def load(spec: str):
    """``FILE[:FUNC]`` -> (module, PrimFunc) (:func:`tilewise.runner.load`)."""
    from .runner import load as load_file

    return load_file(spec)


def _target(args, mod) -> str:
    return args.target or getattr(mod, "TARGET", None) or "sm_90a"


def _output(path: str | None) -> str | None:
    """``-o OUT`` checked before any work: a file in an existing folder, not a folder."""
    if path is None:
        return None
    if os.path.isdir(path):
        raise TilewiseError(f"-o {path}: is a folder; -o takes the name of the file to write",
                            hint=f"e.g. -o {os.path.join(path, 'kernel.ptx')}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise TilewiseError(f"-o {path}: the folder {folder} does not exist",
                            hint="create it first, or write somewhere else")
    return path


def _write(path: str, out: str | bytes) -> None:
    try:
        if isinstance(out, bytes):
            with open(path, "wb") as f:
                f.write(out)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(out)
    except OSError as e:
        raise TilewiseError(f"-o {path}: cannot write it: {e.strerror or e}",
                            hint="choose a file in a folder you can write to") from None


def cmd_compile(args) -> int:
    output = _output(args.output)
    mod, func = load(args.file)
    if args.emit == "ir":
        out: str | bytes = func.script()
    else:
        from .compiler import compile as tw_compile

        kernel = tw_compile(func, target=_target(args, mod))
        out = kernel.cubin if args.emit == "cubin" else kernel.source(args.emit)
    if output:
        _write(output, out)
    elif isinstance(out, bytes):
        raise TilewiseError("a cubin is binary; write it to a file with -o OUT")
    else:
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
    return 0


def cmd_explain(args) -> int:
    from .pipeline import explain

    mod, func = load(args.file)
    print(explain(func, _target(args, mod)))
    return 0


def cmd_run(args) -> int:
    from .runner import run_example

    mod, func = load(args.file)
    ok = run_example(mod, func, _target(args, mod), force_sim=args.sim, seed=args.seed,
                     rtol=args.rtol, atol=args.atol, perf=args.perf)
    return 0 if ok else 1


def cmd_layout(args) -> int:
    from .layout.cli import run

    return run(args)


def cmd_doctor(args) -> int:
    from .doctor import report

    print(report())
    return 0


def cmd_demo(args) -> int:
    from .demo import run_demo

    return 0 if run_demo() else 1


TARGET_HELP = "e.g. sm_90a, sm_100a (default: the file's TARGET, else sm_90a)"


def _seed(text: str) -> int:
    """``--seed``: numpy seeds are integers >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; a seed is an integer >= 0")
    return value


def _tolerance(text: str) -> float:
    """``--rtol`` / ``--atol``: a number >= 0 (1e-3, 0.01, 2**-7 written as 0.0078125)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not a tolerance: give a number >= 0")
    return value


def build_parser() -> argparse.ArgumentParser:
    from .layout import cli as layout_cli

    ap = argparse.ArgumentParser(prog="tilewise", description=DESCRIPTION, epilog=EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND", title="commands")
    sub.add_parser("demo", help="the seed programs end to end").set_defaults(fn=cmd_demo)
    sub.add_parser("doctor", help="what this machine offers: GPU, driver, LLVM, nvJitLink, "
                   "cache").set_defaults(fn=cmd_doctor)
    c = sub.add_parser("compile", help="compile FILE[:FUNC]; print or write a stage (--emit "
                       "ir|lowered|llvm|ptx|cubin, -o OUT)")
    c.add_argument("file", metavar="FILE[:FUNC]")
    c.add_argument("--target", default=None, help=TARGET_HELP)
    c.add_argument("--emit", choices=["ir", "lowered", "llvm", "ptx", "cubin"], default="ptx")
    c.add_argument("-o", "--output", default=None)
    c.set_defaults(fn=cmd_compile)
    e = sub.add_parser("explain", help="every tile-primitive call of FILE[:FUNC], every "
                       "candidate variant, chosen or why it declined")
    e.add_argument("file", metavar="FILE[:FUNC]")
    e.add_argument("--target", default=None, help=TARGET_HELP)
    e.set_defaults(fn=cmd_explain)
    r = sub.add_parser("run", help="run FILE[:FUNC] on its inputs and compare with its "
                       "reference (--sim, --perf, --rtol/--atol)")
    r.add_argument("file", metavar="FILE[:FUNC]")
    r.add_argument("--target", default=None, help=TARGET_HELP)
    r.add_argument("--sim", action="store_true", help="use the CPU simulator")
    r.add_argument("--seed", type=_seed, default=0, help="random seed of the inputs (>= 0)")
    r.add_argument("--rtol", type=_tolerance, default=None,
                   help="relative tolerance (default: the file's RTOL; none: bit for bit)")
    r.add_argument("--atol", type=_tolerance, default=None,
                   help="absolute tolerance added to it (default: the file's ATOL, or 0)")
    r.add_argument("--perf", action="store_true",
                   help="run in the simulator and print its performance counters: bank "
                        "conflicts and global sectors per request at each line")
    r.set_defaults(fn=cmd_run)
    lay = sub.add_parser("layout", help="draw which thread / register holds each element of "
                         "a layout EXPR", description=layout_cli.DESCRIPTION)
    layout_cli.add_arguments(lay)
    lay.set_defaults(fn=cmd_layout)
    return ap


USER_ERROR = 2  # the exit status of a user mistake (argparse's for a bad command line)


def main(argv: list[str] | None = None) -> int:
    """Run the command; a user mistake is one message on stderr and exit status 2 (bad
    arguments, a file that fails to load, a kernel error, a hazard); 1 means the command ran
    and its check failed (a mismatch)."""
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except TilewiseError as e:
        print(str(e), file=sys.stderr)
        return USER_ERROR


if __name__ == "__main__":
    sys.exit(main())
