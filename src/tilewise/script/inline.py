"""``@T.inline`` device helpers and ``@T.meta_class`` state objects (TIRx's spelling).

A function decorated with ``@T.inline`` is a device helper: each call inside a kernel
parses the helper's body *into the call site*, so no call exists in the generated code and
the helper may take and return run-time values, buffers, tuples and Python objects alike.
Names follow Python: the parameters and the names the helper assigns are its own locals
(assigning one never changes a caller's variable); other names come from where the helper
was *defined* — the module and closure of a helper written at Python level, the kernel's
(or an enclosing helper's) names for a helper written with ``def`` inside a kernel — read
when the call runs (late binding). ``return`` ends the helper with a value; it may not
sit inside a run-time ``if`` or loop (assign the result on each path, return it once).
Helpers may call helpers, recursion included when a compile-time condition ends it.

``@T.meta_class`` marks a class whose instances are compile-time objects of the parser
(a tile scheduler, a pipeline): created in a kernel (``s = Sched(...)``), their
``__init__`` and plain methods run as Python at that point, where ``T.*`` calls build IR
as they would in the kernel (``self.acc = T.alloc_local(...)``, ``self.i =
T.local_scalar("int32")``); their ``@T.inline`` methods are parsed into each call site
with ``self`` bound. A field that holds a run-time local (``T.local_scalar``) is
assigned in place by ``self.i = self.i + 1`` inside an ``@T.inline`` method, so the
object carries run-time state through loops and between the warp roles that call it.

docs/ir.md ("Device helpers") states the rules for users.
"""

from __future__ import annotations

import ast
import inspect
import os
import sys
import textwrap
import threading

from ..errors import ScriptError, Span, api_boundary

MAX_INLINE_DEPTH = 64  # helpers inside helpers; past this a recursion has no end
_META = "__tilewise_meta_class__"
_active = threading.local()  # the parser running Python-level meta-class code, if any


def active_parser():
    """The parser on whose behalf Python-level code (a meta-class ``__init__`` or plain
    method) is running now, or None."""
    stack = getattr(_active, "stack", None)
    return stack[-1] if stack else None


class building:
    """``with building(p):`` — ``T.*`` calls made by Python code build IR through ``p``."""

    def __init__(self, parser):
        self.parser = parser

    def __enter__(self):
        if not hasattr(_active, "stack"):
            _active.stack = []
        _active.stack.append(self.parser)

    def __exit__(self, *exc):
        _active.stack.pop()


def user_span(parser) -> Span:
    """The line of the user's Python code (outside tilewise) that is running a ``T.*`` call
    in building mode, with the kernel's call chain."""
    f = sys._getframe(1)
    here = os.path.dirname(os.path.abspath(__file__))  # the parser's own files
    while f is not None and os.path.dirname(os.path.abspath(f.f_code.co_filename)) == here:
        f = f.f_back
    if f is None:
        return parser.span()
    site = parser.span()
    name = getattr(f.f_code, "co_qualname", f.f_code.co_name)
    via = ((f"{name} (Python)", site),) + (site.via if site else ())
    return Span(f.f_code.co_filename, f.f_lineno, 0, via=via)


class InlineFunction:
    """A ``@T.inline`` helper: its definition (AST, file, lines) and where its free names
    come from (``scope()``: module globals and closure cells, read at each call; and, for a
    helper defined inside a kernel, the enclosing kernel scopes ``closure``)."""

    def __init__(self, name: str, fdef: ast.FunctionDef, file: str, lines: list[str],
                 line0: int, col0: int, scope, signature: inspect.Signature,
                 closure: tuple = ()):
        self.name = name
        self.fdef = fdef
        self.file = file
        self.lines = lines
        self.line0 = line0
        self.col0 = col0
        self.scope = scope  # () -> dict of the names visible where it was defined
        self.signature = signature
        self.closure = closure  # enclosing kernel/helper Scopes (innermost last)
        from .scopes import assigned_names

        self.assigned = assigned_names(fdef.body)
        self.locals = self.assigned | set(signature.parameters)

    def __get__(self, obj, owner=None):
        return self if obj is None else BoundInline(self, obj)

    def __call__(self, *args, **kwargs):
        p = active_parser()
        if p is None:
            raise ScriptError(f"the T.inline helper {self.name!r} can only be called inside a "
                              "kernel", hint="call it from a @T.prim_func (or from another "
                              "T.inline helper)")
        with p.python_call_site(user_span(p)):
            return p.inline_call(self, args, kwargs)

    def __repr__(self) -> str:
        return f"<T.inline helper {self.name}>"


