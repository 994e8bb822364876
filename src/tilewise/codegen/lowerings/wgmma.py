"""Hand-written lowerings of wgmma (PTX ISA §9.7.15): ``wait_group`` (its intrinsic takes an
i64 immediate) and ``mma_async``, which LLVM 22 has no intrinsic for
(``/work/shared/reference/nvptx-llvm22-compat.md`` §2, "wgmma.mma_async itself"): inline
PTX with the accumulator registers read and written in place (``+r``, as outputs tied to
their inputs), the two descriptors as ``l`` operands and ``scale-d`` as a predicate set from
a register. ``mma_async.rs`` (A from registers) passes a0..a3 as ``r`` operands in the A
descriptor's place and has no trans-a immediate."""

from __future__ import annotations

from llvmlite import ir

from ...ir import dtype as dt
from ...ir.expr import BufferLoad, Call, IntImm
from ...ir.visitor import walk
from ...ptx import wgmma
from ...ptx.rows_mma import FENCE_OPERANDS
from .. import types as ty
from ..registry import lowering
from .args import bits32, imm


@lowering("ptx.wgmma.wait_group")
def _wait_group(em, c):
    """The wait, then every wgmma accumulator register of the kernel (those declared by
    now) through a fence: LLVM sees the accumulators written by the wgmma's inline asm at
    its issue, so it could move their reads (a bitcast, packing into a vector store, an
    add) above the wait; ptxas then serialises every wgmma of the kernel (C7514: a
    stream-K GEMM copying its accumulator to global memory by coordinates ran 16-32 %
    slower on the H200). CUTLASS fences its accumulators after each wait the same way.
    The fence is no instruction, so registers of wgmmas still in flight are not read."""
    em.call("llvm.nvvm.wgmma.wait_group.sync.aligned", ty.VOID,
            [ir.Constant(ty.I64, imm(em, c.args[0]))])
    ptrs = [em.element_ptr(buf, (IntImm(i),), c) for buf, i in _accumulators(em)
            if id(buf) in em.bufs]
    for k in range(0, len(ptrs), FENCE_OPERANDS):
        _fence(em, ptrs[k:k + FENCE_OPERANDS])


def _accumulators(em) -> list:
    """(buffer, register) of every accumulator register a wgmma of the kernel names (local
    buffers at constant indices; one per storage location), found once per kernel."""
    found = getattr(em, "_wgmma_accumulators", None)
    if found is None:
        seen, found = set(), []

        def visit(n):
            if isinstance(n, Call) and n.op in _MMA_OPS:
                first = 8 if n.op == "ptx.wgmma.mma_async" else wgmma.A_REGS + 6
                for r in n.args[first:]:
                    if (isinstance(r, BufferLoad) and r.buffer.scope == "local"
                            and len(r.indices) == 1 and isinstance(r.indices[0], IntImm)):
                        base = r.buffer
                        while base.view_of is not None:
                            base = base.view_of
                        key = (id(base), r.indices[0].value)
                        if key not in seen:
                            seen.add(key)
                            found.append((r.buffer, r.indices[0].value))

        walk(em.func.body, visit)
        em._wgmma_accumulators = found
    return found


_MMA_OPS = ("ptx.wgmma.mma_async", "ptx.wgmma.mma_async.rs")


@lowering("ptx.wgmma.fence_operand")
def _fence_operand(em, c):
    _fence(em, [em.element_ptr(r.buffer, r.indices, c) for r in c.args[1:]])


def _fence(em, ptrs) -> None:
    """The registers at ``ptrs`` through an empty side-effecting inline asm (``+r`` each):
    LLVM keeps their reads after it, and it after the calls with side effects before it;
    ptxas sees no instruction."""
    vals = [em.b.load(p, typ=ty.I32, align=4) for p in ptrs]
    n = len(vals)
    out_t = ty.I32 if n == 1 else ir.LiteralStructType([ty.I32] * n)
    cons = ",".join(["=r"] * n + [str(i) for i in range(n)])
    res = em.b.call(ir.InlineAsm(ir.FunctionType(out_t, [ty.I32] * n), "", cons,
                                 side_effect=True), vals)
    for i, p in enumerate(ptrs):
        em.b.store(res if n == 1 else em.b.extract_value(res, i), p, align=4)


