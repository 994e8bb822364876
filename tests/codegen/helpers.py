"""Flat IR built by hand: one tiny kernel per PTX-table entry."""

from tilewise.ir import dtype as dt
from tilewise.ir.expr import AddressOf, BufferLoad, Call, Cast, IntImm, StringImm, Var
from tilewise.ir.stmt import (Buffer, BufferStore, DeclBuffer, Evaluate, PrimFunc, ThreadBinding,
                              seq)
from tilewise.ptx.table import REQUIRED

F32 = dt.DTYPES["float32"]
_GLOBAL_DST = {"ptx.cp_async.bulk.s2g"}


def _operand(op, p, bufs):
    if p.kind == "ptr":
        if op.name == "ptx.ld_st":  # global -> global (shared would be undef, folded away)
            return AddressOf(bufs["global" if p.name == "dst" else "fglobal"], (IntImm(0),))
        if op.name in _GLOBAL_DST:  # a store to global memory: dst global, src shared
            return AddressOf(bufs["global"] if p.name == "dst" else bufs["shared"],
                             (IntImm(0),))
        return AddressOf(bufs["global"] if p.name == "src" else bufs["shared"], (IntImm(0),))
    if p.kind == "imm":
        if p.default is None:
            return None  # an optional immediate left out
        if p.default is not REQUIRED:
            return IntImm(p.default)
        return IntImm(p.choices[0] if p.choices else 0)
    if p.kind == "flag":
        return IntImm(0, dt.bool_)
    if p.kind == "str":
        return StringImm(p.choices[0])
    if p.default is None:
        return None
    if op.math:
        return BufferLoad(bufs["fglobal"], (IntImm(0),))
    if p.name == "taddr":
        return BufferLoad(bufs["local"], (IntImm(0),))
    if p.name == "nbytes":
        return IntImm(16)  # bulk copies move a multiple of 16 bytes
    return IntImm(1)


def entry_kernel(op) -> PrimFunc:
    """A flat kernel of 128 threads calling table entry ``op`` once."""
    pa, pb = Var("A_ptr", dt.handle), Var("B_ptr", dt.handle)
    g = Buffer("G", (64,), dt.uint32, data=pa)
    fg = Buffer("F", (64,), F32, data=pb)
    sh = Buffer("S", (64,), dt.uint32, scope="shared")
    loc = Buffer("R", (4,), dt.uint32, scope="local")
    bufs = {"global": g, "fglobal": fg, "shared": sh, "local": loc}
    args = [_operand(op, p, bufs) for p in op.params]
    if op.varargs:
        args.append(BufferLoad(loc, (IntImm(1),)))
    call = Call(op.name, tuple(args), op.result_type(args) or dt.handle)
    if op.math:
        body = BufferStore(fg, (IntImm(1),), call)
    elif op.returns is not None:
        body = BufferStore(g, (IntImm(2),), Cast(dt.uint32, call))
    else:
        body = Evaluate(call)
    if op.name == "ptx.tcgen05.ld":
        body = seq(body, BufferStore(g, (IntImm(3),), BufferLoad(loc, (IntImm(1),))))
    tid = Var("tid")
    return PrimFunc(f"k_{op.name.replace('.', '_')}", (pa, pb), ((pa, g), (pb, fg)),
                    (ThreadBinding(tid, "thread_id", (128,)),),
                    seq(DeclBuffer(sh), DeclBuffer(loc), body))


def spelling(op) -> str:
    """The fixed part of the table's PTX spelling (before the first placeholder)."""
    head = op.ptx.split()[0]
    for stop in ("{", "<", "::N"):
        head = head.split(stop)[0]
    return head
