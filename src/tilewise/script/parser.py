"""Python AST -> tilewise IR.

The parser evaluates every expression to either a *compile-time* Python value or an IR
expression (:mod:`.exprs`). Python constructs it does not know are rejected by name, at
the user's line, with what to write instead.

Names follow Python: a name assigned a run-time value is a run-time local from then on
(``LetStmt``, then ``Assign``), carried through loops and merged out of branches; a name
only ever bound to compile-time values stays compile-time. :mod:`.scopes` holds the
binding rules (promotion of loop-carried numbers, merges after ``if``, unassigned names);
:mod:`.control` the statements that apply them (``if``, loops, ``break``/``continue``);
docs/ir.md states them for users.
"""

from __future__ import annotations

import ast
import builtins

from ..errors import ScriptError, Span, TilewiseError, did_you_mean
from ..ir import dtype as dt
from ..ir.expr import AddressOf, BufferRegion, Call, SizeVar, Var
from ..ir.stmt import (Assign, Buffer, BufferStore, Evaluate, LetStmt, PrimFunc, Stmt,
                       ThreadBinding, seq)
from ..ir.visitor import walk
from . import typerules as tr
from .analysis import check_depth, check_source_depth
from .builtins import MetaVar, call
from .control import ControlFlow
from .exprs import PY_BINOP, Expressions
from .inline import Frame, InlineParsing
from .rejected import GENERIC_HINT, REJECTED
from .scopes import UNBOUND, Scope, Unassigned, assigned_names
from .values import describe, is_ir


