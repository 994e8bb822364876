"""gemm_async -> wgmma: ``C (+)= A @ B`` by one warpgroup with ``wgmma.mma_async`` (sm_90a).

PTX ISA §9.7.15. Operands: ``C`` a (64, N) register tile of the warpgroup whose layout is
the wgmma accumulator fragment (:func:`tilewise.layout.atoms.wgmma_accumulator`), float32
(or float16 with float16 inputs); ``A`` a (64, K) and ``B`` a (K, N) region of shared
memory, of one input dtype (float16, bfloat16, float32 as tf32, fp8 e4m3/e5m2). With
``transB=True`` B is given as its transpose, an (N, K) region (``C (+)= A @ B.T``): a
row-major (N, K) tile of B is K-major, the only form fp8 and tf32 take; ``transA=True``
gives A as (K, M).

Algorithm:

1. Accept warpgroup scope with all 128 threads active, on a target with wgmma; N a
   multiple of 8 up to 256; K a multiple of the instruction's K (16, 8 or 32).
2. Describe A and B by matrix descriptors from their layouts
   (:mod:`tilewise.tile.matrix_desc`): K-major, or MN-major (transposed, float16 and
   bfloat16 only) — a row-major (K, N) tile of B is MN-major; every element of every
   K-step is checked against the canonical layout, or the variant declines naming it.
3. Bind the low words of A's and B's descriptors at the regions' first elements
   (``T.ptx.smem_addr``, with the fixed LBO/SBO/swizzle fields) once
   (:func:`tilewise.tile.matrix_desc.step_descriptors`), then emit, per K-step ``i``, one
   ``T.ptx.wgmma.mma_async`` whose descriptors are those plus the step's constant start
   offset, the accumulator registers of ``C`` read and written in place, and ``scale-d``
   = ``accum`` for the first step, true after it.
4. Emit no ``wgmma.fence``, commit or wait: completion is the caller's.
"""

from __future__ import annotations

from tilewise.ir.expr import BufferLoad, IntImm
from tilewise.ir.stmt import Evaluate, seq
from tilewise.ptx import wgmma
from tilewise.ptx.table import PTX_OPS
from tilewise.tile import options as O
from tilewise.tile import predicates as P
from tilewise.tile.matrix_desc import (Orientation, plan_operand, step_accumulates,
                                       step_descriptors)
from tilewise.tile.registry import predicate, register_dispatch


def _operands(ctx):
    args = ctx.call.args
    if len(args) != 3:
        return False, "operands must be three buffer regions (C, A, B)"
    return True


def _matrix(region) -> tuple:
    """The region's shape without its extent-1 dimensions (``As[s, 0:64, :]`` is 64 x K)."""
    return tuple(e for e in region.shape if e != 1)


def _c_tile(ctx):
    c, a, b = ctx.call.args
    buf = c.buffer
    if buf.scope != "local":
        return False, f"C ({buf.name!r}) must be a register tile (scope 'local'), not {buf.scope}"
    am, bm = _matrix(a), _matrix(b)
    o = Orientation.of(ctx)
    m, ka, kb, n = o.mnk(am, bm) if len(am) == len(bm) == 2 else (0, 0, 0, 0)
    if m != wgmma.M or ka != kb or c.shape != (wgmma.M, n):
        return False, (f"C is {c.shape}, A {a.shape}, B {b.shape}: one warpgroup computes a "
                       f"(64, N) tile from {o.text()} with M = 64")
    n = c.shape[1]
    problem = wgmma.n_problem(n)
    if problem:
        return False, problem
    if buf.dtype.name not in wgmma.ACC_TYPE:
        return False, f"C is {buf.dtype}; wgmma accumulates in float32 or float16"
    if buf.dtype.bits != 32:
        return False, "a float16 accumulator is not supported yet: use float32 for C"
    if tuple(buf.shape) != (wgmma.M, n):
        return False, (f"C must be the whole (64, {n}) register tile {buf.name!r}, not a "
                       "region of a larger one")
    from tilewise.layout.atoms import match_atom, wgmma_accumulator

    if buf.layout is None:
        return False, (f"C ({buf.name!r}) needs the wgmma accumulator layout: allocate it with "
                       f"layout=wgmma_accumulator({n})")
    m = match_atom(buf.layout, wgmma_accumulator(n))
    if not m:
        return False, f"C's layout is not the wgmma accumulator fragment: {m.reason}"
    return True


def _a_shared(ctx):
    a = ctx.call.args[1]
    if a.buffer.scope == "local":
        return False, (f"A ({a.buffer.name!r}) is a register tile; the wgmma_rs variant takes "
                       "A from registers")
    return True


def _inputs(ctx):
    _, a, b = ctx.call.args
    if a.buffer.dtype != b.buffer.dtype:
        return False, f"A is {a.buffer.dtype} but B is {b.buffer.dtype}"
    if a.buffer.dtype.name not in wgmma.K_OF:
        return False, f"wgmma takes float16, bfloat16, float32 (tf32) or fp8, not " \
                      f"{a.buffer.dtype}"
    return True


def accumulator_regs(c) -> list:
    """The accumulator tile ``c``'s registers, in the order wgmma names them."""
    return [BufferLoad(c.buffer, tuple(IntImm(x) for x in wgmma.acc_coords(0, v)))
            for v in range(wgmma.acc_regs(c.shape[1], c.buffer.dtype.name))]


def _emit(ctx):
    c, a, b = ctx.call.args
    ab = a.buffer.dtype.name
    k_inst = wgmma.K_OF[ab]
    transposable = wgmma.transposable(ab)
    o = Orientation.of(ctx)
    pa = plan_operand(a, o.a_mn, k_inst, transposable, "A")
    pb = plan_operand(b, o.b_mn, k_inst, transposable, "B")
    n = c.shape[1]
    regs = accumulator_regs(c)
    op = PTX_OPS["ptx.wgmma.mma_async"]
    let_a, da = step_descriptors(pa, pa.fields(), a.buffer)
    let_b, db = step_descriptors(pb, pb.fields(), b.buffer)
    out = [let_a, let_b]
    for i in range(pa.steps):
        call = op.call([da[i], db[i], step_accumulates(ctx, i), n, ab, c.buffer.dtype.name,
                        not pa.k_major, not pb.k_major, *regs], {}, span=ctx.span)
        out.append(Evaluate(call, span=ctx.span))
    form = lambda p: ("K" if p.k_major else "MN") + f"-major, swizzle {p.swizzle or 'none'}"  # noqa
    ctx.info.append(f"{pa.steps} x wgmma m64n{n}k{k_inst} (A {form(pa)}; B {form(pb)})")
    return seq(*out)


@register_dispatch("gemm_async", "cuda", variant="wgmma", priority=20,
                   options=(O.ACCUM, O.TRANS_A, O.TRANS_B),
                   declines={"cta_group": "cta_group= is a tcgen05 option; wgmma is one "
                             "warpgroup"}, when=[
    predicate("target has wgmma", P.has_feature, feature="wgmma", what="wgmma"),
    predicate("three regions", _operands),
    predicate("scope", P.scope_in, scopes=("warpgroup",)),
    predicate("all threads active", P.all_active),
    predicate("A in shared memory", _a_shared),
    predicate("input dtypes", _inputs),
    predicate("accumulator tile", _c_tile),
])
def wgmma_variant(ctx):
    return _emit(ctx)
