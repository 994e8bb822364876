"""Lowerings generated from the table: every entry that names an intrinsic or inline PTX
gets its lowering from the row, every other entry a hand-written one; inline PTX with
read-write registers (the wgmma accumulator form) lowers and assembles."""

import pytest

from tilewise.codegen import all_lowerings, generate
from tilewise.codegen.backend import emit_ptx
from tilewise.codegen.cubin import link_cubin
from tilewise.codegen.lowerings.generated import asm_lowering
from tilewise.codegen.registry import LOWERINGS
from tilewise.ir import dtype as dt
from tilewise.ir.expr import BufferLoad, Call, IntImm, Var
from tilewise.ir.stmt import Buffer, BufferStore, DeclBuffer, Evaluate, PrimFunc, ThreadBinding, seq
from tilewise.ptx.operands import Param
from tilewise.ptx.table import PTX_OPS, Asm, PtxOp

ROWS = sorted(PTX_OPS.values(), key=lambda o: o.name)


@pytest.mark.parametrize("op", ROWS, ids=[o.name for o in ROWS])
def test_lowering_is_generated_exactly_when_the_row_names_one(op):
    fn = all_lowerings()[op.name]
    generated = fn.__module__.endswith("lowerings.generated")
    assert generated == (op.llvm is not None), (op.name, fn.__module__)
    for alias in op.aliases:
        assert all_lowerings()[alias] is fn


def test_inline_ptx_with_read_write_registers_lowers_and_assembles(monkeypatch):
    """Two registers read and written by one inline PTX statement: outputs ``$0, $1``, each
    tied to its input ``$2, $3`` (how a wgmma accumulator is passed)."""
    acc = Param("acc", "regs_inout", count=lambda v: 2)
    op = PtxOp("ptx.test_asm", (), "add.u32 (twice)", regs=acc,
               llvm=Asm("add.u32 $0, $2, 7;\n\tadd.u32 $1, $3, 9;", ""))
    monkeypatch.setitem(LOWERINGS, op.name, asm_lowering(op))
    pa = Var("A_ptr", dt.handle)
    g = Buffer("G", (4,), dt.uint32, data=pa)
    r = Buffer("R", (2,), dt.uint32, scope="local")
    regs = [BufferLoad(r, (IntImm(i),)) for i in range(2)]
    body = seq(DeclBuffer(r), BufferStore(r, (IntImm(0),), BufferLoad(g, (IntImm(0),))),
               BufferStore(r, (IntImm(1),), BufferLoad(g, (IntImm(1),))),
               Evaluate(Call(op.name, op.bind(regs, {}), dt.handle)),
               BufferStore(g, (IntImm(2),), regs[0]), BufferStore(g, (IntImm(3),), regs[1]))
    func = PrimFunc("k_asm", (pa,), ((pa, g),), (ThreadBinding(Var("tid"), "thread_id", (32,)),),
                    body)
    em = generate(func, {})
    ptx = emit_ptx(str(em.module), em.name, "sm_90a", "+ptx80")
    assert "add.u32" in ptx and ", 7;" in ptx and ", 9;" in ptx
    assert link_cubin(ptx, "sm_90a")[:4] == b"\x7fELF"
