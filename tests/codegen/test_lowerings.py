"""Every PTX-table entry has an LLVM lowering, lowers, and assembles (nvJitLink)."""

import pytest

from tilewise.codegen import all_lowerings, generate
from tilewise.codegen.backend import emit_ptx
from tilewise.codegen.cubin import link_cubin
from tilewise.ir.verify import verify
from tilewise.passes.check_targets import check_targets
from tilewise.ptx.printf import SYSCALLS
from tilewise.ptx.table import PTX_OPS
from tilewise.pipeline import lower as tw_lower
from tilewise.target import Target, ptx_feature

from .helpers import entry_kernel, spelling


def _target_for(op) -> Target:
    """sm_90a, or the first of sm_100a that has the row's feature."""
    return next(t for t in (Target("sm_90a"), Target("sm_100a"))
                if op.feature is None or t.has(op.feature))


def _ptx(func, target):
    feats, _ = check_targets(func, target)
    em = generate(func, {})
    text = str(em.module)
    return text, emit_ptx(text, em.name, target.llvm_cpu,
                          ptx_feature(target.ptx_version_for(feats)), em.libdevice)


def test_every_table_entry_has_a_lowering():
    missing = sorted(set(PTX_OPS) - set(all_lowerings()))
    assert not missing, f"PTX table entries without an LLVM lowering: {missing}"


@pytest.mark.parametrize("name", sorted(PTX_OPS))
def test_entry_lowers_to_its_ptx(name):
    op = PTX_OPS[name]
    target = _target_for(op)
    func = verify(entry_kernel(op), flat=True)
    llvm_ir, ptx = _ptx(func, target)
    externs = [line for line in ptx.splitlines() if line.startswith(".extern .func")]
    assert all(line.split("(")[0].split()[-1] in SYSCALLS or
               line.split()[-1] in SYSCALLS for line in externs), externs
    if op.math:
        assert op.ptx in llvm_ir  # __nv_<name>: linked and inlined, so checked before O3
    else:
        assert spelling(op) in ptx, f"{spelling(op)!r} not in the PTX of {name}"


ASSEMBLED = sorted(n for n, op in PTX_OPS.items() if not op.math) + ["pow"]


@pytest.mark.parametrize("name", ASSEMBLED)
def test_entry_assembles_to_cubin(name):
    """Every instruction (one libdevice function for the math entries) is accepted by
    nvJitLink for its target: LLVM selected it and ptxas assembled what LLVM printed."""
    op = PTX_OPS[name]
    target = _target_for(op)
    _, ptx = _ptx(entry_kernel(op), target)
    cubin = link_cubin(ptx, target.llvm_cpu)
    assert cubin[:4] == b"\x7fELF"


def test_cp_async_prefetch_hint_is_inline_ptx_that_assembles():
    """cp.async's L2 prefetch size has no LLVM intrinsic; its inline PTX must assemble."""
    from tilewise.ir.expr import IntImm

    op = PTX_OPS["ptx.cp_async"]
    func = entry_kernel(op)
    call = func.body.stmts[-1].value
    prefetched = type(call)(call.op, call.args[:5] + (IntImm(256),), call.type)
    body = type(func.body)(func.body.stmts[:-1] + (type(func.body.stmts[-1])(prefetched),))
    func = func.with_body(body)
    target = Target("sm_90a")
    _, ptx = _ptx(func, target)
    assert "cp.async.ca.shared.global.L2::256B [%rd1], [%rd2], 4;" in ptx
    assert link_cubin(ptx, target.llvm_cpu)[:4] == b"\x7fELF"


@pytest.mark.parametrize("kind,packed,imm", [("ld", False, 2), ("ld", True, 4),
                                             ("st", False, 2), ("st", True, 4)])
def test_16x32bx2_half_split_is_the_simulators(kind, packed, imm):
    """``.16x32bx2`` takes the upper half-warp's column offset as an immediate; the code
    generator passes what the simulator uses (ptx/tcgen05.half_split: num unpacked,
    2 * num packed), so both put the halves side by side."""
    from tilewise import from_source

    flag = "True" if packed else "False"
    regs = ", ".join(f"R[{i}]" for i in range(2))
    src = f'''
@T.prim_func
def k(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (128,), "uint32")
    T.device_entry()
    tid = T.thread_id([128])
    R = T.alloc_local((2,), "uint32")
    T.ptx.tcgen05.{kind}(A[0], 0, 0, "16x32bx2", 2, {flag}, {regs})
    A[tid] = R[0]
'''
    target = Target("sm_100a")
    ptx = _ptx(tw_lower(from_source(src), target).func, target)[1]
    line = next(ln for ln in ptx.splitlines() if f"tcgen05.{kind}.sync.aligned.16x32bx2" in ln)
    assert f", {imm};" in line or f", {imm}, {{" in line, line
