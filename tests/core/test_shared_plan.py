"""One layout of shared memory (passes/shared_plan.py), made by the pipeline and read by the
launch limits, the code generator and the simulator: the simulator's dynamic buffers sit at
the GPU's offsets, and a request no layout can honour is an error at tw.compile and
tw.simulate, at the buffer's line (not later, when the PTX is first asked for)."""

import numpy as np
import pytest

import tilewise as tw
from tilewise import from_source
from tilewise.errors import Span
from tilewise.ir import dtype as dt
from tilewise.ir.expr import BufferLoad, IntImm, Var
from tilewise.ir.stmt import Buffer, BufferStore, DeclBuffer, PrimFunc, ThreadBinding, seq
from tilewise.sim.compiler import Program
from tilewise.target import DYN_SHARED_PAD

SRC = '''
@T.prim_func
def k(A_ptr: T.handle):
    A = T.match_buffer(A_ptr, (64,), "int32")
    T.device_entry()
    bx = T.cta_id([1])
    tid = T.thread_id([64])
    S0 = T.alloc_shared((25,), "int32")
    D0 = T.alloc_buffer((40,), "int32", scope="shared.dyn")
    S1 = T.alloc_shared((64,), "int32", align=256)
    D1 = T.alloc_buffer((64,), "int32", scope="shared.dyn", align=1024)
    if tid < 25:
        S0[tid] = A[tid] + 1
    if tid < 40:
        D0[tid] = A[tid] + 2
    S1[tid] = A[tid]
    D1[tid] = A[tid]
    T.cuda.cta_sync()
    A[tid] = S0[tid % 25] + D0[tid % 40] + S1[tid] + D1[tid]
'''


def _slots(plan):
    return {s.buffer.name: (s.offset, s.nbytes, s.align, s.dynamic) for s in plan.slots}


def test_the_pipeline_lays_shared_memory_out_once_for_both_executors():
    k = tw.compile(from_source(SRC, filename="plan.py"), target="sm_90a")
    plan = k.lowered.shared
    assert _slots(plan) == {"S0": (0, 100, 16, False), "D0": (0, 160, 16, True),
                            "S1": (256, 256, 256, False), "D1": (1024, 256, 1024, True)}
    assert (plan.static_bytes, plan.dynamic_bytes) == (512, 1280)
    # the launch: the dynamic buffers plus the pad of the run-time rounding of their base
    assert k.dynamic_smem == plan.dynamic_request == 1280 + DYN_SHARED_PAD
    ptx = k.source("ptx")
    assert ".shared .align 256 .b8 S1[256];" in ptx and "1008;" in ptx
    # the simulator: static buffers from 0, the dynamic window on the next 1024 bytes
    prog = Program(k.lowered.func, plan)
    bases = {b.name: prog.plan.of(b).base for b in (s.buffer for s in plan.slots)}
    assert bases == {"S0": 0, "S1": 256, "D0": 1024, "D1": 2048}
    assert prog.plan.shared_bytes == 2048 + 256


def test_simulated_dynamic_buffers_run_at_their_offsets():
    a = np.arange(64, dtype=np.int32)
    tw.simulate(from_source(SRC, filename="plan.py"), a, target="sm_90a")
    i = np.arange(64)
    assert (a == i % 25 + 1 + i % 40 + 2 + 2 * i).all()


def _func_with_align(align: int, scope: str):
    """A kernel built as a tool would build it, without the parser's checks of align=."""
    span = Span("tool.py", 7, 4, "D = alloc(align=...)")
    pa, tid = Var("A_ptr", dt.handle), Var("tid", dt.int32)
    g = Buffer("A", (64,), dt.int32, data=pa)
    d = Buffer("D", (64,), dt.int32, scope=scope, align=align, span=span)
    body = seq(DeclBuffer(d, span=span), BufferStore(d, (tid,), BufferLoad(g, (tid,))),
               BufferStore(g, (tid,), BufferLoad(d, (IntImm(63),))))
    return PrimFunc("k_align", (pa,), ((pa, g),),
                    (ThreadBinding(tid, "thread_id", (64,)),), body)


@pytest.mark.parametrize("scope", ["shared.dyn", "shared"])
@pytest.mark.parametrize("align", [2048, 48])
def test_an_alignment_no_layout_honours_is_an_error_at_compile_and_simulate(align, scope):
    func = _func_with_align(align, scope)
    want = f"shared buffer 'D' asks for align={align}; shared memory honours a power of two " \
           "up to 1024 bytes"
    with pytest.raises(tw.CompileError, match=want) as e:
        tw.compile(func, target="sm_90a")
    assert (e.value.span.file, e.value.span.line) == ("tool.py", 7)
    assert "use align= a power of two from 4 to 1024" in e.value.hint
    with pytest.raises(tw.CompileError, match=want):
        tw.simulate(func, np.zeros(64, np.int32), target="sm_90a")
