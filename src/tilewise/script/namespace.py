"""The ``T`` and ``Tx`` namespaces a kernel is written with.

Every name is a :class:`Builtin` the parser calls with evaluated arguments; nothing here
runs on its own outside a ``@T.prim_func`` body except ``T.prim_func`` itself and the dtype
objects. ``T.ptx.*`` / ``T.cuda.*`` / math names are resolved against the PTX table, so an
instruction exists in the language exactly when the table has it.
"""

from __future__ import annotations

from ..errors import ScriptError, did_you_mean
from ..ir import dtype as dt
from ..ir.dtype import DataType
from ..ptx import table as ptx_table
from ..tile import primitives


class Builtin:
    """A name the parser understands; ``handler(parser, node, args, kwargs)``."""

    def __init__(self, name: str, handler):
        self.name = name
        self.handler = handler

    def __repr__(self) -> str:
        return f"<tilewise builtin T.{self.name}>"

    def __call__(self, *a, **k):
        return build(self, f"T.{self.name}", a, k)


class TypeCtor(Builtin):
    """``T.float16``: a dtype in annotations, a typed constant or cast when called."""

    def __init__(self, dtype: DataType):
        super().__init__(dtype.name, None)
        self.dtype = dtype

    def __str__(self) -> str:
        return self.dtype.name

    def __call__(self, *args, **kwargs):
        """``M = T.int32()`` outside a kernel: a symbolic size (named after the name a
        kernel reads it by); anything else only works inside a kernel."""
        if args or kwargs:
            return super().__call__(*args, **kwargs)
        from ..ir.expr import SizeVar

        if self.dtype.name not in ("int32", "int64"):
            raise ScriptError(f"T.{self.name}() cannot be a symbolic size",
                              hint="use T.int32() or T.int64()")
        return SizeVar("", self.dtype)


class PtxPath:
    """``T.ptx.cp_async.commit_group``: walks the PTX table's dotted names."""

    def __init__(self, path: str):
        self._path = path

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        path = f"{self._path}.{name}"
        if path not in ptx_table.prefixes():
            known = sorted(n[len(self._path) + 1:] for n in ptx_table.PTX_OPS
                           if n.startswith(self._path + "."))
            raise ScriptError(f"T.{path} is not an instruction tilewise knows",
                              hint=did_you_mean(name, {k.split('.')[0] for k in known}))
        return PtxPath(path)

    @property
    def op(self):
        return ptx_table.PTX_OPS.get(self._path)

    def __call__(self, *a, **k):
        return build(self, f"T.{self._path}", a, k)

    def __repr__(self) -> str:
        return f"<T.{self._path}>"


class _Namespace:
    """Attribute access with a clear error for unknown names."""

    _label = "T"

    def __init__(self, entries: dict):
        object.__setattr__(self, "_entries", entries)

    def __getattr__(self, name: str):
        entries = object.__getattribute__(self, "_entries")
        if name in entries:
            return entries[name]
        if name.startswith("__"):
            raise AttributeError(name)
        raise ScriptError(f"{self._label}.{name} does not exist",
                          hint=did_you_mean(name, [k for k in entries if not k.startswith("_")]))

    def __dir__(self):
        return list(object.__getattribute__(self, "_entries"))


class TxScope:
    """``Tx.cta``: the execution scope of the tile primitive that follows."""

    def __init__(self, scope: str):
        self.scope = scope

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return TilePrimitiveRef(primitives.lookup(name), self.scope)


class TilePrimitiveRef:
    def __init__(self, prim, scope: str):
        self.prim = prim
        self.scope = scope

    def __call__(self, *a, **k):
        return build(self, f"Tx.{self.scope}.{self.prim.name}", a, k)


def build(fn, what: str, args, kwargs):
    """A ``T.*``/``Tx.*`` call made by Python code: inside a kernel being parsed (a
    meta-class ``__init__`` or plain method, see :mod:`.inline`) it builds IR there, at the
    Python line that called it; anywhere else it is an error."""
    from .inline import active_parser, user_span

    p = active_parser()
    if p is None:
        raise ScriptError(f"{what} can only be used inside a @T.prim_func kernel",
                          hint="call it from the body of a function decorated with @T.prim_func")
    with p.python_call_site(user_span(p)):
        v = p.call_builtin(fn, list(args), dict(kwargs))
        if isinstance(fn, PtxPath) and fn.op is not None and fn.op.returns is None:
            from ..ir.stmt import Evaluate

            p.emit(Evaluate(v, span=p.span()))
            return None
        return v


class _Tx(_Namespace):
    _label = "Tx"

    def __getattr__(self, name: str):
        if name in primitives.SCOPE_NAMES:
            return TxScope(primitives.SCOPE_NAMES[name])
        if name.startswith("__"):
            raise AttributeError(name)
        if name in primitives.PRIMITIVES:
            return TilePrimitiveRef(primitives.PRIMITIVES[name], "thread")
        raise ScriptError(f"Tx.{name} is neither a scope nor a tile primitive",
                          hint=did_you_mean(name, list(primitives.SCOPE_NAMES) +
                                            list(primitives.PRIMITIVES)))


def _build_T(handlers: dict, prim_func) -> _Namespace:
    from .inline import inline, meta_class

    entries: dict = {"prim_func": prim_func, "inline": inline, "meta_class": meta_class}
    for name, h in handlers.items():
        entries[name] = Builtin(name, h)
    for name, t in dt.DTYPES.items():
        entries[name] = TypeCtor(t)
    entries["ptx"] = PtxPath("ptx")
    entries["cuda"] = PtxPath("cuda")
    for name in ptx_table.MATH_OPS:
        entries[name] = PtxPath(name)
    return _Namespace(entries)


def make_namespaces(handlers: dict, prim_func):
    """``T`` (the builtins ``handlers``, ``prim_func``, dtypes, the PTX table) and ``Tx``."""
    return _build_T(handlers, prim_func), _Tx({})
