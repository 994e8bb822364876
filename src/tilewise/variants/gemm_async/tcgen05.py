"""gemm_async -> tcgen05: ``C (+)= A @ B`` with ``tcgen05.mma``, issued by one thread (sm_100a).

PTX ISA §9.7.16.10 (shapes Table 39, instruction descriptor Table 42, shared-memory
descriptor Table 40, datapaths §9.7.16.10.5). Operands: ``C`` a region of a float32
tensor-memory buffer, ``A`` a (M, K) region of shared or tensor memory, ``B`` a (K, N)
region of shared memory (``transB=True``: an (N, K) region, ``C (+)= A @ B.T``;
``transA=True``: A in shared memory as (K, M)); input kinds f16 (float16 / bfloat16),
tf32 (float32 read as tf32), f8f6f4 (float8_e4m3 / float8_e5m2, the two may be mixed).

Algorithm:

1. Accept thread scope (``Tx.gemm_async``; the instruction has single-thread semantics) with
   at most one thread reaching the call (``if T.ptx.elect_sync():``), on a target with
   tcgen05; ``cta_group`` 1 (default) or 2.
2. ``C``: the tensor-memory region's datapath (:mod:`tilewise.tile.tmem_region`): D, 128 rows
   (M = 128), or F, 64 rows (M = 64: a ``tmem_datapath("F")`` buffer or a 64-row half of a
   128-lane buffer), float32 columns ``col0 .. col0 + N`` (``col0`` may be a run-time
   value, e.g. a double-buffered accumulator). With ``cta_group=2`` the instruction's M is
   twice the CTA's rows and each CTA holds ``N / 2`` columns of B; only the CTA's 128-row
   half (Layout A, M = 256) is accepted: Layout B (M = 128 over two CTAs, "2x2") is shown in
   the PTX ISA only as a figure and is not modelled.
3. N a multiple of 8 (16 for cta_group 2) up to 256; K a multiple of the kind's K (16 for
   f16, 8 for tf32, 32 for f8f6f4).
4. ``A`` in shared memory and ``B`` described by shared-memory descriptors planned from their
   layouts (:mod:`tilewise.tile.matrix_desc`, the canonical layouts wgmma also uses): K-major,
   or MN-major for 8- and 16-bit inputs (PTX Table 54: a 32-bit MN-major operand needs the
   128-byte swizzle with 32-byte atoms, which tilewise's layouts do not express). Every
   element of every K-step is checked against the layout. ``A`` in tensor memory: a region on
   ``C``'s datapath (same lane alignment), columns ``8 i`` on for K-step ``i`` (256 bits a row).
5. The instruction descriptor (``tcgen05.instr_desc``) from the dtypes, M, N and majorness:
   one constant for the call.
6. Bind the low words of A's and B's descriptors at the regions' first elements once
   (:func:`tilewise.tile.matrix_desc.step_descriptors`); emit, per K-step ``i``, one
   ``T.ptx.tcgen05.mma`` (or ``.ts`` for A in tensor memory): D's address (allocation + lane
   alignment + column), A's and B's descriptors at the step's first element (the bound
   word plus the step's constant offset), ``enable_input_d`` = ``accum`` for the first step
   (a run-time bool is passed through), true after it.
7. Emit no commit, fence or wait: completion (``T.ptx.tcgen05.commit`` to an mbarrier, the
   wait, ``T.ptx.tcgen05.fence.after_thread_sync``) is the caller's.
"""

from __future__ import annotations

from tilewise.ir import dtype as dt
from tilewise.ir.expr import BufferRegion, Cast, IntImm, as_int
from tilewise.ir.stmt import Evaluate, seq
from tilewise.ptx import tcgen05
from tilewise.ptx.table import PTX_OPS
from tilewise.tile import options as O
from tilewise.tile import predicates as P
from tilewise.tile.matrix_desc import (Orientation, plan_operand, step_accumulates,
                                       step_descriptors)
from tilewise.tile.registry import DispatchFail, predicate, register_dispatch
from tilewise.tile.tmem_region import cell_offset, classify


