"""Expressions of a kernel: each evaluates to a compile-time Python value (shapes, dtypes,
layouts, list comprehensions over ranges) or an IR expression (thread ids, loads, locals).
The :class:`Expressions` mixin is half of the parser (:mod:`.parser` has the statements)."""

from __future__ import annotations

import ast
import operator

from ..errors import TilewiseError, did_you_mean
from ..ir.expr import BufferLoad, BufferRegion, Range, as_int, binop, cmp, const
from ..ir.expr import select as make_select
from ..ir.stmt import Buffer
from . import typerules as tr
from .namespace import TilePrimitiveRef
from .analysis import MAX_COMPREHENSION, check_unroll, const_difference
from .rejected import GENERIC_HINT, REJECTED
from .values import describe, is_ir, is_scalar

PY_BINOP = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
            ast.Mod: "%", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<",
            ast.RShift: ">>", ast.MatMult: "@", ast.Pow: "**"}
_PY_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_PY_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
           "//": operator.floordiv, "%": operator.mod, "&": operator.and_, "|": operator.or_,
           "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift,
           "@": operator.matmul, "**": operator.pow, "<": operator.lt, "<=": operator.le,
           ">": operator.gt, ">=": operator.ge, "==": operator.eq, "!=": operator.ne}
_PY_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
             ast.Invert: operator.invert}
_UNARY_NAMES = {ast.USub: "-", ast.UAdd: "+", ast.Not: "not", ast.Invert: "~"}


_BIG = 1 << 16
_MAX_BITS = 1024  # compile-time integers beyond this are mistakes (Python prints none > 4300
#                   digits: a message naming one would fail)


def _check_size(p, op: str, a, b) -> None:
    ints = all(isinstance(x, int) and not isinstance(x, bool) for x in (a, b))
    huge = (ints and abs(b) > _BIG and ((op == "**" and a not in (0, 1, -1))
                                        or (op == "<<" and a != 0))) or (
        op == "*" and isinstance(a, (str, list, tuple)) and isinstance(b, int) and b > _BIG)
    if huge:
        raise p.error(f"{describe(a)} {op} {describe(b)} is too large to compute at compile "
                      "time", "check the constants (a shift or exponent this large is a "
                      "mistake)")