class BoundInline:
    """A meta-class object's ``@T.inline`` method: ``self`` goes first."""

    def __init__(self, fn: InlineFunction, obj):
        self.fn = fn
        self.obj = obj

    def __call__(self, *args, **kwargs):
        return self.fn(self.obj, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<T.inline method {type(self.obj).__name__}.{self.fn.name}>"


def python_scope(fn) -> dict:
    """The names a Python function sees: its globals and its closure cells (now)."""
    scope = dict(fn.__globals__)
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                scope[name] = cell.cell_contents
            except ValueError:  # an unfilled cell
                pass
    return scope


def read_function(fn, what: str):
    """(FunctionDef, file, dedented lines, line0, col0) of a Python function's source."""
    where = Span(fn.__code__.co_filename, fn.__code__.co_firstlineno)
    if fn.__name__ == "<lambda>":
        raise ScriptError(f"{what} needs a `def` function, not a lambda", where,
                          hint=f"write it as `{what}` over `def name(...):`")
    try:
        lines, first = inspect.getsourcelines(fn)
        file = inspect.getsourcefile(fn) or "<unknown>"
    except (OSError, TypeError) as e:
        raise ScriptError(f"cannot read the source of {fn.__name__!r}: {e}", where,
                          hint="define kernels and helpers in a file or pass the text to "
                               "tilewise.script.from_source") from None
    raw = "".join(lines)
    src = textwrap.dedent(raw)
    shift = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    try:
        tree = ast.parse(src)
        fdef = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    except (SyntaxError, StopIteration, RecursionError, MemoryError):
        raise ScriptError(f"cannot find the definition of {fn.__name__!r} in its source", where,
                          hint="define it with `def` at the start of a line of a file, or pass "
                               "the text to tilewise.script.from_source") from None
    if not _same_code(fn, file):
        raise ScriptError(f"the text at {file}:{first} is not the source of {fn.__name__!r}: "
                          "the function was made by exec/compile of another text under that "
                          "file name, or the file changed after it was loaded", where,
                          hint="pass the kernel's text to tilewise.from_source(text, "
                          "filename=...), or register it with linecache before exec (what "
                          "IPython does), so that its own source is read") from None
    return fdef, file, src.splitlines(), first - 1, shift


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


@api_boundary
def inline(fn):
    """``@T.inline``: make ``fn`` a device helper whose body is parsed into each call site
    of a kernel (see the module docstring)."""
    if isinstance(fn, (InlineFunction, staticmethod, classmethod)) or not inspect.isfunction(fn):
        raise ScriptError(f"@T.inline decorates a Python function, not {type(fn).__name__}",
                          hint="write `@T.inline` over `def helper(...):`")
    fdef, file, lines, line0, col0 = read_function(fn, "@T.inline")
    _check_header(fdef, Span(file, fdef.lineno + line0, fdef.col_offset + col0))
    return InlineFunction(fn.__name__, fdef, file, lines, line0, col0,
                          lambda: python_scope(fn), inspect.signature(fn))


def _check_header(fdef, span: Span) -> None:
    if isinstance(fdef, ast.AsyncFunctionDef):
        raise ScriptError("an async function cannot be a T.inline helper", span)
    if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(fdef)):
        raise ScriptError("a generator cannot be a T.inline helper", span,
                          hint="return a tuple of values instead of yielding them")


def nested_signature(p, fdef: ast.FunctionDef) -> inspect.Signature:
    """The signature of a helper defined with ``def`` inside a kernel: its defaults are
    evaluated where the ``def`` stands, as Python does."""
    a = fdef.args
    P = inspect.Parameter
    params = []
    pos = a.posonlyargs + a.args
    defaults = [p.expr(d) for d in a.defaults]
    first_default = len(pos) - len(defaults)
    for i, arg in enumerate(pos):
        kind = P.POSITIONAL_ONLY if i < len(a.posonlyargs) else P.POSITIONAL_OR_KEYWORD
        d = defaults[i - first_default] if i >= first_default else P.empty
        params.append(P(arg.arg, kind, default=d))
    if a.vararg:
        params.append(P(a.vararg.arg, P.VAR_POSITIONAL))
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        params.append(P(arg.arg, P.KEYWORD_ONLY, default=P.empty if d is None else p.expr(d)))
    if a.kwarg:
        params.append(P(a.kwarg.arg, P.VAR_KEYWORD))
    return inspect.Signature(params)


# ------------------------------------------------------------------ meta classes
@api_boundary
def meta_class(cls):
    """``@T.meta_class``: instances of ``cls`` created inside a kernel are parser objects;
    ``__init__`` and plain methods run as Python that builds IR, ``@T.inline`` methods are
    parsed into each call site (see the module docstring)."""
    if not isinstance(cls, type):
        raise ScriptError(f"@T.meta_class decorates a class, not {type(cls).__name__}",
                          hint="write `@T.meta_class` over `class Name:`")
    setattr(cls, _META, True)
    return cls


def is_meta_class(v) -> bool:
    return isinstance(v, type) and getattr(v, _META, False)


