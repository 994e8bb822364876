"""Parsing kernels from text (a printed kernel, ``func.script()``, parses back), with
the names a printed kernel uses: ``T``, ``Tx`` and the layout builders."""

from __future__ import annotations

import ast
import textwrap

from ..errors import ScriptError, Span, api_boundary
from .names import T, Tx


def script_env() -> dict:
    """The names a printed kernel needs: T, Tx and the layout builders."""
    import tilewise.layout as layout_mod

    env = {k: getattr(layout_mod, k) for k in dir(layout_mod) if not k.startswith("_")}
    env.update(T=T, Tx=Tx)
    return env


@api_boundary
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
    except (RecursionError, MemoryError):
        raise ScriptError("the kernel text nests too deeply for Python's parser",
                          Span(filename, 1, 0), "split long expressions into several "
                          "assignments") from None
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
