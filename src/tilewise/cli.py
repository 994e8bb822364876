"""The ``tilewise`` command.

    tilewise demo                                   the seed programs, end to end
    tilewise compile FILE[:FUNC] --target sm_90a --emit ir|lowered|llvm|ptx|cubin [-o OUT]
    tilewise explain FILE[:FUNC] --target sm_90a    every dispatch decision and its reason
    tilewise run FILE[:FUNC] [--sim] --target ...   run on random inputs, compare with reference
    tilewise layout "S[(128, 8):(1@tid_in_wg, 1)]" [--svg out.svg]
    tilewise doctor                                 what this machine offers
"""

from __future__ import annotations

import argparse
import sys

from .errors import TilewiseError


def load(spec: str):
    """``FILE[:FUNC]`` -> (module, PrimFunc) (:func:`tilewise.runner.load`)."""
    from .runner import load as load_file

    return load_file(spec)


def _target(args, mod) -> str:
    return args.target or getattr(mod, "TARGET", None) or "sm_90a"


def cmd_compile(args) -> int:
    mod, func = load(args.file)
    if args.emit == "ir":
        out: str | bytes = func.script()
    else:
        from .compiler import compile as tw_compile

        kernel = tw_compile(func, target=_target(args, mod))
        out = kernel.cubin if args.emit == "cubin" else kernel.source(args.emit)
    if args.output:
        mode = "wb" if isinstance(out, bytes) else "w"
        with open(args.output, mode) as f:
            f.write(out)
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
    ok = run_example(mod, func, _target(args, mod), force_sim=args.sim, seed=args.seed)
    return 0 if ok else 1


def cmd_layout(args) -> int:
    from .layout.cli import main as layout_main

    return layout_main(args.rest)


def cmd_doctor(args) -> int:
    from .doctor import report

    print(report())
    return 0


def cmd_demo(args) -> int:
    from .demo import run_demo

    return 0 if run_demo() else 1


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="tilewise", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("demo", help="run the seed programs end to end").set_defaults(fn=cmd_demo)
    sub.add_parser("doctor", help="what this machine offers").set_defaults(fn=cmd_doctor)
    c = sub.add_parser("compile", help="compile and print or write a stage")
    c.add_argument("file", metavar="FILE[:FUNC]")
    c.add_argument("--target", default=None)
    c.add_argument("--emit", choices=["ir", "lowered", "llvm", "ptx", "cubin"], default="ptx")
    c.add_argument("-o", "--output", default=None)
    c.set_defaults(fn=cmd_compile)
    e = sub.add_parser("explain", help="every tile-primitive call and every candidate")
    e.add_argument("file", metavar="FILE[:FUNC]")
    e.add_argument("--target", default=None)
    e.set_defaults(fn=cmd_explain)
    r = sub.add_parser("run", help="run on random inputs and check against the reference")
    r.add_argument("file", metavar="FILE[:FUNC]")
    r.add_argument("--target", default=None)
    r.add_argument("--sim", action="store_true", help="use the CPU simulator")
    r.add_argument("--seed", type=int, default=0)
    r.set_defaults(fn=cmd_run)
    lay = sub.add_parser("layout", help="draw a layout", add_help=False)
    lay.add_argument("rest", nargs=argparse.REMAINDER)
    lay.set_defaults(fn=cmd_layout)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except TilewiseError as e:
        print(str(e), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
