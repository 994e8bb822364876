"""Python AST -> tilewise IR.

The parser evaluates every expression to either a *compile-time* Python value (shapes,
dtypes, layouts, ``WIDTH``, list comprehensions over ranges) or an IR expression (thread
ids, buffer loads, scalar locals). Python constructs it does not know are rejected by
name, at the user's line, with what to write instead.

Scalar locals: ``x = <run-time value>`` declares a local (``LetStmt``); assigning again
re-assigns it. ``x = 4`` binds a compile-time constant; write ``x: T.int32 = 4`` for a
run-time variable initialised to 4. Names bound inside a loop or branch are local to it.
"""

from __future__ import annotations

import ast
import builtins
import operator

from ..errors import ScriptError, Span, TilewiseError, did_you_mean
from ..ir import dtype as dt
from ..ir.expr import (AddressOf, BufferLoad, BufferRegion, Call, Expr, IntImm, Range, Var,
                       as_int, binop, cmp, const, select)
from ..ir.stmt import (Assign, Buffer, BufferStore, Evaluate, For, IfThenElse, LetStmt,
                       PrimFunc, Stmt, ThreadBinding, seq)
from ..ir.visitor import walk
from .analysis import const_difference
from .rejected import GENERIC_HINT, REJECTED
from .values import LoopRange as _LoopRange
from .values import describe as _describe
from .values import is_ir

_PY_BINOP = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
             ast.Mod: "%", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<",
             ast.RShift: ">>", ast.MatMult: "@", ast.Pow: "**"}
_PY_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_PY_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
           "//": operator.floordiv, "%": operator.mod, "&": operator.and_, "|": operator.or_,
           "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift,
           "@": operator.matmul, "**": operator.pow, "<": operator.lt, "<=": operator.le,
           ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne}



