"""Operand checks of the PTX table happen once, when a call is bound: each malformed
``T.ptx.*`` call is a ScriptError at the user's line (marked ``# <-``), whatever runs the
kernel afterwards (the code generator and the simulator no longer check them)."""

import pytest

import tilewise as tw
from tilewise import from_source
from tilewise.ir import dtype as dt
from tilewise.ir.expr import IntImm, Var
from tilewise.ptx.operands import KINDS, Param
from tilewise.ptx.table import PTX_OPS, PtxOp

HEAD = '''
@T.prim_func
def k(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128, 32), "float16")
    T.device_entry()
    tid = T.thread_id([128])
    R = T.alloc_local((8,), "uint32")
    H = T.alloc_local((8,), "float16")
    S = T.alloc_shared((64,), "uint32")
'''
FILE = "user_kernel.py"


def body(*lines: str) -> str:
    return HEAD + "".join("    " + ln + "\n" for ln in lines)


CASES = [
    ("ld-register-count", "moves 4 32-bit register(s) per thread; the call passes 3",
     "exactly 4", body('T.ptx.tcgen05.ld(R[0], 0, 0, "16x128b", 2, False, R[0], R[1], R[2])'
                       "  # <-")),
    ("ld-shape-num", ".16x256b.x64 would move 256 registers per thread", None,
     body('T.ptx.tcgen05.ld(R[0], 0, 0, "16x256b", 64, False)  # <-')),
    ("ld-destination", "register 0 of T.ptx.tcgen05.ld is a destination", "R32[i]",
     body('T.ptx.tcgen05.ld(R[0], 0, 0, "32x32b", 1, False, tid)  # <-')),
    ("ld-destination-16bit", "register 0 of T.ptx.tcgen05.ld is a destination", None,
     body('T.ptx.tcgen05.ld(R[0], 0, 0, "32x32b", 1, False, H[0])  # <-')),
    ("st-register-bits", "register 0 of T.ptx.tcgen05.st must be a 32-bit value, got float16",
     "uint32 view", body('T.ptx.tcgen05.st(R[0], 0, 0, "32x32b", 1, False, H[0])  # <-')),
    ("imm-range", "operand 'row' of T.ptx.tcgen05.st is 200; PTX allows 0..127", "0..127",
     body('T.ptx.tcgen05.st(R[0], 200, 0, "32x32b", 1, False, R[0])  # <-')),
    ("ptr-not-address", "operand 'mbar' of T.ptx.mbarrier.init must be an address",
     "T.address_of", body("T.ptx.mbarrier.init(S[0], 1)  # <-")),
    ("ptr-wrong-space", "must be an address in shared memory; 'A' is in global memory",
     "shared buffer", body("T.ptx.mbarrier.init(T.address_of(A[0, 0]), 1)  # <-")),
    ("taddr-float", "is a tensor-memory address and must be a 32-bit integer", None,
     body("T.ptx.tcgen05.dealloc(T.float32(1.0), 32)  # <-")),
    ("value-string", "operand 'count' of T.ptx.mbarrier.init must be a number", None,
     body('T.ptx.mbarrier.init(T.address_of(S[0]), "one")  # <-')),
]


def _marked_line(src: str) -> int:
    return next(i for i, ln in enumerate(src.splitlines(), 1) if "# <-" in ln)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_operand_checked_when_bound(case):
    _, message, hint, src = case
    with pytest.raises(tw.ScriptError) as info:
        from_source(src, filename=FILE)
    err, text = info.value, str(info.value)
    assert message in text
    if hint is not None:
        assert hint in (err.hint or "")
    assert err.span is not None and (err.span.file, err.span.line) == (FILE, _marked_line(src))
    assert "^" in text and "Traceback" not in text and "tilewise/" not in text


def test_every_operand_of_the_table_is_of_a_known_kind():
    for op in {id(o): o for o in PTX_OPS.values()}.values():
        for p in op.params + ((op.regs,) if op.regs else ()):
            assert p.kind in KINDS, (op.name, p.name, p.kind)
            if p.kind == "imm":
                assert p.choices or (p.lo is not None and p.hi is not None), (op.name, p.name)
            if p.kind.startswith("regs"):
                assert p is op.regs and p.count is not None, (op.name, p.name)


def _synthetic(*params, regs=None) -> PtxOp:
    return PtxOp("ptx.synthetic", params, "synthetic", regs=regs)


def test_descriptor_operand_is_a_64bit_integer():
    op = _synthetic(Param("desc", "desc64"))
    assert op.bind([Var("d", dt.uint64)], {})[0].dtype == dt.uint64
    assert op.bind([5], {})[0].dtype == dt.uint64  # a Python int becomes a uint64 constant
    with pytest.raises(tw.ScriptError, match="64-bit descriptor and must be a 64-bit integer"):
        op.bind([Var("d", dt.int32)], {})


def test_immediate_with_a_step():
    op = _synthetic(Param("n", "imm", lo=24, hi=256, step=8))
    assert op.bind([232], {})[0].value == 232
    for bad in (20, 100, 264):
        with pytest.raises(tw.ScriptError, match=f"is {bad}; PTX allows 24..256 in steps of 8"):
            op.bind([bad], {})


def test_read_write_registers_are_destinations():
    regs = Param("acc", "regs_inout", count=lambda v: 2)
    op = _synthetic(regs=regs)
    with pytest.raises(tw.ScriptError, match="register 0 of T.ptx.synthetic is a destination"):
        op.bind([IntImm(1), IntImm(2)], {})
