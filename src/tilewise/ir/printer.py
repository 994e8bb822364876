"""The IR as readable text.

For a kernel as the user wrote it (before dispatch) the text is itself a tilewise program:
``parse(script(f))`` is structurally equal to ``f``. Names are made unique by suffixes so
that the text never shadows. After lowering the same printer shows the flat IR.
"""

from __future__ import annotations

import math

from .dtype import DataType, float32, int32
from .expr import (AddressOf, BinOp, BufferLoad, BufferRegion, Call, Cast, Expr, FloatImm,
                   IntImm, Select, StringImm, UnaryOp, Var)
from .stmt import (Assign, Buffer, BufferStore, DeclBuffer, Evaluate, For, IfThenElse,
                   LetStmt, PrimFunc, SeqStmt, Stmt, TileCall, While)

_PREC = {"or": 1, "and": 2, "not": 3, "<": 4, "<=": 4, ">": 4, ">=": 4, "==": 4, "!=": 4,
         "|": 5, "^": 6, "&": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "//": 10,
         "%": 10, "neg": 11, "~": 11}
SCOPE_PREFIX = {"thread": "Tx.thread", "warp": "Tx.warp", "warpgroup": "Tx.wg", "cta": "Tx.cta",
                "cluster": "Tx.cluster"}


class _Names:
    """Unique, stable names for Vars and Buffers."""

    def __init__(self):
        self.by_obj: dict[int, str] = {}
        self.used: set[str] = set()

    def __call__(self, obj) -> str:
        name = self.by_obj.get(id(obj))
        if name is not None:
            return name
        base = _ident(obj.name)
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        self.by_obj[id(obj)] = name
        return name


