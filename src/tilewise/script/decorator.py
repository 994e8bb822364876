"""``@T.prim_func``: parse a Python function into a PrimFunc."""

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

    if not inspect.isfunction(fn):
        raise ScriptError(f"@T.prim_func decorates a Python function, not "
                          f"{type(fn).__name__} {fn!r:.60}",
                          hint="write the kernel as `@T.prim_func` over `def kernel(...):`")
    where = Span(fn.__code__.co_filename, fn.__code__.co_firstlineno)
    if fn.__name__ == "<lambda>":
        raise ScriptError("@T.prim_func needs a `def` function, not a lambda", where,
                          hint="write the kernel as `@T.prim_func` over `def kernel(...):`")
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
    try:
        tree = ast.parse(src)
        fdef = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    except (SyntaxError, StopIteration, RecursionError, MemoryError):
        raise ScriptError(f"cannot find the definition of {fn.__name__!r} in its source", where,
                          hint="define the kernel with `def` at the start of a line of a "
                          "file, or pass the text to tilewise.script.from_source") from None
    if not _same_code(fn, file):
        raise ScriptError(f"the text at {file}:{first} is not the source of {fn.__name__!r}: "
                          "the function was made by exec/compile of another text under that "
                          "file name, or the file changed after it was loaded", where,
                          hint="pass the kernel's text to tilewise.from_source(text, "
                          "filename=...), or register it with linecache before exec (what "
                          "IPython does), so that its own source is read") from None
    return parse_function(fdef, _python_scope(fn), file, src.splitlines(), first - 1, shift)


_CODES: dict = {}  # (file, text) -> {(name, first line): code}: each file text compiled once


def _same_code(fn, file: str) -> bool:
    """Whether the text inspect reads for ``fn`` (its file's, from linecache or the disk) is
    the text ``fn`` was compiled from: the file's text compiled again must hold a function
    of that name at that line with the same code. A function that ``exec`` made from
    another text under a real file name (or a file edited since it was loaded) would
    otherwise be parsed from the file's text: silently another kernel."""
    import linecache
    import types

    code = fn.__code__
    text = "".join(linecache.getlines(file, fn.__globals__))
    key = (file, text)
    codes = _CODES.get(key)
    if codes is None:
        codes = {}
        try:
            stack = [compile(text, file, "exec", dont_inherit=True)]
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            stack = []
        while stack:
            c = stack.pop()
            for k in c.co_consts:
                if isinstance(k, types.CodeType):
                    codes[k.co_name, k.co_firstlineno] = k
                    stack.append(k)
        if len(_CODES) > 256:
            _CODES.clear()
        _CODES[key] = codes
    c = codes.get((code.co_name, code.co_firstlineno))
    return (c is not None and c.co_code == code.co_code and c.co_consts == code.co_consts
            and c.co_names == code.co_names)
