"""gemm_async -> wgmma_rs: ``C (+)= A @ B`` by one warpgroup with ``wgmma.mma_async`` taking A
from registers (sm_90a).

PTX ISA §9.7.15.5.1.1.1 ("Multiplicand A in registers"). Operands: ``C`` a (64, N) register
tile with the wgmma accumulator layout (float32), as for the ``wgmma`` variant; ``A`` a
(64, K) register region of float16 / bfloat16, K a multiple of 16; ``B`` a (K, N) region of
shared memory of A's dtype, K-major or MN-major (``transB=True``: B given as its transpose,
an (N, K) region). ``transA=`` is declined: A is the register fragment, (64, K). This is
how FlashAttention multiplies ``P = softmax(S)`` by V without writing P to shared memory:
the accumulator of S, cast to 16 bits in place, already is the A operand
(``tilewise.layout.wgmma_a_fragment(K)`` equals ``wgmma_accumulator(K)``).

Algorithm:

1. Accept warpgroup scope with all 128 threads active, on a target with wgmma; A a
   register tile (``local``) of float16 / bfloat16 and B in shared memory of that dtype;
   C as for ``wgmma``.
2. Evaluate A's layout (:func:`tilewise.tile.fragment.places`): for K-step ``s`` every
   element of the 64 x 16 slice must sit where the ISA's fragment puts it — element ``i``
   of thread ``t`` at ``a_coords(t, i)`` (:mod:`tilewise.ptx.wgmma`), in the same register
   element in every thread, elements ``2j, 2j + 1`` sharing one 32-bit register. The first
   element that is elsewhere is named in the decline.
3. Describe B by its matrix descriptor (:mod:`tilewise.tile.matrix_desc`), as ``wgmma``.
4. Emit a 32-bit view of A's register storage and per K-step one
   ``T.ptx.wgmma.mma_async.rs`` with that step's four A registers, B's descriptor, the
   accumulator registers of C in place, and ``scale-d`` = ``accum`` for the first step,
   true after it.
5. Emit no ``wgmma.fence``, commit or wait: completion is the caller's. A's registers
   belong to the wgmma until a ``wait_group`` retires it (the simulator reports a read or
   write of them before that), and a write of them since the last ``wgmma.fence`` is a
   hazard too.
"""

from __future__ import annotations

import numpy as np

from tilewise.ir.expr import BufferLoad, IntImm
from tilewise.ir.stmt import DeclBuffer, Evaluate, seq
from tilewise.ptx import wgmma
from tilewise.ptx.table import PTX_OPS
from tilewise.tile import options as O
from tilewise.tile import predicates as P
from tilewise.tile.fragment import places, word_view
from tilewise.tile.matrix_desc import (Orientation, plan_operand, step_accumulates,
                                       step_descriptors)
from tilewise.tile.registry import DispatchFail, predicate, register_dispatch

from .wgmma import _c_tile, _operands, accumulator_regs

STEP_K = 16  # K of one instruction with 16-bit inputs


def _a_registers(ctx):
    _, a, b = ctx.call.args
    if a.buffer.scope != "local":
        return False, (f"A ({a.buffer.name!r}) is in {a.buffer.scope} memory; this variant "
                       "takes A from registers (the wgmma variant takes it from shared memory)")
    if a.buffer.dtype.name not in wgmma.A_REG_TYPES:
        return False, (f"A is {a.buffer.dtype}; wgmma takes A from registers as float16 or "
                       "bfloat16 here")
    if b.buffer.dtype != a.buffer.dtype:
        return False, f"A is {a.buffer.dtype} but B is {b.buffer.dtype}"
    if a.shape[1] % STEP_K:
        return False, f"A has K = {a.shape[1]}, not a multiple of the instruction's {STEP_K}"
    return True


