"""Code generation details a fast warp-specialised GEMM depends on, checked in the PTX and
LLVM IR (no GPU): a kernel that calls setmaxnreg declares its thread count (.reqntid: ptxas
ignores setmaxnreg when the register count at entry is unknown, C7508; whether it is
honoured, tests/codegen/test_assembler.py), and a wgmma that
overwrites its accumulator (scale-d false) passes no old values (they would stay live, and
LLVM copies them under an in-flight wgmma, where ptxas then injects a wait)."""

import test_gemm_trans as TT
from exload import load_example

import tilewise as tw

gemm_hopper = load_example("gemm_hopper")


def test_setmaxnreg_kernels_declare_their_thread_count():
    ptx = tw.compile(gemm_hopper.make_gemm(256, 256, 128), "sm_90a").source("ptx")
    assert "setmaxnreg" in ptx and ".reqntid 384" in ptx
    assert ".minnctapersm" not in ptx and ".maxnreg" not in ptx  # nothing else was asked for


def test_an_explicit_minctasm_or_maxnreg_is_kept():
    ptx = tw.compile(gemm_hopper.make_gemm(256, 256, 128), "sm_90a", maxnreg=168,
                     minctasm=1).source("ptx")
    assert ".maxnreg 168" in ptx and ".minnctapersm 1" in ptx


def test_a_wgmma_with_scale_d_false_reads_no_old_accumulator():
    llvm = tw.compile(TT.make_wgmma("bfloat16", 64, 64), "sm_90a").source("llvm")
    calls = [c.split("store ")[0] for c in llvm.split("asm sideeffect")[1:]
             if "wgmma.mma_async" in c.split("store ")[0]]  # each call's text and operands
    assert len(calls) == 4
    assert "i32 undef" in calls[0] and not any("i32 undef" in c for c in calls[1:])