def _three_regions(ctx):
    args = ctx.call.args
    if len(args) != 3 or not all(isinstance(a, BufferRegion) for a in args):
        return False, "operands must be three buffer regions (C, A, B)"
    return True


def _memories(ctx):
    c, a, b = ctx.call.args
    if c.buffer.scope != "tmem":
        return False, (f"C ({c.buffer.name!r}) is in {c.buffer.scope} memory; tcgen05.mma "
                       "accumulates in tensor memory (scope 'tmem')")
    if a.buffer.scope not in ("shared", "shared.dyn", "tmem"):
        return False, f"A ({a.buffer.name!r}) must be in shared or tensor memory"
    if b.buffer.scope not in ("shared", "shared.dyn"):
        return False, f"B ({b.buffer.name!r}) must be in shared memory"
    return True


def _dtypes(ctx):
    c, a, b = ctx.call.args
    ta, tb = a.buffer.dtype.name, b.buffer.dtype.name
    kind = tcgen05.kind_of(ta)
    if kind is None:
        return False, (f"A is {ta}; tcgen05.mma takes float16 / bfloat16 (kind::f16), "
                       "float32 as tf32 (kind::tf32) or float8_e4m3 / float8_e5m2 "
                       "(kind::f8f6f4)")
    if tb not in kind.codes or (kind.name != "f8f6f4" and ta != tb):
        return False, f"A is {ta} but B is {tb}; kind::{kind.name} needs " + (
            "fp8 on both sides" if kind.name == "f8f6f4" else f"{ta} on both sides")
    if c.buffer.dtype != dt.float32:
        return False, (f"C is {c.buffer.dtype}; the accumulator of this variant is float32 "
                       "(a float16 accumulator is not supported yet)")
    return True


def _cta_group(ctx) -> int:
    return int(ctx.option("cta_group", 1))


def _tile(region) -> tuple[int, ...]:
    """The region's shape without its unit dimensions (a stage ``As[s, :, :]`` is 2-D)."""
    return tuple(e for e in region.shape if e != 1)


def _shapes(ctx, kind):
    c, a, b = ctx.call.args
    tc, ta, tb = _tile(c), _tile(a), _tile(b)
    if len(tc) != 2 or len(ta) != 2 or len(tb) != 2:
        raise DispatchFail(f"C is {c.shape}, A {a.shape}, B {b.shape}: all three must be 2-D "
                           "tiles (C (M, N), A (M, K), B (K, N)), unit dimensions aside")
    g = _cta_group(ctx)
    o = Orientation.of(ctx)
    (m, n), (am, k, bk, bn) = tc, o.mnk(ta, tb)
    if a.buffer.scope == "tmem" and o.a_mn:
        raise DispatchFail("transA=True: an A in tensor memory is always (M, K)")
    if am != m or bk != k or bn * g != n:
        half = " (with cta_group=2 each CTA holds N / 2 columns of B)" if g == 2 else ""
        raise DispatchFail(f"C is {c.shape}, A {a.shape}, B {b.shape}: they must be (M, N) "
                           f"and {o.text()}{' (N / 2)' if g == 2 else ''}{half}")
    if g == 2 and m != 128:
        raise DispatchFail(f"cta_group=2 with {m} rows per CTA is M = {2 * m}, datapath Layout "
                           "B (2x2), which tilewise does not model (the PTX ISA shows it only "
                           "as a figure); use 128 rows per CTA (M = 256)")
    problem = tcgen05.mma_shape_problem(m * g, n, g)
    if problem:
        raise DispatchFail(problem)
    if k % kind.k:
        raise DispatchFail(f"K = {k} is not a multiple of {kind.k}, the K of one "
                           f"tcgen05.mma.kind::{kind.name}")
    return m, n, k


def _a_tmem(a, dc, kind, k):
    ta = classify(a, "A")
    if (ta.datapath, ta.lane0) != (dc.datapath, dc.lane0):
        raise DispatchFail(f"A in tensor memory is on datapath {ta.datapath} (lanes "
                           f"+{ta.lane0}) but C on {dc.datapath} (lanes +{dc.lane0}); they "
                           "must share the datapath and its lane alignment")
    if ta.packed:
        raise DispatchFail("A in tensor memory must be packed (e elements a cell, TCol = "
                           "col0 + j), as tcgen05.mma reads it")
    return ta


