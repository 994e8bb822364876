"""Flat IR -> LLVM IR (NVPTX) with ``llvmlite.ir``.

One :class:`Emitter` per kernel. The mapping (docs/codegen.md):

* the PrimFunc becomes ``define ptx_kernel void @name(ptr addrspace(1) align 16 ...)`` with
  ``"nvvm.reqntid"`` from the launch (it also gives ptxas the register count at entry,
  without which it ignores ``setmaxnreg``: C7508) and the optional ``nvvm.*`` kernel
  options;
* thread variables are computed once at entry from ``%tid.x`` / ``%ctaid.{x,y,z}``
  (:func:`tilewise.ir.launch.thread_value`);
* shared memory is laid out by the pipeline's
  :class:`~tilewise.passes.shared_plan.SharedPlan`: ``shared`` allocations are ``internal
  addrspace(3)`` globals with an ``undef`` initialiser and the plan's alignment,
  ``shared.dyn`` ones the plan's offsets into one ``external addrspace(3) global [0 x i8]``
  from its first 1024-aligned byte (rounded at run time: the driver aligns the dynamic
  window to 16 bytes only); ``local`` ones are ``alloca``s in the entry block (SROA
  promotes them);
* scalars are SSA values: ``LetStmt``/``Assign`` rebind the current value of a local, an
  ``if`` merges the values its branches leave with phi nodes, a loop carries the locals its
  body assigns in phi nodes of its header (and of its latch and exit when ``continue`` and
  ``break`` add edges) -- SSA built directly for structured control flow, no stack slots
  (:mod:`tilewise.codegen.control`, a base of the emitter);
* arithmetic and conversions come from the one table, :mod:`tilewise.ir.alu`;
* every ``Call`` goes through the lowering registered for its PTX-table entry
  (:mod:`tilewise.codegen.lowerings`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from llvmlite import ir

from ..errors import CompileError
from ..passes.shared_plan import SharedPlan, plan_shared
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.dtype import DataType, bool_, int32
from ..ir.launch import thread_value
from ..ir.visitor import walk
from ..ir import alu
from ..ptx.tma import TENSORMAP_ALIGN
from . import arith
from . import types as ty
from .control import ControlFlow, Loop

DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
TRIPLE = "nvptx64-nvidia-cuda"
DYN_SMEM_SYMBOL = "tw_dynamic_smem"
#: CTA launch kinds -> their special register (%ctaid, %clusterid, %cluster_ctaid)
_CTA_SREG = {"cta_id": "ctaid", "cluster_id": "clusterid", "cta_id_in_cluster": "cluster.ctaid"}


@dataclass
class _Buf:
    ptr: ir.Value
    space: int


@dataclass
class Emitted:
    """What code generation produced besides the module."""

    module: ir.Module
    name: str
    dynamic_smem: int = 0
    static_smem: int = 0
    libdevice: set[str] = field(default_factory=set)


class Emitter(ControlFlow):
    """Builds the LLVM module of one flat kernel; lowerings call back into it."""

    def __init__(self, func: S.PrimFunc, options: dict, shared: SharedPlan | None = None):
        self.func, self.options = func, options
        self.shared = plan_shared(func) if shared is None else shared
        self.module = ir.Module(name=func.name)
        self.module.triple = TRIPLE
        self.module.data_layout = DATA_LAYOUT
        self.vars: dict[int, ir.Value] = {}  # the current SSA value of every scalar
        self.bufs: dict[int, _Buf] = {}
        self.nonneg: set[int] = set()
        self.assigned: set[int] = set()
        self.loops: list[Loop] = []
        self.live = True  # False once break/continue left the current block
        self._dyn_base = None
        self.libdevice: set[str] = set()
        self.span = func.span

    # ------------------------------------------------------------------ module pieces
    def declare(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        """The (single) declaration of an external function or intrinsic."""
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name=name)
        return fn

    def call(self, name: str, ret: ir.Type, args: list[ir.Value]) -> ir.Value:
        return self.b.call(self.declare(name, ret, [a.type for a in args]), args)

    def llvm_intrinsic(self, base: str, t: ir.Type, args: list[ir.Value]) -> ir.Value:
        """An overloaded LLVM intrinsic such as ``llvm.floor.f32``."""
        return self.call(f"{base}.{t.intrinsic_name}", t, args)

    @staticmethod
    def value_type(t: DataType) -> ir.Type:
        return ty.value_type(t)

    def is_nonneg(self, e: E.Expr) -> bool:
        return arith.is_nonneg(e, self.nonneg)

    @staticmethod
    def constant(e: E.Expr):
        """The Python value of an immediate (IntImm -> int, FloatImm -> float), else None."""
        if isinstance(e, E.IntImm):
            return e.value
        if isinstance(e, E.FloatImm):
            return float(e.value)
        return None

    def error(self, message: str, node=None, hint: str | None = None) -> CompileError:
        return CompileError(message, getattr(node, "span", None) or self.span, hint=hint)

    # ------------------------------------------------------------------ kernel
    def emit(self) -> Emitted:
        f = self.func
        name = ty.ptx_identifier(f.name)
        fnty = ir.FunctionType(ty.VOID, [ty.param_type(p.dtype) for p in f.params])
        self.fn = ir.Function(self.module, fnty, name=name)
        self.fn.calling_convention = "ptx_kernel"
        self.fn.attributes = ty.NvvmAttributes()
        for k, v in self._kernel_attributes().items():
            self.fn.attributes.add(f'"{k}"="{v}"')
        slots = self.fn.append_basic_block("slots")  # allocas only, then a branch to entry
        entry = self.fn.append_basic_block("entry")
        self.slots_b = ir.IRBuilder(slots)
        self.b = ir.IRBuilder(entry)
        self._bind_params()
        walk(f.body, self._note_assign)
        self._bind_launch()
        self.stmt(f.body)
        if self.live:
            self.b.ret_void()
        self.slots_b.branch(entry)
        self._module_flags()
        plan = self.shared
        return Emitted(self.module, name, plan.dynamic_request, plan.static_bytes,
                       self.libdevice)

    def _kernel_attributes(self) -> dict[str, str]:
        # maxntid is checked against .reqntid (check.py), not emitted: ptxas refuses both
        block = self.func.launch_config.block
        attrs = {"nvvm.reqntid": str(block)}
        names = {"minctasm": "nvvm.minctasm",
                 "maxnreg": "nvvm.maxnreg", "cluster_dim": "nvvm.cluster_dim"}
        for opt, attr in names.items():
            if opt in self.options:
                attrs[attr] = ",".join(str(d) for d in self.options[opt])
        return attrs

    def _module_flags(self):
        i32 = lambda v: ir.Constant(ty.I32, v)  # noqa: E731
        ftz = int(self.options.get("ftz", False))
        flag = self.module.add_metadata([i32(4), ir.MetaDataString(self.module,
                                                                   "nvvm-reflect-ftz"), i32(ftz)])
        self.module.add_named_metadata("llvm.module.flags", flag)

    def _bind_params(self):
        by_param = {id(p): b for p, b in self.func.buffer_map}
        for p, arg in zip(self.func.params, self.fn.args):
            arg.name = ty.ptx_identifier(p.name)
            arg.attributes.add("noundef")
            buf = by_param.get(id(p))
            if buf is not None:
                arg.attributes.align = 16  # checked at launch (runtime/args.py)
                self.bufs[id(buf)] = _Buf(arg, ty.GLOBAL)
            elif p.dtype.kind == "bool":  # passed as a byte
                self.vars[id(p)] = self.b.icmp_unsigned("!=", arg, ir.Constant(ty.I8, 0))
            elif p.dtype.kind == "handle":
                self.vars[id(p)] = self.b.ptrtoint(arg, ty.I64)
            elif p.dtype.kind == "tensormap":
                arg.attributes = ty.TensorMapAttributes()
                arg.attributes.align = TENSORMAP_ALIGN
                self.vars[id(p)] = arg
            else:
                self.vars[id(p)] = arg
        for v in self.func.attr("size_vars", ()):
            self.nonneg.add(id(v))  # shapes and strides bound from arrays are never negative

    def _note_assign(self, node):
        if isinstance(node, S.Assign):
            self.assigned.add(id(node.var))

    def _bind_launch(self):
        tid = E.Var("threadIdx_x")
        tid_x = None
        for t in self.func.launch:
            if t.kind in _CTA_SREG:
                value = self.call(f"llvm.nvvm.read.ptx.sreg.{_CTA_SREG[t.kind]}."
                                  f"{'xyz'[t.dim]}", ty.I32, [])
            else:
                if tid_x is None:
                    tid_x = self.call("llvm.nvvm.read.ptx.sreg.tid.x", ty.I32, [])
                    self.vars[id(tid)] = tid_x
                    self.nonneg.add(id(tid))
                value = self.expr(thread_value(t.kind, tid))
            self.vars[id(t.var)] = value
            self.nonneg.add(id(t.var))

    # ------------------------------------------------------------------ statements
    def stmt(self, s: S.Stmt):
        if not self.live:
            return  # after break/continue: unreachable, nothing to emit
        old = self.span
        self.span = s.span or old
        try:
            getattr(self, "s_" + type(s).__name__)(s)
        except AttributeError as exc:
            if not hasattr(self, "s_" + type(s).__name__):
                raise self.error(f"{type(s).__name__} cannot be compiled; lower the kernel "
                                 f"to flat IR first", s) from exc
            raise
        finally:
            self.span = old

    def s_SeqStmt(self, s: S.SeqStmt):
        for x in s.stmts:
            self.stmt(x)

    def s_Evaluate(self, s: S.Evaluate):
        if isinstance(s.value, E.Call):
            self.expr(s.value)

    def s_LetStmt(self, s: S.LetStmt):
        self.vars[id(s.var)] = self.typed(s.value, s.var.dtype)
        if id(s.var) not in self.assigned and self.is_nonneg(s.value):
            self.nonneg.add(id(s.var))

    def s_Assign(self, s: S.Assign):
        if id(s.var) not in self.vars:
            raise self.error(f"{s.var.name!r} is assigned before its declaration", s)
        self.vars[id(s.var)] = self.typed(s.value, s.var.dtype)

    def s_BufferStore(self, s: S.BufferStore):
        p = self.element_ptr(s.buffer, s.indices, s)
        v = self.typed(s.value, s.buffer.dtype)
        if s.buffer.dtype.name == "bool":
            v = self.b.zext(v, ty.I8)
        self.b.store(v, p, align=s.buffer.dtype.bytes)

    def s_DeclBuffer(self, s: S.DeclBuffer):
        buf = s.buffer
        if buf.view_of is not None:
            self.bufs[id(buf)] = self.bufs[id(buf.view_of)]
            return
        space = ty.space_of(buf.scope, s.span)
        slot = self.shared.slot(buf)
        if slot is not None and not slot.dynamic:
            g = ir.GlobalVariable(self.module, ir.ArrayType(ty.I8, slot.nbytes),
                                  self.module.get_unique_name(ty.ptx_identifier(buf.name)),
                                  addrspace=ty.SHARED)
            g.linkage, g.align = "internal", slot.align
            g.initializer = ir.Constant(g.value_type, ir.Undefined)
            g.type = ty.ptr(ty.SHARED)  # opaque: llvmlite would type-check element accesses
            self.bufs[id(buf)] = _Buf(g, space)
        elif slot is not None:
            off = ir.Constant(ty.I32, slot.offset)
            self.bufs[id(buf)] = _Buf(self.b.gep(self._dynamic_base(), [off],
                                                 source_etype=ty.I8), space)
        else:
            a = self.alloca(ir.ArrayType(ty.storage_type(buf.dtype), buf.size),
                            ty.ptx_identifier(buf.name))
            a.align = max(16, buf.align)
            # allocas live in the generic space of the NVPTX data layout (lowered to .local)
            a.type = ty.ptr(ty.GENERIC)
            self.bufs[id(buf)] = _Buf(a, ty.GENERIC)

    def alloca(self, t: ir.Type, name: str) -> ir.AllocaInstr:
        """A stack slot at the top of the entry block (where mem2reg/SROA look for it)."""
        return self.slots_b.alloca(t, name=name)

    def _dynamic_base(self) -> ir.Value:
        """The dynamic shared window's first ``window_align``-aligned byte (1024). The
        driver places dynamic shared memory after the static buffers, aligned to 16 bytes
        only (measured on the H200: a TMA box written through a 16-aligned base faults with
        "misaligned address"), so the base is rounded up at run time and the launch asks
        for the plan's ``pad`` bytes more (``Emitted.dynamic_smem``)."""
        if self._dyn_base is None:
            g, b = self._dynamic_smem(), self.slots_b
            raw = b.ptrtoint(g, ty.I32)
            pad = b.and_(b.neg(raw), ir.Constant(ty.I32, self.shared.window_align - 1))
            self._dyn_base = b.gep(g, [pad], source_etype=ty.I8)
        return self._dyn_base

    def _dynamic_smem(self) -> ir.GlobalVariable:
        g = self.module.globals.get(DYN_SMEM_SYMBOL)
        if g is None:
            g = ir.GlobalVariable(self.module, ir.ArrayType(ty.I8, 0), DYN_SMEM_SYMBOL,
                                  addrspace=ty.SHARED)
            g.linkage, g.align = "external", 16
            g.type = ty.ptr(ty.SHARED)
        return g

    # ------------------------------------------------------------------ addresses
    def buffer(self, buf: S.Buffer, node=None) -> _Buf:
        b = self.bufs.get(id(buf))
        if b is None:
            raise self.error(f"buffer {buf.name!r} is not addressable here (scope "
                             f"{buf.scope!r})", node)
        return b

    def element_ptr(self, buf: S.Buffer, indices, node=None) -> ir.Value:
        """Pointer to element ``indices[0]`` of flat buffer ``buf`` (typed by its dtype)."""
        base = self.buffer(buf, node)
        if not indices:
            return base.ptr
        if len(indices) != 1:
            raise self.error(f"buffer {buf.name!r} is indexed with {len(indices)} indices; the "
                             f"code generator needs flat IR", node)
        etype = ty.storage_type(buf.dtype)
        index = indices[0]
        rest, offset = _constant_term(index) if index.dtype == int32 else (index, 0)
        if rest is None:  # a constant element offset
            return self.b.gep(base.ptr, [ir.Constant(ty.I64, offset)], source_etype=etype)
        idx = self.expr(rest)
        if isinstance(idx, ir.Constant) and idx.constant == 0 and not offset:
            return base.ptr
        if idx.type.width < 64:
            idx = (self.b.zext if self.is_nonneg(rest) else self.b.sext)(idx, ty.I64)
        ptr = self.b.gep(base.ptr, [idx], source_etype=etype)
        if offset:  # a 32-bit index's constant term, added after the widening: LLVM keeps it
            # an immediate of the access instead of a 64-bit address register per constant
            # (unrolled stores W[x + 128 * v] otherwise hoisted ~100 addresses and spilled)
            ptr = self.b.gep(ptr, [ir.Constant(ty.I64, offset)], source_etype=etype)
        return ptr

    def address(self, e, want_space: int | None = None) -> tuple[ir.Value, int]:
        """The pointer of a pointer operand (``AddressOf``), optionally cast to a space."""
        if not isinstance(e, E.AddressOf):
            raise self.error("a pointer operand must be T.address_of(buffer[...])", e)
        p = self.element_ptr(e.buffer, e.indices, e)
        space = self.buffer(e.buffer, e).space
        if want_space is not None and want_space != space:
            if space != ty.GENERIC and want_space != ty.GENERIC:
                raise self.error(f"{e.buffer.name!r} is in {e.buffer.scope} memory, this "
                                 f"operand needs address space {want_space}", e)
            p = self.b.addrspacecast(p, ty.ptr(want_space))
            space = want_space
        return p, space

    # ------------------------------------------------------------------ expressions
    def expr(self, e) -> ir.Value:
        return getattr(self, "e_" + type(e).__name__)(e)

    def typed(self, e: E.Expr, t: DataType) -> ir.Value:
        """``e`` as a value of type ``t`` (literals and mismatched operands converted)."""
        src = e.dtype
        v = self.expr(e)
        if src != t and (ty.is_opaque_float(src) or ty.is_opaque_float(t)):
            if src.bits == t.bits and (src.is_int or t.is_int):
                return v  # reinterpretation of the byte (the only fp8 operation supported)
            raise CompileError(f"conversion {src} -> {t} is not supported by the code "
                               f"generator", getattr(e, "span", None) or self.span,
                               hint="fp8 values can only be copied")
        return alu.llvm_cast(self, v, src, t)

    def truth(self, e: E.Expr) -> ir.Value:
        return self.typed(e, bool_)

    def e_Var(self, e: E.Var):
        v = self.vars.get(id(e))
        if v is None:
            raise self.error(f"variable {e.name!r} is used outside its scope", e)
        return v

    e_SizeVar = e_Var

    def e_IntImm(self, e: E.IntImm):
        return arith.const_int(e.dtype, e.value)

    def e_FloatImm(self, e: E.FloatImm):  # rounded to the type first, as the simulator does
        with np.errstate(over="ignore"):
            return ir.Constant(ty.value_type(e.dtype), float(e.dtype.numpy().type(e.value)))

    def e_BinOp(self, e: E.BinOp):
        if e.op in ("and", "or") and _has_effects(e.b):
            return self._short_circuit(e)
        t = e.a.dtype
        row = alu.BINARY.get(e.op)
        if row is None or not row.takes(t) or ty.is_opaque_float(t):
            raise self.error(f"operator {e.op!r} on {t} values is not supported", e)
        x = self.expr(e.a)
        y = self.expr(e.b) if e.op in ("<<", ">>") else self.typed(e.b, t)
        return alu.llvm_binary(self, e, x, y)

    def _short_circuit(self, e: E.BinOp):
        lhs = self.truth(e.a)
        start = self.b.block
        rhs_bb = self.fn.append_basic_block("sc_rhs")
        done = self.fn.append_basic_block("sc_end")
        if e.op == "and":
            self.b.cbranch(lhs, rhs_bb, done)
        else:
            self.b.cbranch(lhs, done, rhs_bb)
        self.b.position_at_end(rhs_bb)
        rhs = self.truth(e.b)
        rhs_end = self.b.block
        self.b.branch(done)
        self.b.position_at_end(done)
        phi = self.b.phi(ty.I1)
        phi.add_incoming(ir.Constant(ty.I1, e.op == "or"), start)
        phi.add_incoming(rhs, rhs_end)
        return phi

    def e_UnaryOp(self, e: E.UnaryOp):
        row = alu.UNARY.get(e.op)
        if row is None or not row.takes(e.a.dtype) or ty.is_opaque_float(e.a.dtype):
            raise self.error(f"operator {e.op!r} on {e.a.dtype} values is not supported", e)
        return alu.llvm_unary(self, e, self.expr(e.a))

    def e_Select(self, e: E.Select):
        cond = self.truth(e.cond)
        if not (_has_effects(e.true_value) or _has_effects(e.false_value)):
            return self.b.select(cond, self.expr(e.true_value),
                                 self.typed(e.false_value, e.true_value.dtype))
        with self.b.if_else(cond) as (then, other):
            with then:
                tv, tb = self.expr(e.true_value), self.b.block
            with other:
                fv, fb = self.typed(e.false_value, e.true_value.dtype), self.b.block
        phi = self.b.phi(tv.type)
        phi.add_incoming(tv, tb)
        phi.add_incoming(fv, fb)
        return phi

    def e_Cast(self, e: E.Cast):
        return self.typed(e.value, e.type)

    def e_BufferLoad(self, e: E.BufferLoad):
        p = self.element_ptr(e.buffer, e.indices, e)
        v = self.b.load(p, typ=ty.storage_type(e.buffer.dtype), align=e.buffer.dtype.bytes)
        if e.buffer.dtype.name == "bool":
            return self.b.icmp_unsigned("!=", v, ir.Constant(ty.I8, 0))
        return v

    def e_AddressOf(self, e: E.AddressOf):
        p, space = self.address(e)
        if space != ty.GENERIC:
            p = self.b.addrspacecast(p, ty.ptr(ty.GENERIC))
        return self.b.ptrtoint(p, ty.I64)

    def e_StringImm(self, e: E.StringImm):
        raise self.error(f"string {e.value!r} is only allowed as an instruction operand", e)

    def e_Call(self, e: E.Call):
        from .registry import all_lowerings

        fn = all_lowerings().get(e.op)
        if fn is None:
            raise self.error(f"T.{e.op} has no LLVM lowering", e)
        old = self.span
        self.span = e.span or old
        try:
            return fn(self, e)
        finally:
            self.span = old