def a_words(ctx) -> list[tuple[int, ...]]:
    """Per K-step, the four 32-bit registers (words of A's storage) that hold a0..a3, the
    same in every thread; DispatchFail naming the first element out of place."""
    _, a, _ = ctx.call.args
    pl = places(a, ctx.thread_count, "A")
    name = f"A ({a.buffer.name!r})"
    t = np.arange(ctx.thread_count)[:, None]
    i = np.arange(8)[None, :]
    rows, cols0 = wgmma.a_coords(t, i)
    steps = []
    for s in range(a.shape[1] // STEP_K):
        cols = cols0 + STEP_K * s
        held, m = pl.thread[rows, cols], pl.m[rows, cols]
        bad = np.argwhere(held != t)
        if len(bad):
            k, e = bad[0]
            raise DispatchFail(f"{name}: element ({rows[k, e]}, {cols[k, e]}) is in thread "
                               f"{held[k, e]} of the warpgroup, but the wgmma A fragment puts "
                               f"it in thread {k} (give A the layout wgmma_a_fragment(K))")
        bad = np.argwhere(m != m[0])
        if len(bad):
            k, e = bad[0]
            raise DispatchFail(f"{name}: element ({rows[k, e]}, {cols[k, e]}) is register "
                               f"element {m[k, e]} of thread {k} but its counterpart in thread "
                               f"0 is element {m[0, e]}; a register holds the same fragment "
                               "element in every thread")
        steps.append(_pairs(name, m[0], rows[0], cols[0]))
    return steps


def _pairs(name: str, m, rows, cols) -> tuple[int, ...]:
    out = []
    for j in range(wgmma.A_REGS):
        lo, hi = int(m[2 * j]), int(m[2 * j + 1])
        if lo % 2 or hi != lo + 1:
            raise DispatchFail(f"{name}: elements ({rows[2 * j]}, {cols[2 * j]}) and "
                               f"({rows[2 * j + 1]}, {cols[2 * j + 1]}) of one A register are "
                               f"register elements {lo}, {hi}; two 16-bit inputs share a 32-bit "
                               "register, so they must be elements 2k, 2k + 1")
        out.append(lo // 2)
    return tuple(out)


def _emit(ctx):
    c, a, b = ctx.call.args
    steps = a_words(ctx)
    ab = a.buffer.dtype.name
    o = Orientation.of(ctx)
    pb = plan_operand(b, o.b_mn, STEP_K, True, "B")
    if pb.steps != len(steps):
        raise DispatchFail(f"A has K = {a.shape[1]} but B has K = {b.shape[1 - o.b_mn]}")
    root = a.buffer.storage_root()
    view = word_view(root, max(max(s) for s in steps) + 1, "wgmma (A from registers)")
    n = c.shape[1]
    regs = accumulator_regs(c)
    op = PTX_OPS["ptx.wgmma.mma_async.rs"]
    let_b, db = step_descriptors(pb, pb.fields(), b.buffer)
    out = [DeclBuffer(view, span=ctx.span), let_b]
    for i, words in enumerate(steps):
        a_regs = [BufferLoad(view, (IntImm(w),)) for w in words]
        call = op.call([*a_regs, db[i], step_accumulates(ctx, i), n, ab, c.buffer.dtype.name,
                        not pb.k_major, *regs], {}, span=ctx.span)
        out.append(Evaluate(call, span=ctx.span))
    form = ("K" if pb.k_major else "MN") + f"-major, swizzle {pb.swizzle or 'none'}"
    ctx.info.append(f"{len(steps)} x wgmma m64n{n}k{STEP_K} (A from registers; B {form})")
    return seq(*out)


@register_dispatch("gemm_async", "cuda", variant="wgmma_rs", priority=19,
                   options=(O.ACCUM, O.TRANS_B),
                   declines={"cta_group": "cta_group= is a tcgen05 option; wgmma is one "
                             "warpgroup",
                             "transA": "A from registers is the (64, K) wgmma A fragment; "
                             "transA= gives a transposed A in shared memory (variant wgmma)"},
                   when=[
    predicate("target has wgmma", P.has_feature, feature="wgmma", what="wgmma"),
    predicate("three regions", _operands),
    predicate("scope", P.scope_in, scopes=("warpgroup",)),
    predicate("all threads active", P.all_active),
    predicate("A in registers", _a_registers),
    predicate("accumulator tile", _c_tile),
])
def wgmma_rs_variant(ctx):
    return _emit(ctx)