def _ident(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "v"
    return "_" + out if out[0].isdigit() else out


def _dtype(t: DataType) -> str:
    return f'"{t.name}"'


class Printer:
    def __init__(self):
        self.name = _Names()
        self.lines: list[str] = []

    # ------------------------------------------------------------------ expressions
    def expr(self, e, prec: int = 0) -> str:
        if isinstance(e, (int, float, str, bool)) or e is None:
            return repr(e)
        if isinstance(e, BufferRegion):
            return self.region(e)
        method = getattr(self, "e_" + type(e).__name__)
        return method(e, prec)

    def e_Var(self, e: Var, prec):
        return self.name(e)

    e_SizeVar = e_Var

    def e_IntImm(self, e: IntImm, prec):
        if e.type.name == "bool":
            return "True" if e.value else "False"
        if e.type == int32:
            return str(e.value) if e.value >= 0 or prec == 0 else f"({e.value})"
        return f"T.{e.type.name}({e.value})"

    def e_FloatImm(self, e: FloatImm, prec):
        v = e.value
        text = repr(v) if math.isfinite(v) else f'float("{v!r}")'  # inf, -inf, nan
        if e.type != float32:
            return f"T.{e.type.name}({text})"
        return f"({text})" if prec and text.startswith("-") else text

    def e_StringImm(self, e: StringImm, prec):
        return repr(e.value)

    def e_BinOp(self, e: BinOp, prec):
        if e.op in ("min", "max"):
            return f"T.{e.op}({self.expr(e.a)}, {self.expr(e.b)})"
        p = _PREC[e.op]
        text = f"{self.expr(e.a, p)} {e.op} {self.expr(e.b, p + 1)}"
        return f"({text})" if p < prec or (p == prec and p == 4) else text

    def e_UnaryOp(self, e: UnaryOp, prec):
        p = _PREC["neg" if e.op == "-" else e.op]
        sep = " " if e.op == "not" else ""
        text = f"{e.op}{sep}{self.expr(e.a, p)}"
        return f"({text})" if p < prec else text

    def e_Select(self, e: Select, prec):
        return f"T.select({self.expr(e.cond)}, {self.expr(e.true_value)}, " \
               f"{self.expr(e.false_value)})"

    def e_Cast(self, e: Cast, prec):
        return f"T.cast({self.expr(e.value)}, {_dtype(e.type)})"

    def e_BufferLoad(self, e: BufferLoad, prec):
        return f"{self.name(e.buffer)}[{', '.join(self.expr(i) for i in e.indices)}]"

    def e_AddressOf(self, e: AddressOf, prec):
        if not e.indices:
            return f"T.address_of({self.name(e.buffer)})"
        idx = ", ".join(self.expr(i) for i in e.indices)
        return f"T.address_of({self.name(e.buffer)}[{idx}])"

    def e_Call(self, e: Call, prec):
        n = len(e.args)
        while n and e.args[n - 1] is None:  # omitted optional operands of the PTX table
            n -= 1
        args = [self.expr(a) for a in e.args[:n]]
        args += [f"{k}={self.value(v)}" for k, v in e.kwargs]
        return f"T.{e.op}({', '.join(args)})"

    def value(self, v) -> str:
        if isinstance(v, (Expr, BufferRegion)):
            return self.expr(v)
        if isinstance(v, Buffer):
            return self.name(v)
        if isinstance(v, DataType):
            return _dtype(v)
        if isinstance(v, tuple):
            inner = ", ".join(self.value(x) for x in v)
            return f"({inner},)" if len(v) == 1 else f"({inner})"
        return repr(v)

    def region(self, r: BufferRegion) -> str:
        parts = []
        for rng in r.region:
            start = self.expr(rng.start)
            stop = self.expr(rng.start + rng.extent)
            parts.append(f"{start}:{stop}")
        return f"{self.name(r.buffer)}[{', '.join(parts)}]"

    # ------------------------------------------------------------------ statements
    def emit(self, depth: int, text: str):
        self.lines.append("    " * depth + text)

    def stmt(self, s: Stmt, depth: int):
        getattr(self, "s_" + type(s).__name__)(s, depth)

    def s_SeqStmt(self, s: SeqStmt, depth):
        if not s.stmts:
            self.emit(depth, "pass")
        for x in s.stmts:
            self.stmt(x, depth)

    def s_For(self, s: For, depth):
        fn = "range" if s.kind == "serial" else "T.unroll"
        start = s.start
        if isinstance(start, IntImm) and start.value == 0:
            bounds = self.expr(s.extent)
        else:
            bounds = f"{self.expr(start)}, {self.expr(start + s.extent)}"
        self.emit(depth, f"for {self.name(s.var)} in {fn}({bounds}):")
        self.stmt(s.body, depth + 1)

    def s_While(self, s: While, depth):
        self.emit(depth, f"while {self.expr(s.cond)}:")
        self.stmt(s.body, depth + 1)

    def s_Break(self, s, depth):
        self.emit(depth, "break")

    def s_Continue(self, s, depth):
        self.emit(depth, "continue")

    def s_IfThenElse(self, s: IfThenElse, depth, kw: str = "if"):
        self.emit(depth, f"{kw} {self.expr(s.cond)}:")
        self.stmt(s.then_body, depth + 1)
        e = s.else_body
        if isinstance(e, IfThenElse):
            self.s_IfThenElse(e, depth, "elif")
        elif e is not None:
            self.emit(depth, "else:")
            self.stmt(e, depth + 1)

    def s_LetStmt(self, s: LetStmt, depth):
        self.emit(depth, f"{self.name(s.var)}: T.{s.var.type.name} = {self.expr(s.value)}")

    def s_Assign(self, s: Assign, depth):
        self.emit(depth, f"{self.name(s.var)} = {self.expr(s.value)}")

    def s_BufferStore(self, s: BufferStore, depth):
        idx = ", ".join(self.expr(i) for i in s.indices)
        self.emit(depth, f"{self.name(s.buffer)}[{idx}] = {self.expr(s.value)}")

    def s_Evaluate(self, s: Evaluate, depth):
        self.emit(depth, self.expr(s.value))

    def s_DeclBuffer(self, s: DeclBuffer, depth):
        b = s.buffer
        shape = self.value(tuple(b.shape))
        layout = f", layout={b.layout!r}" if b.layout is not None else ""
        if b.view_of is not None:
            dtype = f", dtype={_dtype(b.dtype)}" if b.dtype != b.view_of.dtype else ""
            dims = ", ".join(str(x) for x in b.shape)
            text = f"{self.name(b.view_of)}.view({dims}{dtype}{layout})"
        elif b.scope == "tmem":
            addr = self.expr(b.allocated_addr) if b.allocated_addr is not None else "None"
            text = (f'T.decl_buffer({shape}, {_dtype(b.dtype)}, scope="tmem", '
                    f"allocated_addr={addr}{layout})")
        else:
            align = f", align={b.align}" if b.align else ""
            text = (f'T.alloc_buffer({shape}, {_dtype(b.dtype)}, scope="{b.scope}"{layout}'
                    f"{align})")
        self.emit(depth, f"{self.name(b)} = {text}")

    def s_TileCall(self, s: TileCall, depth):
        args = [self.value(a) for a in s.args]
        args += [f"{k}={self.value(v)}" for k, v in s.options]
        self.emit(depth, f"{SCOPE_PREFIX[s.scope]}.{s.op}({', '.join(args)})")

    # ------------------------------------------------------------------ function
    def func(self, f: PrimFunc) -> str:
        sizes = f.attr("size_vars", ())
        maps = f.attr("tensor_maps", ())
        hidden = {id(v) for v in sizes} | {id(m.var) for m in maps}
        declared = [p for p in f.params if id(p) not in hidden]
        params = ", ".join(f"{self.name(p)}: T.{p.dtype.name}" for p in declared)
        self.emit(0, "@T.prim_func")
        self.emit(0, f"def {_ident(f.name)}({params}):")
        for v in sizes:
            self.emit(1, f"{self.name(v)} = T.{v.dtype.name}()")
        for p, b in f.buffer_map:
            layout = f", layout={b.layout!r}" if b.layout is not None else ""
            strides = f", strides={self.value(tuple(b.strides))}" if b.strides else ""
            self.emit(1, f"{self.name(b)} = T.match_buffer({self.name(p)}, "
                         f"{self.value(tuple(b.shape))}, {_dtype(b.dtype)}{layout}{strides})")
        for m in maps:  # hidden parameters, encoded from the arrays at launch
            self.emit(1, f"# {self.name(m.var)}: tensor map of {m.buffer.name}, "
                         f"{m.spec.describe()}")
        self.emit(1, "T.device_entry()")
        self._launch(f)
        self.stmt(f.body, 1)
        return "\n".join(self.lines) + "\n"

    def _launch(self, f: PrimFunc):
        groups: dict[tuple, list] = {}
        for b in f.launch:
            groups.setdefault((b.kind, b.extents), []).append(b)
        for (kind, extents), binds in groups.items():
            binds.sort(key=lambda b: b.dim)
            lhs = ", ".join(self.name(b.var) for b in binds)
            self.emit(1, f"{lhs} = T.{kind}([{', '.join(self.expr(e) for e in extents)}])")


def script(node) -> str:
    """Text of a PrimFunc, statement or expression."""
    p = Printer()
    if isinstance(node, PrimFunc):
        return p.func(node)
    if isinstance(node, Stmt):
        p.stmt(node, 0)
        return "\n".join(p.lines) + "\n"
    return p.expr(node)


PrimFunc.printer = script  # ``func.script()`` (the IR's classes do not import their printer)
