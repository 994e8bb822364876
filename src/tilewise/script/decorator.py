"""``@T.prim_func`` and parsing from text."""

from __future__ import annotations

import ast
import inspect
import textwrap

from ..errors import ScriptError, Span


def _python_scope(fn) -> dict:
    scope = dict(fn.__globals__)
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                scope[name] = cell.cell_contents
            except ValueError:  # an unfilled cell
                pass
    return scope


def prim_func(fn):
    """Parse a Python function into a tilewise ``PrimFunc`` (the kernel as IR)."""
    from .parser import parse_function

    try:
        lines, first = inspect.getsourcelines(fn)
        file = inspect.getsourcefile(fn) or "<unknown>"
    except (OSError, TypeError) as e:
        raise ScriptError(f"cannot read the source of {fn.__name__!r}: {e}",
                          hint="define kernels in a file or pass the text to "
                               "tilewise.script.from_source") from None
    raw = "".join(lines)
    src = textwrap.dedent(raw)
    shift = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    tree = ast.parse(src)
    fdef = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return parse_function(fdef, _python_scope(fn), file, src.splitlines(), first - 1, shift)


def script_env() -> dict:
    """The names a printed kernel needs: T, Tx and the layout builders."""
    import tilewise.layout as layout_mod
    from . import T, Tx

    env = {k: getattr(layout_mod, k) for k in dir(layout_mod) if not k.startswith("_")}
    env.update(T=T, Tx=Tx)
    return env


def from_source(text: str, env: dict | None = None, name: str | None = None,
                filename: str = "<tilewise>"):
    """Parse kernel text (for example the output of ``func.script()``) into a PrimFunc."""
    from .parser import parse_function

    src = textwrap.dedent(text)
    try:
        tree = ast.parse(src, filename)
    except SyntaxError as e:
        raise ScriptError(f"invalid Python syntax: {e.msg}",
                          Span(filename, e.lineno or 0, (e.offset or 1) - 1,
                               (e.text or "").rstrip("\n"))) from None
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if name is not None:
        defs = [d for d in defs if d.name == name]
    if not defs:
        raise ScriptError(f"no kernel function{' named ' + repr(name) if name else ''} in "
                          f"{filename}")
    scope = script_env()
    if env:
        scope.update(env)
    return parse_function(defs[0], scope, filename, src.splitlines(), 0, 0)