def _plans(ctx, kind, k):
    _, a, b = ctx.call.args
    mn_ok = a.buffer.dtype.bits in (8, 16)
    o = Orientation.of(ctx)
    pa = None if a.buffer.scope == "tmem" else plan_operand(a, o.a_mn, kind.k, mn_ok, "A",
                                                            "tcgen05")
    return pa, plan_operand(b, o.b_mn, kind.k, mn_ok, "B", "tcgen05")


def _taddr(region, t, cells: int = 0):
    addr = region.buffer.allocated_addr
    if addr is None:
        raise DispatchFail(f"tensor-memory buffer {region.buffer.name!r} has no "
                           "allocated_addr (declare it with allocated_addr=tmem_addr[0])")
    off = cell_offset(t, cells)
    if as_int(off) == 0:
        return addr
    return addr + (off if off.dtype == addr.dtype else Cast(addr.dtype, off))


def _emit(ctx):
    c, a, b = ctx.call.args
    kind = tcgen05.kind_of(a.buffer.dtype.name)
    m, n, k = _shapes(ctx, kind)
    dc = classify(c, "C")
    if dc.packed:
        raise DispatchFail("C's columns must be consecutive float32 cells (TCol = col0 + j)")
    ta = _a_tmem(a, dc, kind, k) if a.buffer.scope == "tmem" else None
    pa, pb = _plans(ctx, kind, k)
    g = _cta_group(ctx)
    idesc = tcgen05.instr_desc(kind.name, a.buffer.dtype.name, b.buffer.dtype.name, "float32",
                               m * g, n, pa is not None and not pa.k_major, not pb.k_major)
    d_addr = _taddr(c, dc)
    out, da = [], None
    if pa is not None:
        let_a, da = _descriptors(pa, a)
        out.append(let_a)
    let_b, db = _descriptors(pb, b)
    out.append(let_b)
    for i in range(pb.steps):
        enable = step_accumulates(ctx, i)
        if ta is not None:
            a_op, name = _taddr(a, ta, i * tcgen05.A_TMEM_COLS), "ptx.tcgen05.mma.ts"
        else:
            a_op, name = da[i], "ptx.tcgen05.mma"
        call = PTX_OPS[name].call([d_addr, a_op, db[i], IntImm(idesc, dt.uint32), enable,
                                   kind.name, g], {}, span=ctx.span)
        out.append(Evaluate(call, span=ctx.span))
    ctx.info.append(_describe(kind, m * g, n, g, pb.steps, dc, pa, pb))
    return seq(*out)


def _descriptors(plan, region):
    """The shared-memory descriptors of ``region``'s K-steps: a LetStmt and one per step."""
    fields = tcgen05.smem_desc_fields(plan.lbo, plan.sbo, plan.swizzle)
    return step_descriptors(plan, fields, region.buffer)


def _describe(kind, m, n, g, steps, dc, pa, pb) -> str:
    form = lambda p: ("K" if p.k_major else "MN") + f"-major, swizzle {p.swizzle or 'none'}"  # noqa
    a = "tensor memory" if pa is None else form(pa)
    lanes = f" lanes +{dc.lane0}" if dc.lane0 else ""
    return (f"{steps} x tcgen05.mma.cta_group::{g}.kind::{kind.name} M{m} N{n} K{kind.k} "
            f"(D datapath {dc.datapath}{lanes}; A {a}; B {form(pb)})")


@register_dispatch("gemm_async", "cuda", variant="tcgen05", priority=30,
                   options=(O.ACCUM, O.CTA_GROUP, O.TRANS_A, O.TRANS_B), when=[
    predicate("target has tcgen05", P.has_feature, feature="tcgen05", what="tcgen05.mma"),
    predicate("three regions", _three_regions),
    predicate("scope", P.scope_in, scopes=("thread",)),
    predicate("one issuing thread", P.one_issuer, what="tcgen05.mma"),
    predicate("memories", _memories),
    predicate("input dtypes", _dtypes),
])
def tcgen05_variant(ctx):
    return _emit(ctx)
