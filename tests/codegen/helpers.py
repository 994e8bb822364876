"""Flat IR built by hand: one tiny kernel per PTX-table entry."""

from tilewise.ir import dtype as dt
from tilewise.ir.expr import AddressOf, BufferLoad, Cast, IntImm, Var
from tilewise.ir.stmt import (Buffer, BufferStore, DeclBuffer, Evaluate, PrimFunc, ThreadBinding,
                              seq)
from tilewise.ptx.operands import regs_written
from tilewise.ptx.table import REQUIRED

F32 = dt.DTYPES["float32"]


def _operand(op, p, bufs, k=0):
    if p.kind == "ptr":
        if p.space == "any":  # global -> global (shared would be undef, folded away)
            return AddressOf(bufs["global" if p.name == "dst" else "fglobal"], (IntImm(0),))
        return AddressOf(bufs[p.space], (IntImm(0),))
    if p.default is None:
        return None  # an optional operand left out
    if p.kind == "imm":
        if p.default is not REQUIRED:
            return p.default
        return p.choices[0] if p.choices else p.lo
    if p.kind == "flag":
        return False
    if p.kind == "str":
        return p.choices[0]
    if p.kind == "text":
        return f"{p.name}\n"  # T.print's format without conversions, an assert's message
    if p.kind == "tensormap":
        return bufs["tmap"]
    if op.math or (p.kind == "value" and p.dtype.is_float):
        return BufferLoad(bufs["fglobal"], (IntImm(k),))  # distinct operands: none folded
    if p.kind == "value" and p.dtype.bits == 64:
        return Cast(p.dtype, BufferLoad(bufs["global"], (IntImm(k),)))
    if p.kind == "value" and p.dtype != dt.int32:
        return BufferLoad(bufs["global"], (IntImm(k),))
    if p.kind == "taddr":
        return BufferLoad(bufs["local"], (IntImm(0),))
    if p.name == "nbytes":
        return 16  # bulk copies move a multiple of 16 bytes
    if p.name == "count":
        return 128  # named barriers count whole warps (also a fine mbarrier count)
    return 1


def entry_kernel(op) -> PrimFunc:
    """A flat kernel of 128 threads calling table entry ``op`` once (bound through the
    table, as the parser and the variants bind calls)."""
    pa, pb = Var("A_ptr", dt.handle), Var("B_ptr", dt.handle)
    g = Buffer("G", (64,), dt.uint32, data=pa)
    fg = Buffer("F", (64,), F32, data=pb)
    sh = Buffer("S", (64,), dt.uint32, scope="shared")
    loc = Buffer("R", (4,), dt.uint32, scope="local")
    tmap = Var("A_tmap", dt.tensormap)
    bufs = {"global": g, "fglobal": fg, "shared": sh, "local": loc, "tmap": tmap}
    args = [_operand(op, p, bufs, k) for k, p in enumerate(op.params)]
    params = (pa, pb) + ((tmap,) if any(p.kind == "tensormap" for p in op.params) else ())
    if op.regs is not None:
        values = {p.name: a for p, a in zip(op.params, args)}
        n = op.regs.count(values) if op.regs.count else 1
        args += [BufferLoad(loc, (IntImm(1 + i % 3),)) for i in range(n)]
    call = op.call(args, {})
    if op.math:
        body = BufferStore(fg, (IntImm(1),), call)
    elif call.type != dt.handle:
        body = BufferStore(g, (IntImm(2),), Cast(dt.uint32, call))
    else:
        body = Evaluate(call)
    if regs_written(op.regs):  # keep the result alive (mma.sync, ldmatrix: no side effect)
        body = seq(body, BufferStore(g, (IntImm(3),), BufferLoad(loc, (IntImm(1),))))
    tid = Var("tid")
    return PrimFunc(f"k_{op.name.replace('.', '_')}", params, ((pa, g), (pb, fg)),
                    (ThreadBinding(tid, "thread_id", (128,)),),
                    seq(DeclBuffer(sh), DeclBuffer(loc), body))


def spelling(op) -> str:
    """The fixed part of the table's PTX spelling (before the first placeholder)."""
    head = op.ptx.split()[0]
    for stop in ("{", "<", "::N"):
        head = head.split(stop)[0]
    return head