class Parser(Expressions, InlineParsing, ControlFlow):
    def __init__(self, pyscope: dict, file: str, lines: list[str], line0: int, col0: int):
        self.pyscope = pyscope
        self.file = file
        self.lines = lines
        self.line0 = line0
        self.col0 = col0
        self.scopes: list[Scope] = [Scope("function")]
        self.blocks: list[list[Stmt]] = [[]]
        self.params: list[Var] = []
        self.buffer_map: list[tuple[Var, Buffer]] = []
        self.launch: list[ThreadBinding] = []
        self.size_vars: dict[int, SizeVar] = {}  # id(the user's symbolic var) -> this kernel's
        self.entered = False  # T.device_entry() seen
        self.depth = 0  # nesting of for/if (launch declarations only at depth 0)
        self.rt_depth = 0  # nesting of run-time constructs (device loops, run-time ifs)
        self.loops: list[tuple[str, int]] = []  # ("static" | "device", rt_depth at entry)
        self.exit: str | None = None  # "break" / "continue" once the current path jumped
        self.locals: set[str] = set()  # names the kernel assigns anywhere (Python's rule)
        self.node: ast.AST | None = None
        self.assign_name: str | None = None
        self.assign_names: tuple | None = None  # the names of a tuple target, while parsing
        self.mutable: dict[int, int] = {}  # id(Var) declared by LetStmt -> its scope depth
        self.frames: list[Frame] = []  # the T.inline helpers being parsed into the kernel
        self.via: tuple = ()  # their call sites, innermost first (on every span)
        self.site: Span | None = None  # the Python line running a T.* call (building mode)
        self.meta_depth: dict[int, int] = {}  # id(meta-class object) -> rt_depth it was made at
        self.field_vars: set[int] = set()  # ids of run-time locals held by object fields
        self.orphans: set[int] = set()  # ids of locals of finished helpers (adoptable)
        # every object whose id the maps above hold, kept alive while parsing: a freed
        # object's id is soon another's (CPython reuses the memory), and a stale id made
        # the same source parse differently from run to run (an inline helper's argument
        # taken for an orphan and aliased, or not: one launch-cache key in ~8 processes)
        self.pinned: list = []

    # ------------------------------------------------------------------ plumbing
    def span(self, node: ast.AST | None = None) -> Span | None:
        if self.site is not None:
            return self.site
        node = node or self.node
        if node is None or not hasattr(node, "lineno"):
            return None
        text = self.lines[node.lineno - 1] if node.lineno - 1 < len(self.lines) else None
        pad = " " * self.col0
        return Span(self.file, node.lineno + self.line0, node.col_offset + self.col0,
                    pad + text if text is not None else None, self.via)

    def line(self, node) -> str:
        return f"line {node.lineno + self.line0}" if hasattr(node, "lineno") else "another line"

    def error(self, msg: str, hint: str | None = None, node=None) -> ScriptError:
        return ScriptError(msg, self.span(node), hint)

    def call_builtin(self, fn, args: list, kwargs: dict):
        """A ``T.*`` call made by Python code that builds this kernel (building mode)."""
        return call(self, fn, args, kwargs, None)

    def emit(self, s: Stmt):
        self.blocks[-1].append(s)

    def find(self, name: str):
        """The innermost binding of ``name`` in the function being parsed (the kernel, or
        the T.inline helper being inlined: its scopes end at its frame), a value or an
        Unassigned; UNBOUND when the function has not bound it."""
        for scope in reversed(self.scopes):
            if name in scope.vals:
                return scope.vals[name]
            if scope.kind == "inline":
                break
        return UNBOUND

    def lookup(self, name: str, node):
        v = self.find(name)
        if isinstance(v, Unassigned) and v is not UNBOUND:
            raise self.error(f"{name!r} may be unassigned here: {v.why}",
                             f"give {name!r} a value on every path before this line", node)
        if v is not UNBOUND:
            return v
        if name in self.locals:
            raise self.error(f"{name!r} is read before the kernel assigns it",
                             f"assign {name!r} earlier; a name the kernel assigns is local to "
                             "the kernel (as in Python) and does not come from the enclosing "
                             "scope", node)
        v = self.enclosing(name)
        if v is not UNBOUND:
            return v
        if name in self.pyscope:
            return self.outer_value(name, self.pyscope[name])
        if hasattr(builtins, name):
            return getattr(builtins, name)
        visible = {k for s in self.scopes for k in s.vals} | {
            k for k in self.pyscope if not k.startswith("_")}
        raise self.error(f"name {name!r} is not defined", did_you_mean(name, visible), node)

    def outer_value(self, name: str, v):
        """A value from the enclosing Python scope; a symbolic size (``M = T.int32()``)
        becomes this kernel's own size variable, named after ``name``."""
        if isinstance(v, SizeVar):
            mine = self.size_vars.get(id(v))
            if mine is None:
                mine = v if v.name else SizeVar(name, v.type, span=v.span)
                self.size_vars[id(v)] = mine
            return mine
        return v

    def add_size_var(self, v: SizeVar) -> None:
        self.size_vars[id(v)] = v

    def bind(self, name: str, value, node=None):
        self.scopes[-1].bind(name, value, node)

    def stmts(self, stmts: list[ast.stmt]) -> None:
        """Parse a statement list into the current block (code after a jump is dead)."""
        for s in stmts:
            if self.exit:
                return
            self.stmt(s)

    def block(self, stmts: list[ast.stmt], scope: Scope
              ) -> tuple[list[Stmt], Scope, str | None]:
        """Parse ``stmts`` as the body of a run-time construct, in its own block and
        ``scope``: (statements, scope, how the body's last path jumped or None)."""
        self.scopes.append(scope)
        self.blocks.append([])
        self.depth += 1
        self.rt_depth += 1
        try:
            self.stmts(stmts)
        finally:
            self.depth -= 1
            self.rt_depth -= 1
            self.scopes.pop()
            body = self.blocks.pop()
            jumped, self.exit = self.exit, None
        return body, scope, jumped

    # ------------------------------------------------------------------ statements
    def stmt(self, node: ast.stmt):
        prev, self.node = self.node, node
        try:
            method = getattr(self, "s_" + type(node).__name__, None)
            if method is None:
                what, hint = REJECTED.get(type(node), (type(node).__name__, None))
                raise self.error(f"{what} is not supported in a tilewise kernel",
                                 hint or GENERIC_HINT)
            method(node)
        except TilewiseError as e:
            raise e.with_span(self.span(node)) from None
        finally:
            self.node = prev

    def s_Pass(self, node):
        pass

    def s_Expr(self, node: ast.Expr):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring or comment string
        if not isinstance(node.value, ast.Call):
            raise self.error("an expression statement has no effect",
                             "assign its value or call a T.*/Tx.* function")
        v = self.expr(node.value)
        if isinstance(v, Call):
            self.emit(Evaluate(v, span=self.span(node)))

    def s_Assign(self, node: ast.Assign):
        if len(node.targets) != 1:
            raise self.error("chained assignment (a = b = ...) is not supported")
        target = node.targets[0]
        self.assign_name = target.id if isinstance(target, ast.Name) else None
        if isinstance(target, ast.Tuple):  # bn, bm = T.cta_id([...]): the names, in order
            self.assign_names = tuple(e.id if isinstance(e, ast.Name) else None
                                      for e in target.elts)
        self.meta_target = node.value
        try:
            value = self.expr(node.value)
        finally:
            self.assign_name = self.assign_names = self.meta_target = None
        if isinstance(value, MetaVar):
            if not isinstance(target, ast.Name):
                raise self.error("T.meta_var(...) names a value: assign it to one name")
            self.bind(target.id, value.value, node)
            return
        self.assign(target, value, node)

    def s_AnnAssign(self, node: ast.AnnAssign):
        if not isinstance(node.target, ast.Name) or node.value is None:
            raise self.error("annotated assignment must be `name: T.<dtype> = value`")
        ann = self.expr(node.annotation)
        t = getattr(ann, "dtype", None)
        if not isinstance(t, dt.DataType) or t.kind == "handle":
            raise self.error("the annotation of a local must be a dtype such as T.int32")
        name = node.target.id
        value = tr.coerce(self, self.expr(node.value), t, f"local {name!r}")
        old = self.find(name)
        if self.scopes[-1].vals.get(name, UNBOUND) is old:
            old = UNBOUND  # a declaration in the block that bound it: a new local
        if isinstance(old, Unassigned) and old.var is not None:
            old = old.var
        if isinstance(old, Var) and id(old) in self.mutable:
            if old.dtype != t:
                raise self.error(f"{name!r} is already a {old.dtype} local; a name keeps one "
                                 "type", "use a new name for a value of another type")
            self.emit(Assign(old, value, span=self.span(node)))
            self.bind(name, old, node)
            return
        self.declare(name, value, node, t)

    def declare(self, name: str, value, node, t=None) -> Var:
        if t is None and isinstance(value, Var) and id(value) in self.orphans:
            self.orphans.discard(id(value))  # a finished helper's result: adopt it
            self.bind(name, value, node)
            return value
        var = Var(name, t or value.dtype, span=self.span(node))
        self.mutable[id(var)] = len(self.scopes)
        self.pinned.append(var)
        if self.frames:
            self.frames[-1].declared.add(id(var))
        self.emit(LetStmt(var, value, span=self.span(node)))
        self.bind(name, var, node)
        return var

    def s_AugAssign(self, node: ast.AugAssign):
        op = PY_BINOP.get(type(node.op))
        cur = self.expr(node.target)
        value = self.arith(op, cur, self.expr(node.value), node)
        self.assign(node.target, value, node)

    def assign(self, target, value, node):
        if isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, (tuple, list)) or len(value) != len(target.elts):
                raise self.error(f"cannot unpack {describe(value)} into "
                                 f"{len(target.elts)} names")
            for t, v in zip(target.elts, value):
                self.assign(t, v, node)
            return
        if isinstance(target, ast.Subscript):
            return self.store(target, value, node)
        if isinstance(target, ast.Attribute):
            return self.assign_field(target, value, node)
        if not isinstance(target, ast.Name):
            raise self.error("only names, buffer elements, fields and tuples can be assigned")
        name = target.id
        old = self.find(name)
        fixed = isinstance(old, Var) and id(old) not in self.mutable and old.name == name
        if self.scopes[-1].vals.get(name, UNBOUND) is old and not isinstance(old, Unassigned) \
                and not fixed:
            old = UNBOUND  # re-binding in the block that bound it: a new value, any type
        if isinstance(old, Unassigned) and old.var is not None:
            self.emit(Assign(old.var, tr.coerce(self, value, old.var.type, f"local {name!r}"),
                             span=self.span(node)))
            self.bind(name, old.var, node)  # assigned on this path now
        elif isinstance(old, Var) and id(old) in self.mutable:
            value = tr.coerce(self, value, old.type, f"local {name!r}")
            self.emit(Assign(old, value, span=self.span(node)))
        elif isinstance(old, Unassigned) and self.is_alias(value):
            self.bind(name, value if not isinstance(value, AddressOf)
                      else self.address_alias(value, name), node)
        elif fixed:
            raise self.error(f"{name!r} is a loop or thread variable (or a size or "
                             "parameter) and cannot be assigned", "use a new name")
        elif is_ir(value):
            self.declare(name, value, node)
        else:
            self.bind(name, value, node)

    def is_alias(self, value) -> bool:
        """Values a name refers to rather than copies: launch, size and parameter
        variables (``tid = T.thread_id([128])``) and addresses."""
        if isinstance(value, AddressOf):
            return True
        return isinstance(value, Var) and (isinstance(value, SizeVar) or value in self.params
                                           or any(b.var is value for b in self.launch))

    def address_alias(self, value: AddressOf, name: str) -> AddressOf:
        """``p = T.address_of(buf[i])`` names the address expression itself (addresses are
        not stored in locals); so its index may not use a local that can still change."""
        changing = []
        walk(value, lambda n: changing.append(n) if isinstance(n, Var)
             and id(n) in self.mutable else None)
        if changing:
            raise self.error(f"{name!r} would hold an address indexed by the changing local "
                             f"{changing[0].name!r}",
                             "write T.address_of(...) where the address is used")
        return value

    def coerce(self, value, t: dt.DataType, what: str):
        return tr.coerce(self, value, t, what)

    def store(self, target: ast.Subscript, value, node):
        buf = self.expr(target.value)
        if not isinstance(buf, Buffer):
            raise self.error(f"cannot assign into {describe(buf)}",
                             "only buffer elements can be assigned with [...]")
        idx = self.index(buf, target.slice, target)
        if isinstance(idx, BufferRegion):
            raise self.error("assigning to a slice is not supported",
                             "copy tiles with Tx.<scope>.copy(dst, src)")
        value = tr.coerce(self, value, buf.dtype, f"buffer {buf.name!r}")
        self.emit(BufferStore(buf, idx.indices, value, span=self.span(node)))


