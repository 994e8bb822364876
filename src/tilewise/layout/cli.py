"""``tilewise layout EXPR [--shape 128,8] [--svg out.svg]``: draw a layout, with a legend
of its labels.

The expression is evaluated with only the public names of ``tilewise.layout`` in scope
(no builtins), after a check that it uses nothing but literals, those names, subscripts,
calls, ``+ - * // @`` and public attributes. Anything else is a LayoutError that says
what is wrong.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

from tilewise.errors import LayoutError, TilewiseError, did_you_mean

_ALLOWED = (
    ast.Expression,
    ast.Call,
    ast.Subscript,
    ast.Slice,
    ast.Tuple,
    ast.List,
    ast.Constant,
    ast.BinOp,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.FloorDiv,
    ast.MatMult,
    ast.Name,
    ast.Load,
    ast.Attribute,
    ast.keyword,
    ast.UnaryOp,
    ast.USub,
)
_HINT = 'write a layout such as "S[(128, 8) : (1@tid_in_wg, 1)]"'


def _namespace() -> dict[str, object]:
    import tilewise.layout as pkg

    return {name: getattr(pkg, name) for name in pkg.__all__}


def _check_node(node: ast.AST, names: dict[str, object]) -> None:
    if not isinstance(node, _ALLOWED):
        raise LayoutError(
            f"a layout expression cannot contain {type(node).__name__} "
            f"({ast.unparse(node) if isinstance(node, ast.expr) else ''})",
            hint=_HINT,
        )
    if isinstance(node, ast.Name) and node.id not in names:
        raise LayoutError(
            f"unknown name {node.id!r} in the layout expression", hint=did_you_mean(node.id, names)
        )
    if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
        raise LayoutError(
            f"private attribute {node.attr!r} in the layout expression",
            hint="use only the public API of tilewise.layout",
        )
    if isinstance(node, ast.Constant) and not isinstance(node.value, (int, str)):
        raise LayoutError(
            f"constant {node.value!r} cannot appear in a layout expression",
            hint="extents and strides are integers",
        )


def evaluate(expr: str) -> object:
    """The value of a layout expression (a TileLayout unless it is an atom helper's
    result); raises LayoutError for a malformed one."""
    from tilewise.layout.layout import TileLayout

    names = _namespace()
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as err:
        raise LayoutError(
            f"cannot parse layout expression {expr!r}: {err.msg}", hint=_HINT
        ) from None
    for node in ast.walk(tree):
        _check_node(node, names)
    try:
        value = eval(compile(tree, "<layout>", "eval"), {"__builtins__": {}}, names)
    except TilewiseError:
        raise
    except Exception as err:  # a foreign error from a well-formed but wrong expression
        raise LayoutError(f"layout expression {expr!r} failed: {err}", hint=_HINT) from None
    if not isinstance(value, TileLayout):
        raise LayoutError(f"{expr!r} is a {type(value).__name__}, not a layout", hint=_HINT)
    return value


def parse_shape(text: str | None) -> tuple[int, ...] | None:
    """``--shape``: integers separated by commas, spaces or ``x``, optionally in
    parentheses or brackets: ``64,1``, ``"(64, 1)"``, ``[64, 1]``, ``64x1``."""
    if text is None:
        return None
    body = text.strip()
    if body[:1] in "([" and body[-1:] in ")]":
        body = body[1:-1]
    parts = [p for p in body.replace("x", ",").replace(" ", ",").split(",") if p]
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        dims = ()
    if not dims or any(d <= 0 for d in dims):
        raise LayoutError(
            f"--shape {text!r} is not a list of positive integers",
            hint="write e.g. --shape 128,8 or --shape \"(128, 8)\"",
        )
    return dims


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``tilewise layout`` (options may come before or after EXPR)."""
    parser.add_argument("expr", metavar="EXPR",
                        help='a layout, e.g. "S[(128, 8) : (1@tid_in_wg, 1)]" or '
                             '"wgmma_accumulator(64)"')
    parser.add_argument("--shape", help="view the tile in this shape: 128,8 or (128, 8)")
    parser.add_argument("--svg", help="also write an SVG picture to this file")


DESCRIPTION = ("Draw which thread / lane / register, tensor-memory lane / column or memory "
               "offset holds each element of a layout. The names of tilewise.layout are "
               "available: S, R, TileLayout, the axes, swizzled_tile, wgmma_accumulator, ...")


def run(args) -> int:
    """Draw ``args.expr``; 0, or 2 for a layout error (one message on stderr)."""
    from tilewise.layout.render import legend, render_ascii, render_svg

    try:
        layout = evaluate(args.expr)
        shape = parse_shape(args.shape)
        picture = render_ascii(layout, shape) + legend(layout, shape)
        svg = render_svg(layout, shape) if args.svg else None
    except TilewiseError as err:
        sys.stderr.write(f"{err}\n")
        return 2
    if svg is not None:
        try:
            Path(args.svg).write_text(svg, encoding="utf-8")
        except OSError as err:
            sys.stderr.write(f"error: --svg {args.svg}: cannot write it: {err.strerror}\n")
            return 2
        picture += f"wrote {args.svg}\n"
    sys.stdout.write(picture)
    return 0


def main(argv: list[str]) -> int:
    """Run ``tilewise layout`` with the arguments after ``layout``; returns the exit
    status (0 ok, 2 a layout error or bad command-line usage: a user mistake, as for every
    tilewise command)."""
    parser = argparse.ArgumentParser(prog="tilewise layout", description=DESCRIPTION)
    add_arguments(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:
        return int(stop.code or 0)
    return run(args)