class Expressions:
    meta_target = None  # the call node of `name = T.meta_var(x)` being parsed
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
        except RecursionError:
            raise self.error("the expression is nested too deeply to compile",
                             "split it into several assignments") from None
        finally:
            self.node = prev

    def e_Constant(self, node):
        return node.value

    def e_Name(self, node):
        v = self.lookup(node.id, node)
        if isinstance(v, int) and v.bit_length() > _MAX_BITS:  # from the Python scope
            raise self.error(f"{node.id!r} is an integer of {v.bit_length()} bits; no tilewise "
                             "type holds more than 64", "check the value the kernel's Python "
                             "scope gives it")
        return v

    def e_Attribute(self, node: ast.Attribute):
        base = self.expr(node.value)
        if isinstance(base, Buffer):
            from .buffers import buffer_attr

            return buffer_attr(self, base, node.attr)
        if is_ir(base):
            raise self.error(f"a run-time value has no attribute {node.attr!r}")
        try:
            return getattr(base, node.attr)
        except AttributeError:
            names = [n for n in dir(base) if not n.startswith("_")]
            raise self.error(f"{describe(base)} has no attribute {node.attr!r}",
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
                    raise self.error(f"cannot splat {describe(v)} with *", node=e)
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
        check_unroll(self, it, g.iter, MAX_COMPREHENSION, "a compile-time comprehension")
        from .scopes import Scope

        for v in it:
            self.scopes.append(Scope("comprehension"))
            try:
                self.assign_py(g.target, v)
                if all(self._truth(self.expr(c)) for c in g.ifs):
                    self._comp(gens, i + 1, emit)
            finally:
                self.scopes.pop()

    def assign_py(self, target, v):
        if isinstance(target, ast.Name):
            self.bind(target.id, v, target)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not hasattr(v, "__iter__") or is_ir(v):
                raise self.error(f"cannot unpack {describe(v)}", node=target)
            vals = list(v)
            if len(vals) != len(target.elts):
                raise self.error(f"cannot unpack {len(vals)} values into "
                                 f"{len(target.elts)} names", node=target)
            for t, x in zip(target.elts, vals):
                self.assign_py(t, x)
        else:
            raise self.error("unsupported loop or comprehension target", node=target)

    def _truth(self, v) -> bool:
        if is_ir(v):
            raise self.error("a comprehension condition must be known at compile time")
        return bool(v)

    # ------------------------------------------------------------------ arithmetic
    def e_BinOp(self, node: ast.BinOp):
        op = PY_BINOP[type(node.op)]
        return self.arith(op, self.expr(node.left), self.expr(node.right), node)

    def arith(self, op: str, a, b, node):
        if not is_ir(a) and not is_ir(b):
            return self.python_op(op, a, b)
        if op in ("/", "//", "%") and not is_ir(b) and is_scalar(b) and b == 0:
            raise self.error(f"division by zero: the right side of {op!r} is the constant 0",
                             "divide by a non-zero value")
        ea, eb = tr.operand_types(self, op, a, b)
        tr.check_overflow(self, op, ea, eb, None)
        return binop(op, ea, eb, self.span(node))

    def python_op(self, op: str, a, b):
        """``a op b`` on compile-time values, as Python computes it (refusing values that
        would take Python minutes or gigabytes to compute)."""
        _check_size(self, op, a, b)
        try:
            out = _PY_OPS[op](a, b)
        except TilewiseError:
            raise
        except Exception as e:
            raise self.error(f"{describe(a)} {op} {describe(b)} failed: {e}") from None
        if isinstance(out, int) and out.bit_length() > _MAX_BITS:
            raise self.error(f"{describe(a)} {op} {describe(b)} is an integer of "
                             f"{out.bit_length()} bits; no tilewise type holds more than 64",
                             "check the constants (a value this large is a mistake)")
        return out

    def e_UnaryOp(self, node: ast.UnaryOp):
        v = self.expr(node.operand)
        if not is_ir(v):
            if isinstance(node.op, ast.Not):
                return not self._compile_time_truth(v)
            if not is_scalar(v):
                raise self.error(f"unary {_UNARY_NAMES[type(node.op)]!r} cannot be applied to "
                                 f"{describe(v)}", "apply it to an element, e.g. -A[i]"
                                 if isinstance(v, Buffer) else None)
            return _PY_UNARY[type(node.op)](v)
        if isinstance(node.op, ast.UAdd):
            return v
        return tr.unary(self, _UNARY_NAMES[type(node.op)], v)

    def _compile_time_truth(self, v) -> bool:
        if isinstance(v, Buffer):
            raise self.error(f"{describe(v)} has no truth value",
                             "test an element or a condition instead")
        return bool(v)

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
        """``v`` as a condition: a bool value (a number compares with zero)."""
        if is_ir(v) and v.dtype.kind != "bool":
            return cmp("!=", v, tr.literal(self, 0, v.dtype, "a condition"))
        if isinstance(v, Buffer):
            raise self.error(f"{describe(v)} has no truth value",
                             "test an element or a condition instead")
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
            return self.expr(node.body) if self._compile_time_truth(c) else self.expr(
                node.orelse)
        return self.select(c, self.expr(node.body), self.expr(node.orelse), "a ternary")

    def select(self, c, t, f, what: str):
        c = self.truthy(c)
        if not is_ir(c):
            return t if c else f
        t, f = tr.unify_branches(self, t, f, what)
        return make_select(c, t, f)

    # ------------------------------------------------------------------ buffers
    def e_Subscript(self, node: ast.Subscript):
        base = self.expr(node.value)
        if isinstance(base, Buffer):
            return self.index(base, node.slice, node)
        if is_ir(base):
            raise self.error("a run-time value cannot be indexed")
        key = self.expr(node.slice)
        if is_ir(key):
            raise self.error(f"cannot index {describe(base)} with a run-time value")
        try:
            return base[key]
        except TilewiseError:
            raise
        except Exception as e:
            raise self.error(f"indexing {describe(base)} failed: {e}") from None

    def index(self, buf: Buffer, slice_node, node):
        key = self.expr(slice_node)
        items = list(key) if isinstance(key, tuple) else [key]
        if len(items) != len(buf.shape):
            raise self.error(f"{buf.name!r} has {len(buf.shape)} dimension(s) "
                             f"{_shape_text(buf.shape)}, indexed with {len(items)}",
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
            raise self.error(f"index {d} of {buf.name!r} is {describe(i)}, not an integer")
        if i < 0 or (isinstance(n, int) and i >= n):
            raise self.error(f"index {i} is out of bounds for dimension {d} of {buf.name!r} "
                             f"(size {_dim_text(n)})",
                             f"use an index in 0..{n - 1}" if isinstance(n, int) else
                             "use a non-negative index")
        return const(i)

    def range_of(self, i, n, d, buf) -> Range:
        if not isinstance(i, slice):
            return Range(self.index_value(i, n, d, buf), 1)
        if i.step not in (None, 1):
            raise self.error("strided slices are not supported", "use a step of 1")
        start = 0 if i.start is None else i.start
        stop = n if i.stop is None else i.stop
        for bound in (start, stop):
            if not (is_ir(bound) and bound.dtype.is_int) and (
                    not isinstance(bound, int) or isinstance(bound, bool)):
                shown = describe(bound) if is_ir(bound) else repr(bound)
                raise self.error(f"slice {d} of {buf.name!r} has the bound {shown}, "
                                 "not an integer", "write the slice as [start:stop] with "
                                 "integer bounds")
        ext = const_difference(stop, start)
        if ext is None:
            raise self.error(f"the extent of slice {d} of {buf.name!r} is not a compile-time "
                             f"constant", "write the slice as [s:s + K] with K constant")
        s0, s1 = as_int(start), as_int(stop)
        past_end = s1 is not None and isinstance(n, int) and s1 > n
        if past_end and getattr(self, "clip_slices", False) and (s0 is None or s0 < n):
            past_end = False  # a partial tile: the copy clips it (docs/dispatch.md)
        if ext <= 0 or (s0 is not None and s0 < 0) or past_end:
            raise self.error(f"slice {s0 if s0 is not None else '…'}:"
                             f"{s1 if s1 is not None else '…'} is out of bounds for dimension "
                             f"{d} of {buf.name!r} (size {_dim_text(n)})",
                             f"keep slices of dimension {d} within 0..{_dim_text(n)}"
                             + ("" if getattr(self, "clip_slices", False) else
                                " (a Tx.copy may take a partial tile: the part past the end "
                                "is not read or written)"))
        return Range(const(start), ext)

    def e_Call(self, node: ast.Call):
        from .builtins import MetaVar, call

        fn = self.expr(node.func)
        clip = isinstance(fn, TilePrimitiveRef) and fn.prim.name in CLIPPING
        saved, self.clip_slices = getattr(self, "clip_slices", False), clip
        try:
            args = self.elements(node.args)
        finally:
            self.clip_slices = saved
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                v = self.expr(kw.value)
                if not isinstance(v, dict):
                    raise self.error("** needs a compile-time dict")
                kwargs.update(v)
            else:
                kwargs[kw.arg] = self.expr(kw.value)
        v = call(self, fn, args, kwargs, node)
        if isinstance(v, MetaVar) and node is not self.meta_target:
            return v.value  # T.meta_var(x) anywhere but `name = T.meta_var(x)` is x
        return v

    def e_Starred(self, node):
        raise self.error("* is only allowed inside a call's arguments or a list")


#: Tile primitives whose memory operands may extend past the end of their buffer (a partial
#: tile): the copy reads and writes only the elements inside (docs/dispatch.md).
CLIPPING = ("copy", "copy_async")


def _index_names(n: int) -> str:
    return ", ".join(f"i{k}" for k in range(n))


def _dim_text(n) -> str:
    if isinstance(n, int):
        return str(n)
    from ..ir.printer import script

    return script(n)


def _shape_text(shape) -> str:
    return "(" + ", ".join(_dim_text(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"

