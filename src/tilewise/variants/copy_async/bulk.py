"""copy_async -> bulk: whole contiguous runs moved by the TMA unit (``cp.async.bulk``).

PTX ISA §9.7.9.25.4 (``cp.async.bulk``): one thread hands the copy engine a contiguous
range of bytes (a multiple of 16, both ends 16-byte aligned). Global -> shared completes
on an mbarrier (``.mbarrier::complete_tx::bytes``); shared -> global is tracked by the
issuing thread's bulk async-groups (``cp.async.bulk.commit_group`` /
``cp.async.bulk.wait_group[.read]``). Completion is the caller's, as for every async
variant: for a load, ``T.ptx.mbarrier.arrive_expect_tx(bar, nbytes)`` before and
``T.ptx.mbarrier.wait_parity(bar, phase)`` after; for a store, commit and wait (with a
barrier before anyone overwrites the shared source).

Algorithm:

1. Accept, on targets with TMA (sm_90+), global -> shared with ``mbar=`` or shared ->
   global without it, one dtype, regions of one size (elements correspond in row-major
   order, so ``S[s, :, :]`` and ``A[r:r + 8, :]`` match), scope thread / warp / warpgroup /
   cta whose first thread is active. A swizzled or thread-distributed shared layout is
   declined (a bulk copy writes plain bytes; swizzles need the tensor form).
2. Walk the region in row-major order on both sides at once and cut it into maximal runs
   contiguous on *both* sides. The runs must all have one length ``L`` (a rectangular
   tile of row-major buffers: one run per row, or a single run when whole rows are
   copied), ``L * elem_bytes`` a multiple of 16, and every run start 16-byte aligned on
   both sides (constant part exactly, symbolic part by ``known_multiple``).
3. Emit, on the scope's first thread (``if <thread in scope> == 0``), one bulk copy per run,
   inside ``for f in range(runs)`` when there are several.
4. Emit no expect_tx, wait, commit or barrier.

Priority 25: above ldgsts (20), so a load that names ``mbar=`` gets the TMA unit and one
that does not gets cp.async (this variant declines it); stores have no other async variant.
"""

from __future__ import annotations

import numpy as np

from tilewise.ir.expr import AddressOf, IntImm, cmp
from tilewise.ir.stmt import Evaluate, IfThenElse
from tilewise.ptx.table import PTX_OPS
from tilewise.tile import options as O
from tilewise.tile import predicates as P
from tilewise.tile.partition import Plan, Side, emit, unravel
from tilewise.tile.registry import DispatchFail, predicate, register_dispatch

SCOPES = ("thread", "warp", "warpgroup", "cta")
PAIRS = (("shared*", "global"), ("global", "shared*"))
ALIGN = 16


def _direction(ctx):
    """A load needs ``mbar=`` (it completes on an mbarrier); a store must not have one."""
    load = ctx.src.buffer.scope == "global"
    mbar = ctx.option("mbar")
    if load and mbar is None:
        return False, ("a bulk load completes on an mbarrier: pass mbar= (without it "
                       "cp.async is used)")
    if not load and mbar is not None:
        return False, ("a bulk store completes through bulk async-groups, not an mbarrier: "
                       "drop mbar= and use T.ptx.cp_async.bulk.commit_group/wait_group")
    return True


def _plain_shared(ctx):
    side = ctx.dst if ctx.dst.buffer.scope.startswith("shared") else ctx.src
    layout = side.buffer.layout
    if layout is None:
        return True
    if getattr(layout, "swizzling", None) is not None:
        return False, (f"shared buffer {side.buffer.name!r} is swizzled; a bulk copy writes "
                       "plain bytes (a swizzled tile needs a TMA tensor copy)")
    if layout.thread_axes():
        return False, f"shared buffer {side.buffer.name!r} has a thread-distributed layout"
    return True


def plan_runs(dst: Side, src: Side) -> Plan:
    """One run per ``Plan`` step: ``vec`` = run length in elements, ``outer`` = runs."""
    shape = dst.region.shape
    n = dst.region.size
    od, os_ = (side.offsets(unravel(np.arange(n), side.region.shape)) for side in (dst, src))
    cont = (np.diff(od) == 1) & (np.diff(os_) == 1)
    starts = np.concatenate(([0], np.nonzero(~cont)[0] + 1))
    lengths = set(np.diff(np.concatenate((starts, [n]))).tolist())
    if len(lengths) != 1:
        raise DispatchFail(f"the tile splits into contiguous runs of {sorted(lengths)} "
                           "elements; bulk copies need runs of one length")
    run = lengths.pop()
    eb = dst.elem_bytes
    if run * eb % ALIGN:
        raise DispatchFail(f"contiguous runs are {run * eb} bytes, not a multiple of 16")
    for side, offs in ((dst, od), (src, os_)):
        align = side.alignment(offs[starts])
        if align % ALIGN:
            raise DispatchFail(f"{side.text}: runs start only {align}-byte aligned; a bulk "
                               "copy needs 16")
    return Plan(run, 1, len(starts), tuple(range(len(shape))), shape, eb)


def _emit(ctx):
    dst, src = Side("dst", ctx.dst), Side("src", ctx.src)
    plan = plan_runs(dst, src)
    load = src.buffer.scope == "global"
    op = PTX_OPS["ptx.cp_async.bulk.g2s" if load else "ptx.cp_async.bulk.s2g"]
    nbytes = plan.vec * plan.elem_bytes
    ctx.info.append(f"{plan.outer} bulk {'load' if load else 'store'}(s) of {nbytes} bytes")

    def make(dc, sc):
        args = [AddressOf(dst.buffer, dc), AddressOf(src.buffer, sc), IntImm(nbytes)]
        if load:
            args.append(ctx.option("mbar"))
        return Evaluate(op.call(args, {}, span=ctx.span), span=ctx.span)

    body = emit(plan, IntImm(0), dst, src, make)
    if ctx.scope_kind == "thread":
        return body
    return IfThenElse(cmp("==", ctx.scope_tid, 0), body, span=ctx.span)


#: The rules every copy-engine variant shares (bulk, tma, dsmem): one thread of the scope
#: issues the whole copy, of one dtype and one size (and none honours predicate=: the
#: copy engine cannot predicate per element, NO_PREDICATE).
NO_PREDICATE = {"predicate": "a copy by the copy engine cannot be predicated per element"}
ISSUED_BY_ONE_THREAD = (
    predicate("scope", P.scope_in, scopes=SCOPES),
    predicate("first thread active", P.first_thread_active),
    predicate("same dtype", P.same_dtype),
    predicate("same size", P.same_size),
)


@register_dispatch("copy_async", "cuda", variant="bulk", priority=25, options=(O.MBAR,),
                   declines={
    **NO_PREDICATE,
    "cache_hint": "bulk does not implement cache_hint= (.L2::cache_hint) yet",
    "prefetch_size": "prefetch_size= is a cp.async hint; bulk copies have none"}, when=[
    predicate("target has TMA", P.has_feature, feature="tma",
              what="cp.async.bulk"),
    predicate("operands are regions", P.operands_are_regions),
    predicate("compile-time sizes", P.static_sizes),
    predicate("global <-> shared", P.direction, pairs=PAIRS),
    predicate("completion", _direction),
    *ISSUED_BY_ONE_THREAD,
    predicate("plain shared layout", _plain_shared),
])
def bulk(ctx):
    return _emit(ctx)