class Parser:
    def __init__(self, pyscope: dict, file: str, lines: list[str], line0: int, col0: int):
        self.pyscope = pyscope
        self.file = file
        self.lines = lines
        self.line0 = line0
        self.col0 = col0
        self.scopes: list[dict] = [{}]
        self.blocks: list[list[Stmt]] = [[]]
        self.params: list[Var] = []
        self.buffer_map: list[tuple[Var, Buffer]] = []
        self.launch: list[ThreadBinding] = []
        self.entered = False  # T.device_entry() seen
        self.depth = 0  # nesting of for/if (launch declarations only at depth 0)
        self.node: ast.AST | None = None
        self.assign_name: str | None = None
        self.mutable: set[int] = set()  # ids of Vars declared by LetStmt

    # ------------------------------------------------------------------ plumbing
    def span(self, node: ast.AST | None = None) -> Span | None:
        node = node or self.node
        if node is None or not hasattr(node, "lineno"):
            return None
        text = self.lines[node.lineno - 1] if node.lineno - 1 < len(self.lines) else None
        pad = " " * self.col0
        return Span(self.file, node.lineno + self.line0, node.col_offset + self.col0,
                    pad + text if text is not None else None)

    def error(self, msg: str, hint: str | None = None, node=None) -> ScriptError:
        return ScriptError(msg, self.span(node), hint)

    def emit(self, s: Stmt):
        self.blocks[-1].append(s)

    def lookup(self, name: str, node):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in self.pyscope:
            return self.pyscope[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        visible = {k for s in self.scopes for k in s} | {
            k for k in self.pyscope if not k.startswith("_")}
        raise self.error(f"name {name!r} is not defined", did_you_mean(name, visible), node)

    def bind(self, name: str, value):
        self.scopes[-1][name] = value

    def block(self, stmts: list[ast.stmt]) -> Stmt:
        self.scopes.append({})
        self.blocks.append([])
        self.depth += 1
        try:
            for s in stmts:
                self.stmt(s)
        finally:
            self.depth -= 1
            self.scopes.pop()
            body = self.blocks.pop()
        return seq(*body) if body else seq()

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
        try:
            value = self.expr(node.value)
        finally:
            self.assign_name = None
        self.assign(target, value, node)

    def s_AnnAssign(self, node: ast.AnnAssign):
        if not isinstance(node.target, ast.Name) or node.value is None:
            raise self.error("annotated assignment must be `name: T.<dtype> = value`")
        ann = self.expr(node.annotation)
        t = getattr(ann, "dtype", None)
        if not isinstance(t, dt.DataType):
            raise self.error("the annotation of a local must be a dtype such as T.int32")
        value = self.expr(node.value)
        value = self.coerce(value, t, f"local {node.target.id!r}")
        var = Var(node.target.id, t, span=self.span(node))
        self.mutable.add(id(var))
        self.emit(LetStmt(var, value, span=self.span(node)))
        self.bind(node.target.id, var)

    def s_AugAssign(self, node: ast.AugAssign):
        op = _PY_BINOP.get(type(node.op))
        cur = self.expr(node.target)
        value = self.arith(op, cur, self.expr(node.value), node)
        self.assign(node.target, value, node)

    def assign(self, target, value, node):
        if isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, (tuple, list)) or len(value) != len(target.elts):
                raise self.error(f"cannot unpack {_describe(value)} into "
                                 f"{len(target.elts)} names")
            for t, v in zip(target.elts, value):
                self.assign(t, v, node)
            return
        if isinstance(target, ast.Subscript):
            return self.store(target, value, node)
        if not isinstance(target, ast.Name):
            raise self.error("only names, buffer elements and tuples can be assigned")
        name = target.id
        old = next((s[name] for s in reversed(self.scopes) if name in s), None)
        if isinstance(old, Var) and id(old) in self.mutable:
            value = self.coerce(value, old.type, f"local {name!r}")
            self.emit(Assign(old, value, span=self.span(node)))
        elif old is None and isinstance(value, Var) and any(b.var is value for b in self.launch):
            self.bind(name, value)  # tid = T.thread_id([128]) names the launch variable
        elif old is None and isinstance(value, AddressOf):
            self.bind(name, self.address_alias(value, name))
        elif isinstance(old, Var):
            raise self.error(f"{name!r} is a loop or thread variable and cannot be assigned",
                             "use a new name")
        elif is_ir(value):
            var = Var(name, value.dtype, span=self.span(node))
            self.mutable.add(id(var))
            self.emit(LetStmt(var, value, span=self.span(node)))
            self.bind(name, var)
        else:
            self.bind(name, value)

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

    def coerce(self, value, t: dt.DataType, what: str) -> Expr:
        if not is_ir(value):
            if isinstance(value, (bool, int, float)):
                if isinstance(value, float) and not t.is_float:
                    raise self.error(f"{what} holds {t}, the value {value!r} is a float",
                                     f"write T.cast({value!r}, \"{t}\") or use an int")
                return const(value, t) if t.is_int or t.is_float else const(value)
            raise self.error(f"{what} cannot hold {_describe(value)}")
        if value.dtype != t:
            if isinstance(value, IntImm) and t.is_int:
                return IntImm(value.value, t)
            raise self.error(f"{what} holds {t} but the value is {value.dtype}",
                             f'write T.cast(value, "{t}") to convert')
        return value

    def store(self, target: ast.Subscript, value, node):
        buf = self.expr(target.value)
        if not isinstance(buf, Buffer):
            raise self.error(f"cannot assign into {_describe(buf)}",
                             "only buffer elements can be assigned with [...]")
        idx = self.index(buf, target.slice, target)
        if isinstance(idx, BufferRegion):
            raise self.error("assigning to a slice is not supported",
                             "copy tiles with Tx.<scope>.copy(dst, src)")
        value = self.coerce(value, buf.dtype, f"buffer {buf.name!r}")
        self.emit(BufferStore(buf, idx.indices, value, span=self.span(node)))

    def s_For(self, node: ast.For):
        if node.orelse:
            raise self.error("for/else is not supported")
        if not isinstance(node.target, ast.Name):
            raise self.error("the loop variable must be a single name")
        it = self.expr(node.iter)
        if isinstance(it, _LoopRange):
            var = Var(node.target.id, it.start.dtype, span=self.span(node))
            self.scopes.append({node.target.id: var})
            try:
                body = self.block(node.body)
            finally:
                self.scopes.pop()
            self.emit(For(var, it.start, it.extent, it.kind, body, span=self.span(node)))
            return
        if isinstance(it, (list, tuple)):
            for v in it:  # compile-time unrolling over a Python sequence
                self.scopes.append({node.target.id: v})
                try:
                    self.emit(self.block(node.body))
                finally:
                    self.scopes.pop()
            return
        raise self.error(f"cannot loop over {_describe(it)}",
                         "loop over range(...), T.serial(...), T.unroll(...) or a Python list")

    def s_If(self, node: ast.If):
        cond = self.expr(node.test)
        if not is_ir(cond):
            chosen = node.body if cond else node.orelse
            self.emit(self.block(chosen))
            return
        if cond.dtype != dt.bool_:
            cond = cmp("!=", cond, 0)
        then = self.block(node.body)
        other = self.block(node.orelse) if node.orelse else None
        self.emit(IfThenElse(cond, then, other, span=self.span(node)))

    # ------------------------------------------------------------------ expressions
    def expr(self, node: ast.expr):
        method = getattr(self, "e_" + type(node).__name__, None)
        if method is None:
            what, hint = REJECTED.get(type(node), (type(node).__name__, None))
            raise self.error(f"{what} is not supported in a tilewise kernel",
                             hint or GENERIC_HINT, node)
        prev, self.node = self.node, node
        try:
            return method(node)
        except TilewiseError as e:
            raise e.with_span(self.span(node)) from None
        finally:
            self.node = prev

    def e_Constant(self, node):
        return node.value

    def e_Name(self, node):
        return self.lookup(node.id, node)

    def e_Attribute(self, node: ast.Attribute):
        base = self.expr(node.value)
        if isinstance(base, Buffer):
            from .builtins import buffer_attr

            return buffer_attr(self, base, node.attr)
        if is_ir(base):
            raise self.error(f"a run-time value has no attribute {node.attr!r}")
        try:
            return getattr(base, node.attr)
        except AttributeError:
            names = [n for n in dir(base) if not n.startswith("_")]
            raise self.error(f"{_describe(base)} has no attribute {node.attr!r}",
                             did_you_mean(node.attr, names)) from None

    def e_Tuple(self, node):
        return tuple(self.elements(node.elts))

    def e_List(self, node):
        return list(self.elements(node.elts))

    def e_Dict(self, node):
        return {self.expr(k): self.expr(v) for k, v in zip(node.keys, node.values)}

    def elements(self, elts):
        out = []
        for e in elts:
            if isinstance(e, ast.Starred):
                v = self.expr(e.value)
                if is_ir(v) or not hasattr(v, "__iter__"):
                    raise self.error(f"cannot splat {_describe(v)} with *", node=e)
                out.extend(v)
            else:
                out.append(self.expr(e))
        return out

    def e_Slice(self, node: ast.Slice):
        part = [None if x is None else self.expr(x) for x in (node.lower, node.upper, node.step)]
        return slice(*part)

    def e_ListComp(self, node: ast.ListComp):
        out: list = []
        self._comp(node.generators, 0, lambda: out.append(self.expr(node.elt)))
        return out

    e_GeneratorExp = e_ListComp

    def _comp(self, gens, i, emit):
        if i == len(gens):
            emit()
            return
        g = gens[i]
        it = self.expr(g.iter)
        if is_ir(it) or not hasattr(it, "__iter__"):
            raise self.error("a comprehension must iterate over a compile-time sequence",
                             "use range(n) with n known at compile time", node=g.iter)
        for v in it:
            self.scopes.append({})
            try:
                self.assign_py(g.target, v)
                if all(self._truth(self.expr(c)) for c in g.ifs):
                    self._comp(gens, i + 1, emit)
            finally:
                self.scopes.pop()

    def assign_py(self, target, v):
        if isinstance(target, ast.Name):
            self.bind(target.id, v)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t, x in zip(target.elts, v):
                self.assign_py(t, x)
        else:
            raise self.error("unsupported comprehension target", node=target)

    def _truth(self, v) -> bool:
        if is_ir(v):
            raise self.error("a comprehension condition must be known at compile time")
        return bool(v)

    def e_BinOp(self, node: ast.BinOp):
        op = _PY_BINOP[type(node.op)]
        return self.arith(op, self.expr(node.left), self.expr(node.right), node)

    def arith(self, op: str, a, b, node):
        if not is_ir(a) and not is_ir(b):
            try:
                return _PY_OPS[op](a, b)
            except TilewiseError:
                raise
            except Exception as e:
                raise self.error(f"{_describe(a)} {op} {_describe(b)} failed: {e}") from None
        if op in ("@", "**"):
            raise self.error(f"operator {op!r} is not supported on run-time values",
                             "use T.pow(a, b) for powers" if op == "**" else None)
        self.check_operands(op, a, b)
        if op in ("/", "//", "%") and not is_ir(b) and b == 0:
            raise self.error(f"division by zero: the right side of {op!r} is the constant 0",
                             "divide by a non-zero value")
        return binop(op, a, b, self.span(node))

    def check_operands(self, op, a, b):
        for x in (a, b):
            if not is_ir(x) and not isinstance(x, (int, float, bool)):
                raise self.error(f"cannot combine {_describe(x)} with a run-time value by {op!r}")
        if is_ir(a) and is_ir(b) and a.dtype != b.dtype and op not in ("<<", ">>"):
            raise self.error(f"operands of {op!r} have different types: {a.dtype} and {b.dtype}",
                             f'convert one side with T.cast(value, "{a.dtype}")')
        ir = a if is_ir(a) else b
        lit = b if is_ir(a) else a
        if isinstance(lit, float) and not ir.dtype.is_float:
            raise self.error(f"mixing {ir.dtype} with the float literal {lit!r}",
                             "cast the run-time value with T.cast(value, \"float32\")")

    def e_UnaryOp(self, node: ast.UnaryOp):
        v = self.expr(node.operand)
        if not is_ir(v):
            return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
                    ast.Invert: operator.invert}[type(node.op)](v)
        from ..ir.expr import UnaryOp

        if isinstance(node.op, ast.UAdd):
            return v
        op = {ast.USub: "-", ast.Not: "not", ast.Invert: "~"}[type(node.op)]
        return UnaryOp(op, v, span=self.span(node))

    def e_BoolOp(self, node: ast.BoolOp):
        op = "and" if isinstance(node.op, ast.And) else "or"
        out = self.expr(node.values[0])
        for v_node in node.values[1:]:
            if not is_ir(out) and (not out if op == "and" else out):
                return out  # decided at compile time: the rest is not even parsed
            v = self.expr(v_node)
            if not is_ir(out) and not is_ir(v):
                out = (out and v) if op == "and" else (out or v)
            else:
                out = binop(op, self.truthy(out), self.truthy(v), self.span(node))
        return out

    def truthy(self, v):
        if is_ir(v) and v.dtype != dt.bool_:
            return cmp("!=", v, 0)
        return v

    def e_Compare(self, node: ast.Compare):
        left = self.expr(node.left)
        out = None
        for opnode, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node)
            if type(opnode) not in _PY_CMP:
                raise self.error(f"comparison {type(opnode).__name__} is not supported")
            op = _PY_CMP[type(opnode)]
            part = self.arith(op, left, right, node)
            if out is None:
                out = part
            elif is_ir(out) or is_ir(part):
                out = binop("and", self.truthy(out), self.truthy(part))
            else:
                out = out and part
            left = right
        return out

    def e_IfExp(self, node: ast.IfExp):
        c = self.expr(node.test)
        if not is_ir(c):
            return self.expr(node.body) if c else self.expr(node.orelse)
        return select(self.truthy(c), self.expr(node.body), self.expr(node.orelse))

    def e_Subscript(self, node: ast.Subscript):
        base = self.expr(node.value)
        if isinstance(base, Buffer):
            return self.index(base, node.slice, node)
        if is_ir(base):
            raise self.error("a run-time value cannot be indexed")
        key = self.expr(node.slice)
        if is_ir(key):
            raise self.error(f"cannot index {_describe(base)} with a run-time value")
        try:
            return base[key]
        except TilewiseError:
            raise
        except Exception as e:
            raise self.error(f"indexing {_describe(base)} failed: {e}") from None

    def index(self, buf: Buffer, slice_node, node):
        key = self.expr(slice_node)
        items = list(key) if isinstance(key, tuple) else [key]
        if len(items) != len(buf.shape):
            raise self.error(f"{buf.name!r} has {len(buf.shape)} dimension(s) "
                             f"{tuple(buf.shape)}, indexed with {len(items)}",
                             f"write {buf.name}[{_index_names(len(buf.shape))}]")
        if not any(isinstance(i, slice) for i in items):
            idx = tuple(self.index_value(i, n, d, buf) for d, (i, n) in
                        enumerate(zip(items, buf.shape)))
            return BufferLoad(buf, idx, span=self.span(node))
        ranges = tuple(self.range_of(i, n, d, buf) for d, (i, n) in
                       enumerate(zip(items, buf.shape)))
        return BufferRegion(buf, ranges, span=self.span(node))

    def index_value(self, i, n, d, buf):
        if is_ir(i):
            if not i.dtype.is_int:
                raise self.error(f"index {d} of {buf.name!r} has type {i.dtype}, not an integer")
            return i
        if not isinstance(i, int) or isinstance(i, bool):
            raise self.error(f"index {d} of {buf.name!r} is {_describe(i)}, not an integer")
        if not 0 <= i < n:
            raise self.error(f"index {i} is out of bounds for dimension {d} of {buf.name!r} "
                             f"(size {n})", f"use an index in 0..{n - 1}")
        return const(i)

    def range_of(self, i, n, d, buf) -> Range:
        if not isinstance(i, slice):
            return Range(self.index_value(i, n, d, buf), 1)
        if i.step not in (None, 1):
            raise self.error("strided slices are not supported", "use a step of 1")
        start = 0 if i.start is None else i.start
        stop = n if i.stop is None else i.stop
        ext = const_difference(stop, start)
        if ext is None:
            raise self.error(f"the extent of slice {d} of {buf.name!r} is not a compile-time "
                             f"constant", "write the slice as [s:s + K] with K constant")
        s0, s1 = as_int(start), as_int(stop)
        if ext <= 0 or (s0 is not None and s0 < 0) or (s1 is not None and s1 > n):
            raise self.error(f"slice {s0 if s0 is not None else '…'}:"
                             f"{s1 if s1 is not None else '…'} is out of bounds for dimension "
                             f"{d} of {buf.name!r} (size {n})",
                             f"keep slices of dimension {d} within 0..{n}")
        return Range(const(start), ext)

    def e_Call(self, node: ast.Call):
        from .builtins import call

        fn = self.expr(node.func)
        args = self.elements(node.args)
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                v = self.expr(kw.value)
                if not isinstance(v, dict):
                    raise self.error("** needs a compile-time dict")
                kwargs.update(v)
            else:
                kwargs[kw.arg] = self.expr(kw.value)
        return call(self, fn, args, kwargs, node)

    def e_Starred(self, node):
        raise self.error("* is only allowed inside a call's arguments or a list")


def _index_names(n: int) -> str:
    return ", ".join(f"i{k}" for k in range(n))


def parse_function(fdef: ast.FunctionDef, pyscope: dict, file: str, lines: list[str],
                   line0: int, col0: int) -> PrimFunc:
    p = Parser(pyscope, file, lines, line0, col0)
    p.node = fdef
    args = fdef.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.posonlyargs:
        raise p.error("kernel parameters must be plain names annotated with T.handle")
    for a in args.args:
        var = Var(a.arg, dt.handle, span=p.span(a))
        p.params.append(var)
        p.bind(a.arg, var)
    for s in fdef.body:
        p.stmt(s)
    if not p.entered:
        raise p.error("the kernel never calls T.device_entry()",
                      "call T.device_entry() after the T.match_buffer lines", fdef)
    body = seq(*p.blocks[0])
    func = PrimFunc(fdef.name, tuple(p.params), tuple(p.buffer_map), tuple(p.launch), body,
                    span=p.span(fdef))
    func.launch_config  # noqa: B018 - checks that the launch declarations agree
    return func