def _constant_term(e: E.Expr, depth: int = 0) -> tuple[E.Expr | None, int]:
    """``e`` as ``rest + offset`` with ``offset`` the integer literals of its outer sums
    (``rest`` None when ``e`` is a literal). Widening ``rest`` and adding ``offset`` after
    gives the same address as widening ``e`` (the index does not wrap in 32 bits: buffers
    are indexed in range), and lets LLVM fold the offset into the access."""
    if isinstance(e, E.IntImm):
        return None, e.value
    if depth < 16 and isinstance(e, E.BinOp) and e.op in ("+", "-"):
        sign = 1 if e.op == "+" else -1
        if isinstance(e.b, E.IntImm):
            rest, c = _constant_term(e.a, depth + 1)
            return rest, c + sign * e.b.value
        if e.op == "+" and isinstance(e.a, E.IntImm):
            rest, c = _constant_term(e.b, depth + 1)
            return rest, c + e.a.value
    return e, 0


def _has_effects(e) -> bool:
    """Whether evaluating ``e`` may fault or has side effects (loads, calls)."""
    found = []
    walk(e, lambda n: found.append(1) if isinstance(n, (E.BufferLoad, E.Call)) else None)
    return bool(found)


def generate(func: S.PrimFunc, options: dict | None = None,
             shared: SharedPlan | None = None) -> Emitted:
    """The LLVM module for flat kernel ``func`` (options already validated; the target is
    the caller's: it picks the LLVM CPU and PTX version, see :mod:`tilewise.compiler`);
    ``shared``: the pipeline's layout of its shared memory (laid out here when None)."""
    return Emitter(func, options or {}, shared).emit()