def mma_async_text(n: int, ab: str, acc: str, trans_a: bool, trans_b: bool, nregs: int) -> str:
    """The inline PTX of one ``wgmma.mma_async`` (``$0..$nregs-1`` the accumulators, then
    their tied inputs, then the descriptors and the scale-d register)."""
    k = wgmma.K_OF[ab]
    t = wgmma.PTX_TYPE[ab]
    regs = ", ".join(f"${i}" for i in range(nregs))
    a, b, scale = 2 * nregs, 2 * nregs + 1, 2 * nregs + 2
    trans = f", {int(trans_a)}, {int(trans_b)}" if wgmma.transposable(ab) else ""
    return ("{\n.reg .pred p;\n"
            f"setp.ne.b32 p, ${scale}, 0;\n"
            f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.{wgmma.ACC_TYPE[acc]}.{t}.{t} "
            f"{{{regs}}}, ${a}, ${b}, p, 1, 1{trans};\n}}")


def mma_async_rs_text(n: int, ab: str, acc: str, trans_b: bool, nregs: int) -> str:
    """The inline PTX of one ``wgmma.mma_async`` with A from registers (``$0..$nregs-1``
    the accumulators, their tied inputs, then a0..a3, the B descriptor and scale-d)."""
    t = wgmma.PTX_TYPE[ab]
    regs = ", ".join(f"${i}" for i in range(nregs))
    a = ", ".join(f"${2 * nregs + i}" for i in range(wgmma.A_REGS))
    b, scale = 2 * nregs + wgmma.A_REGS, 2 * nregs + wgmma.A_REGS + 1
    return ("{\n.reg .pred p;\n"
            f"setp.ne.b32 p, ${scale}, 0;\n"
            f"wgmma.mma_async.sync.aligned.m64n{n}k16.{wgmma.ACC_TYPE[acc]}.{t}.{t} "
            f"{{{regs}}}, {{{a}}}, ${b}, p, 1, 1, {int(trans_b)};\n}}")


@lowering("ptx.wgmma.mma_async")
def _mma_async(em, c):
    a_desc, b_desc, scale_d, n, ab, acc, trans_a, trans_b = c.args[:8]
    text = mma_async_text(imm(em, n), ab.value, acc.value, bool(imm(em, trans_a)),
                          bool(imm(em, trans_b)), len(c.args) - 8)
    _emit(em, c, c.args[8:], [em.typed(a_desc, dt.uint64)], b_desc, scale_d, text, "l")


@lowering("ptx.wgmma.mma_async.rs")
def _mma_async_rs(em, c):
    k = wgmma.A_REGS
    b_desc, scale_d, n, ab, acc, trans_b = c.args[k:k + 6]
    text = mma_async_rs_text(imm(em, n), ab.value, acc.value, bool(imm(em, trans_b)),
                             len(c.args) - k - 6)
    _emit(em, c, c.args[k + 6:], [bits32(em, a) for a in c.args[:k]], b_desc, scale_d, text,
          ",".join(["r"] * k))


def _emit(em, c, regs, a_ops, b_desc, scale_d, text: str, a_cons: str) -> None:
    """The accumulators in place around one inline-PTX wgmma (A operands ``a_ops``)."""
    nregs = len(regs)
    ptrs = [em.element_ptr(r.buffer, r.indices, c) for r in regs]
    if isinstance(scale_d, IntImm) and not scale_d.value:
        # D = A B reads no accumulator: undefined inputs end the old values' live ranges
        # here (else LLVM keeps them, and copies, up to this instruction)
        ins = [ir.Constant(ty.I32, ir.Undefined)] * nregs
    else:
        ins = [em.b.load(p, typ=ty.I32, align=4) for p in ptrs]
    ops = ins + a_ops + [em.typed(b_desc, dt.uint64), em.b.zext(em.truth(scale_d), ty.I32)]
    cons = ",".join(["=r"] * nregs + [str(i) for i in range(nregs)] + [a_cons, "l", "r"])
    out_t = ty.I32 if nregs == 1 else ir.LiteralStructType([ty.I32] * nregs)
    fnty = ir.FunctionType(out_t, [o.type for o in ops])
    res = em.b.call(ir.InlineAsm(fnty, text, cons, side_effect=True), ops)
    for i, p in enumerate(ptrs):
        em.b.store(res if nregs == 1 else em.b.extract_value(res, i), p, align=4)


@lowering("ptx.smem_addr")
def _smem_addr(em, c):
    """A shared-space pointer's value is its offset in the shared window, passed through an
    opaque ``mov`` so that LLVM computes it where it is used: a matrix descriptor built from
    it then lives for one instruction. (Hoisted out of a loop, the descriptors of a 64 x 256
    operand are 16 loop-invariant 64-bit values, 32 registers a kernel holding a 64 x 256
    float32 accumulator does not have.)"""
    p, _ = em.address(c.args[0], ty.SHARED)
    addr = em.b.trunc(em.b.ptrtoint(p, ty.I64), ty.I32)
    fnty = ir.FunctionType(ty.I32, [ty.I32])
    return em.b.call(ir.InlineAsm(fnty, "mov.b32 $0, $1;", "=r,r", side_effect=True), [addr])