def _param(p: Parser, a: ast.arg) -> Var:
    """A kernel parameter: ``x_ptr: T.handle`` (an array) or ``n: T.int32`` (a scalar
    passed by value)."""
    if a.annotation is None:
        raise p.error(f"parameter {a.arg!r} has no annotation",
                      f"write {a.arg}: T.handle for an array or {a.arg}: T.int32 (or another "
                      "scalar dtype) for a scalar", a)
    try:
        ann = p.expr(a.annotation)
    except TilewiseError:
        ann = None
    t = getattr(ann, "dtype", None)
    if not isinstance(t, dt.DataType):
        raise p.error(f"parameter {a.arg!r} has an annotation tilewise does not know",
                      f"write {a.arg}: T.handle for an array or {a.arg}: T.int32 (or another "
                      "scalar dtype) for a scalar", a)
    if t.name.startswith("float8"):
        raise p.error(f"parameter {a.arg!r}: {t} scalars cannot be passed to a kernel",
                      "pass it as T.float16 or T.float32 and convert inside", a)
    return Var(a.arg, t, span=p.span(a))


def _check_sizes_bindable(p: Parser, sizes) -> None:
    """Each symbolic size must be, on its own, a dimension or stride of some array: that is
    where the launch reads its value."""
    bare = {id(e) for _, b in p.buffer_map for e in b.shape + (b.strides or ())
            if isinstance(e, SizeVar)}
    for v in sizes:
        if id(v) not in bare:
            raise ScriptError(f"symbolic size {v.name!r} is not, on its own, a dimension or "
                              "stride of any T.match_buffer, so a launch cannot know its value",
                              v.span or p.span(), f"use {v.name} alone as a dimension (for "
                              f"example ({v.name}, 64)) of some buffer")


def parse_function(fdef: ast.FunctionDef, pyscope: dict, file: str, lines: list[str],
                   line0: int, col0: int) -> PrimFunc:
    p = Parser(pyscope, file, lines, line0, col0)
    p.node = fdef
    args = fdef.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.posonlyargs:
        raise p.error("kernel parameters must be plain names annotated with T.handle or a "
                      "scalar dtype")
    check_source_depth(fdef, p.error)
    p.locals = assigned_names(fdef.body)
    for a in args.args:
        var = _param(p, a)
        p.params.append(var)
        p.bind(a.arg, var, a)
    p.stmts(fdef.body)
    if not p.entered:
        raise p.error("the kernel never calls T.device_entry()",
                      "call T.device_entry() after the T.match_buffer lines", fdef)
    body = seq(*p.blocks[0])
    sizes = tuple(p.size_vars.values())
    _check_sizes_bindable(p, sizes)
    attrs = (("size_vars", sizes),) if sizes else ()
    func = PrimFunc(fdef.name, tuple(p.params) + sizes, tuple(p.buffer_map), tuple(p.launch),
                    body, attrs=attrs, span=p.span(fdef))
    func.launch_config  # noqa: B018 - checks that the launch declarations agree
    check_depth(func)
    return func
