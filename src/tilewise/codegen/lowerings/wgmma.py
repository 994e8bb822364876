"""Hand-written lowerings of wgmma (PTX ISA §9.7.15): ``wait_group`` (its intrinsic takes an
i64 immediate) and ``mma_async``, which LLVM 22 has no intrinsic for
(``/work/shared/reference/nvptx-llvm22-compat.md`` §2, "wgmma.mma_async itself"): inline
PTX with the accumulator registers read and written in place (``+r``, as outputs tied to
their inputs), the two descriptors as ``l`` operands and ``scale-d`` as a predicate set from
a register."""

from __future__ import annotations

from llvmlite import ir

from ...ir import dtype as dt
from ...ptx import wgmma
from .. import types as ty
from ..registry import lowering
from .args import imm


@lowering("ptx.wgmma.wait_group")
def _wait_group(em, c):
    em.call("llvm.nvvm.wgmma.wait_group.sync.aligned", ty.VOID,
            [ir.Constant(ty.I64, imm(em, c.args[0]))])


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


@lowering("ptx.wgmma.mma_async")
def _mma_async(em, c):
    a_desc, b_desc, scale_d, n, ab, acc, trans_a, trans_b = c.args[:8]
    regs = c.args[8:]
    nregs = len(regs)
    text = mma_async_text(imm(em, n), ab.value, acc.value, bool(imm(em, trans_a)),
                          bool(imm(em, trans_b)), nregs)
    ptrs = [em.element_ptr(r.buffer, r.indices, c) for r in regs]
    ins = [em.b.load(p, typ=ty.I32, align=4) for p in ptrs]
    ops = ins + [em.typed(a_desc, dt.uint64), em.typed(b_desc, dt.uint64),
                 em.b.zext(em.truth(scale_d), ty.I32)]
    cons = ",".join(["=r"] * nregs + [str(i) for i in range(nregs)] + ["l", "l", "r"])
    out_t = ty.I32 if nregs == 1 else ir.LiteralStructType([ty.I32] * nregs)
    fnty = ir.FunctionType(out_t, [o.type for o in ops])
    res = em.b.call(ir.InlineAsm(fnty, text, cons, side_effect=True), ops)
    for i, p in enumerate(ptrs):
        em.b.store(res if nregs == 1 else em.b.extract_value(res, i), p, align=4)


@lowering("ptx.smem_addr")
def _smem_addr(em, c):
    """A shared-space pointer's value is its offset in the shared window."""
    p, _ = em.address(c.args[0], ty.SHARED)
    return em.b.trunc(em.b.ptrtoint(p, ty.I64), ty.I32)
