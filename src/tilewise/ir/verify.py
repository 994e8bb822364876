"""The IR verifier: run before anything reaches llvmlite or the simulator.

Checks scoping (every Var and Buffer defined before use), index arity, operand types and,
for the flat IR, that no tile-primitive call, multi-dimensional buffer or layout remains.
Each failure is a VerifyError naming the node and, when known, the user's line.
"""

from __future__ import annotations

from ..errors import VerifyError
from . import alu
from .expr import AddressOf, BinOp, BufferLoad, Call, Expr, UnaryOp, Var
from .stmt import (Assign, Break, Buffer, BufferStore, DeclBuffer, For, IfThenElse, LetStmt,
                   PrimFunc, SeqStmt, TileCall, While)
from .visitor import SpanVisitor


class _Verifier(SpanVisitor):
    def __init__(self, func: PrimFunc, flat: bool):
        self.func = func
        self.flat = flat
        self.vars: list[set[int]] = [set()]
        self.bufs: list[set[int]] = [set()]
        self.span = func.span
        self.loop_depth = 0
        for p in func.params:
            self._def_var(p)
        for _, b in func.buffer_map:
            self._def_buf(b)
        for t in func.launch:
            self._def_var(t.var)

    def fail(self, what: str, node, hint: str | None = None):
        raise VerifyError(f"{what} (in {type(node).__name__})",
                          getattr(node, "span", None) or self.span, hint)

    def _def_var(self, v: Var):
        self.vars[-1].add(id(v))

    def _def_buf(self, b: Buffer):
        self.bufs[-1].add(id(b))

    def _known_var(self, v) -> bool:
        return any(id(v) in s for s in self.vars)

    def _check_buf(self, b: Buffer, node):
        if not any(id(b) in s for s in self.bufs):
            self.fail(f"buffer {b.name!r} is used outside the block that declares it", node)

    def scoped(self, body):
        self.vars.append(set())
        self.bufs.append(set())
        self.visit(body)
        self.vars.pop()
        self.bufs.pop()

    # scoping statements
    def visit_SeqStmt(self, s: SeqStmt):
        for x in s.stmts:
            self.visit(x)

    def visit_For(self, s: For):
        self.visit(s.start)
        self.visit(s.extent)
        self.vars.append({id(s.var)})
        self.bufs.append(set())
        self.loop_depth += 1
        self.visit(s.body)
        self.loop_depth -= 1
        self.vars.pop()
        self.bufs.pop()

    def visit_While(self, s: While):
        self.visit(s.cond)
        if s.cond.dtype.kind != "bool":
            self.fail(f"a while condition must be bool, not {s.cond.dtype}", s)
        self.loop_depth += 1
        self.scoped(s.body)
        self.loop_depth -= 1

    def visit_Break(self, s: Break):
        if not self.loop_depth:
            self.fail(f"{type(s).__name__.lower()} outside a loop", s)

    visit_Continue = visit_Break

    def visit_IfThenElse(self, s: IfThenElse):
        self.visit(s.cond)
        self.scoped(s.then_body)
        if s.else_body is not None:
            self.scoped(s.else_body)

    def visit_LetStmt(self, s: LetStmt):
        self.visit(s.value)
        self._def_var(s.var)

    def visit_Assign(self, s: Assign):
        self.visit(s.value)
        if not self._known_var(s.var):
            self.fail(f"assignment to {s.var.name!r} before its declaration", s)

    def visit_DeclBuffer(self, s: DeclBuffer):
        b = s.buffer
        if b.view_of is not None:
            self._check_buf(b.view_of, s)
        if b.allocated_addr is not None:
            self.visit(b.allocated_addr)
        if self.flat and len(b.shape) != 1:
            self.fail(f"buffer {b.name!r} is not flattened", s)
        self._def_buf(b)

    def visit_TileCall(self, s: TileCall):
        if self.flat:
            self.fail(f"tile primitive {s.op!r} was not dispatched", s,
                      "every Tx.* call must be replaced by a variant before lowering")
        self.generic_visit(s)

    def visit_BufferStore(self, s: BufferStore):
        self._access(s.buffer, s.indices, s)
        self.visit(s.value)

    def visit_BufferLoad(self, e: BufferLoad):
        self._access(e.buffer, e.indices, e)

    def visit_AddressOf(self, e: AddressOf):
        self._check_buf(e.buffer, e)
        self.visit(e.indices)

    def visit_BufferRegion(self, r):
        self._check_buf(r.buffer, r)
        self.generic_visit(r)

    def _access(self, b: Buffer, indices, node):
        self._check_buf(b, node)
        if len(indices) != len(b.shape):
            self.fail(f"{b.name!r} has {len(b.shape)} dimensions, indexed with {len(indices)}",
                      node)
        self.visit(indices)

    def visit_Var(self, v: Var):
        if not self._known_var(v):
            self.fail(f"variable {v.name!r} is used outside its scope", v)

    visit_SizeVar = visit_Var

    def visit_BinOp(self, e: BinOp):
        self.visit(e.a)
        self.visit(e.b)
        if e.op not in ("<<", ">>") and e.a.dtype != e.b.dtype:
            self.fail(f"operands of {e.op!r} have types {e.a.dtype} and {e.b.dtype}", e,
                      "cast one side with T.cast(value, dtype)")
        row = alu.BINARY.get(e.op)
        if row is None or not row.takes(e.a.dtype) or (e.op in ("<<", ">>")
                                                       and not e.b.dtype.is_int):
            self.fail(f"operator {e.op!r} is not defined on {e.a.dtype}"
                      + (f" and {e.b.dtype}" if e.b.dtype != e.a.dtype else ""), e)

    def visit_UnaryOp(self, e: UnaryOp):
        self.visit(e.a)
        row = alu.UNARY.get(e.op)
        if row is None or not row.takes(e.a.dtype):
            self.fail(f"operator {e.op!r} is not defined on {e.a.dtype}", e)

    def visit_Call(self, e: Call):
        for a in e.args:
            if isinstance(a, (Expr,)) or hasattr(a, "buffer"):
                self.visit(a)
        for _, v in e.kwargs:
            if isinstance(v, Expr):
                self.visit(v)


def verify(func: PrimFunc, flat: bool = False) -> PrimFunc:
    """Raise VerifyError at the first broken invariant; return ``func`` unchanged."""
    _Verifier(func, flat).visit(func.body)
    return func