def is_meta_object(v) -> bool:
    return getattr(type(v), _META, False) and not isinstance(v, type)


# ------------------------------------------------------------------ the parser's side
class Frame:
    """One helper being parsed into the kernel: its call site and its ``return`` value."""

    def __init__(self, fn: InlineFunction, rt_depth: int):
        self.fn = fn
        self.rt_depth = rt_depth  # returns may not sit deeper (inside a run-time construct)
        self.result = None
        self.declared: set[int] = set()  # ids of the run-time locals its body declared


class InlineParsing:
    """The parser's methods for helpers and meta-class objects (mixed into ``Parser``)."""

    def enclosing(self, name: str):
        """``name`` in the kernel scopes a helper defined inside the kernel closes over
        (read now: late binding), or UNBOUND."""
        from .scopes import UNBOUND

        if not self.frames:
            return UNBOUND
        closure = self.frames[-1].fn.closure
        for scope in reversed(self._live_blocks(closure) + tuple(closure)):
            if name in scope.vals:
                v = scope.vals[name]
                if not isinstance(v, type(UNBOUND)):
                    return v
        return UNBOUND

    def _live_blocks(self, closure: tuple) -> tuple:
        """The block scopes (loops, branches) the defining function has entered since the
        ``def``, when the helper is called from inside them: Python's closures see the
        enclosing function's names as they are at the call, wherever they were assigned
        (a helper defined before a tile loop reads the loop's ``m0``)."""
        if not closure:
            return ()
        i = next((k for k, s in enumerate(self.scopes) if s is closure[-1]), None)
        if i is None:
            return ()
        live = []
        for s in self.scopes[i + 1:]:
            if s.kind == "inline":  # a helper's own body: not the defining function's
                break
            live.append(s)
        return tuple(live)

    def lexical_scopes(self) -> tuple:
        """The scopes a ``def`` written here closes over: the current function's own (from
        its frame) after what that function closes over itself."""
        start = max((i for i, s in enumerate(self.scopes) if s.kind == "inline"), default=0)
        outer = self.frames[-1].fn.closure if self.frames else ()
        return tuple(outer) + tuple(self.scopes[start:])

    def python_call_site(self, span):
        return _SiteOverride(self, span)

    def inline_call(self, fn: InlineFunction, args, kwargs):
        """Parse ``fn``'s body into the current block with ``args`` bound; its result."""
        if len(self.frames) >= MAX_INLINE_DEPTH:
            raise self.error(f"T.inline helpers nest more than {MAX_INLINE_DEPTH} deep here "
                             f"(calling {fn.name!r})", "end a recursion with a compile-time "
                             "condition (if n > 0: helper(n - 1))")
        try:
            bound = fn.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise self.error(f"{fn.name}(): {e}", f"see the definition of {fn.name!r} at "
                             f"{fn.file}:{fn.fdef.lineno + fn.line0}") from None
        bound.apply_defaults()
        site = self.span()
        saved = self._enter(fn, site)
        frame = Frame(fn, self.rt_depth)
        self.frames.append(frame)
        try:
            for name, value in bound.arguments.items():
                self.bind_parameter(fn, name, value)
            self.stmts(fn.fdef.body)
        finally:
            self.frames.pop()
            self._leave(saved)
        self.orphans |= frame.declared  # nothing else names them now: a caller may adopt one
        return frame.result

    def bind_parameter(self, fn: InlineFunction, name: str, value) -> None:
        """A parameter names the argument itself unless the helper assigns the parameter
        or the argument is an object's field (which the helper may change meanwhile): then
        it is a new local holding the argument's value, as in Python."""
        from ..ir.expr import Var

        if isinstance(value, Var) and id(value) in self.mutable and (
                name in fn.assigned or id(value) in self.field_vars):
            self.declare(name, value, fn.fdef)
        elif isinstance(value, Var):
            self.bind(name, value, fn.fdef)
        else:
            self.assign(ast.Name(id=name), value, fn.fdef)

    def _enter(self, fn: InlineFunction, site):
        from .scopes import Scope

        saved = (self.pyscope, self.file, self.lines, self.line0, self.col0, self.locals,
                 self.loops, self.exit, self.via, self.node, self.site, self.assign_name)
        self.pyscope, self.file, self.lines = fn.scope(), fn.file, fn.lines
        self.line0, self.col0, self.locals = fn.line0, fn.col0, fn.locals
        self.loops, self.exit, self.site, self.assign_name = [], None, None, None
        self.via = ((f"the T.inline helper {fn.name!r}", site),) + self.via
        self.node = fn.fdef
        self.scopes.append(Scope("inline"))
        return saved

    def _leave(self, saved) -> None:
        self.scopes.pop()
        (self.pyscope, self.file, self.lines, self.line0, self.col0, self.locals,
         self.loops, self.exit, self.via, self.node, self.site, self.assign_name) = saved

    # -- statements that only helpers (or their definitions) have ---------------------
    def s_FunctionDef(self, node: ast.FunctionDef):
        decos = [self.expr(d) for d in node.decorator_list]
        if len(decos) != 1 or decos[0] is not inline:
            raise self.error("a function defined inside a kernel must be a @T.inline helper",
                             "decorate it with @T.inline, or define it outside the kernel")
        _check_header(node, self.span(node))
        fn = InlineFunction(node.name, node, self.file, self.lines, self.line0, self.col0,
                            _fixed(self.pyscope), nested_signature(self, node),
                            self.lexical_scopes())
        self.bind(node.name, fn, node)

    def s_Return(self, node: ast.Return):
        if not self.frames:
            raise self.error("return is not supported in a kernel",
                             "guard the rest of the kernel with `if` instead")
        frame = self.frames[-1]
        if self.rt_depth > frame.rt_depth:
            raise self.error("`return` inside a run-time `if` or loop of a T.inline helper is "
                             "not supported", "assign the result to a name on every path and "
                             "return it once, at the end of the helper")
        frame.result = None if node.value is None else self.expr(node.value)
        self.exit = "return"

    # -- meta-class objects ----------------------------------------------------------
    def run_python(self, fn, args, kwargs):
        """Run a meta-class ``__init__`` or plain method as Python that builds IR here."""
        from ..errors import TilewiseError

        with building(self):
            try:
                return fn(*args, **kwargs)
            except TilewiseError:
                raise
            except Exception as e:  # noqa: BLE001 - the user's Python code failed
                raise self.error(f"{getattr(fn, '__qualname__', fn)} failed while building the "
                                 f"kernel: {type(e).__name__}: {e}") from None

    def new_meta_object(self, cls, args, kwargs):
        obj = cls.__new__(cls)
        self.meta_depth[id(obj)] = self.rt_depth
        self.pinned.append(obj)
        prefix, self.assign_name = self.assign_name or cls.__name__.lower(), None
        init = cls.__init__
        if isinstance(init, InlineFunction):
            self.inline_call(init, (obj, *args), kwargs)
        elif init is not object.__init__:
            self.run_python(init, (obj, *args), kwargs)
        elif args or kwargs:
            raise self.error(f"{cls.__name__}() takes no arguments")
        self.name_fields(obj, prefix)
        return obj

    def name_fields(self, obj, prefix: str) -> None:
        """Name the run-time locals an object's ``__init__`` made after the object and the
        field (``sched.tile`` reads ``sched_tile`` in the IR)."""
        from ..ir.expr import Var

        for attr, v in vars(obj).items():
            if isinstance(v, Var) and id(v) in self.mutable and v.name == "scalar":
                object.__setattr__(v, "name", f"{prefix}_{attr.lstrip('_')}")

    def assign_field(self, target: ast.Attribute, value, node) -> None:
        """``obj.f = value`` in a helper: a field holding a run-time local is assigned in
        place; any other field is re-bound (a run-time value declares a new local)."""
        from ..ir.expr import Var
        from ..ir.stmt import Assign, LetStmt
        from .values import describe, is_ir

        obj = self.expr(target.value)
        if not is_meta_object(obj):
            raise self.error(f"cannot assign the attribute {target.attr!r} of {describe(obj)}",
                             "only fields of @T.meta_class objects can be assigned in a kernel")
        cur = vars(obj).get(target.attr)
        if isinstance(cur, Var) and id(cur) in self.mutable:
            value = self.coerce(value, cur.type, f"field {target.attr!r}")
            self.emit(Assign(cur, value, span=self.span(node)))
            return
        if self.rt_depth > self.meta_depth.get(id(obj), 0):
            raise self.error(f"field {target.attr!r} of the {type(obj).__name__} object does not "
                             "hold a run-time local, so it cannot be re-bound inside a run-time "
                             "`if` or loop", f"give it one where the object is made: "
                             f"self.{target.attr} = T.local_scalar(\"int32\")")
        if is_ir(value) and not self.is_alias(value):
            var = Var(f"{type(obj).__name__.lower()}_{target.attr}", value.dtype,
                      span=self.span(node))
            self.mutable[id(var)] = len(self.scopes)
            self.pinned.append(var)
            self.emit(LetStmt(var, value, span=self.span(node)))
            value = var
        if isinstance(value, Var) and id(value) in self.mutable:
            self.field_vars.add(id(value))
        setattr(obj, target.attr, value)


class _SiteOverride:
    def __init__(self, parser, span):
        self.parser, self.span = parser, span

    def __enter__(self):
        self.saved, self.parser.site = self.parser.site, self.span

    def __exit__(self, *exc):
        self.parser.site = self.saved


def _fixed(scope: dict):
    return lambda: scope
