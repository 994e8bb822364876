"""copy_async -> tma: tensor copies by the TMA unit (``cp.async.bulk.tensor``).

PTX ISA §9.7.9.25.5: one thread hands the copy engine a *tensor map* (the global array: up
to five dimensions, the box one copy moves, the shared-memory swizzle, the out-of-bounds
fill) and the coordinates of a box; the engine moves the whole box. Global -> shared
completes on an mbarrier (``complete_tx`` of the box bytes, out-of-bounds elements
included), optionally multicast into several CTAs of the cluster; shared -> global is
tracked by the issuing thread's bulk async-groups, and may reduce (add / min / max) into
global memory. Elements outside the array are filled on loads (zeros, or NaN with
``oob="nan"``) and skipped on stores, so one kernel serves every array size: tails need
no code. Completion is the caller's: ``T.ptx.mbarrier.arrive.expect_tx(bar, bytes)`` and
a wait for a load, ``T.ptx.cp_async.bulk.commit_group()`` / ``wait_group`` for a store
(after ``T.ptx.fence.proxy_async()`` when threads wrote the shared tile).

Algorithm:

1. Accept, on targets with TMA (sm_90+), global -> shared with ``mbar=`` or shared ->
   global without it, one dtype, regions of one size, scope thread / warp / warpgroup / cta
   whose first thread is active. The shared layout may be swizzled (32 / 64 / 128 bytes,
   for elements of the copy's size); a swizzled buffer must be aligned to the swizzle's
   repeat (256 / 512 / 1024 bytes: allocations with a swizzled layout are by default) so
   that the engine's absolute-address swizzle is the layout's. Options: ``cta_mask``
   (multicast, loads only, in a kernel that declares a cluster), ``cta_group`` (1 / 2,
   tcgen05 targets), ``cache_hint``, ``oob``, ``l2_promotion``, ``prefetch_tensormap`` and
   ``use_tma_reduce`` (stores only).
2. Plan the tensor map and the boxes (:mod:`.tma_plan`): the map is the global buffer
   itself; the box is the largest that every part of the tile fills densely in shared
   memory; the tile is one or more boxes.
3. Register the tensor map with the kernel (a hidden ``byval`` parameter, one per distinct
   buffer and box; the runtime and the simulator encode it from the array at launch).
4. Emit, on the scope's first thread, one copy per box (``for f in T.unroll(n)`` when there
   are more than 16): the shared destination is the box's *unswizzled* address (a flat
   view of the shared buffer), the coordinates are the region's start plus the box's
   origin, innermost first. ``prefetch_tensormap`` first prefetches the map.
5. Emit no expect_tx, wait, commit, fence or barrier.

Priority 10 (TIRx's): below bulk (25) and ldgsts (20), so a plain tile keeps the
cheaper-to-plan variants unless ``dispatch="tma"`` is forced; swizzled tiles, symbolic
sizes and tensor-map options come here.
"""

from __future__ import annotations

import numpy as np

from tilewise.ir import dtype as dt
from tilewise.ir.expr import AddressOf, Cast, IntImm, Var, binop, cmp, const
from tilewise.ir.stmt import Buffer, DeclBuffer, Evaluate, For, IfThenElse, seq
from tilewise.passes.indexing import memory_offset, storage_size
from tilewise.passes.simplify import simplify_expr
from tilewise.ptx import tma
from tilewise.ptx.table import PTX_OPS
from tilewise.tile import options as O
from tilewise.tile import predicates as P
from tilewise.tile.partition import Side, unravel
from tilewise.tile.registry import DispatchFail, predicate, register_dispatch

from .bulk import ISSUED_BY_ONE_THREAD, NO_PREDICATE
from .tma_plan import check_global, global_strides, plan_boxes

PAIRS = (("shared*", "global"), ("global", "shared*"))
UNROLLED = 16  # boxes emitted one after another; more become an unrolled loop


def _is_load(ctx) -> bool:
    return ctx.src.buffer.scope == "global"


def _completion(ctx):
    """A load completes on an mbarrier (``mbar=``); a store through bulk groups; the options
    of one direction are declined on the other."""
    load = _is_load(ctx)
    if load and ctx.option("mbar") is None:
        return False, ("a TMA load completes on an mbarrier: pass mbar=T.address_of(bar[i]) "
                       "(and announce the bytes with T.ptx.mbarrier.arrive.expect_tx)")
    if not load:
        for opt in ("mbar", "cta_mask"):
            if ctx.option(opt) is not None:
                return False, (f"{opt}= is for TMA loads; a store completes through bulk "
                               "async-groups (T.ptx.cp_async.bulk.commit_group/wait_group)")
    if load and ctx.option("use_tma_reduce") is not None:
        return False, "use_tma_reduce= reduces into global memory: it is for stores"
    return True


def swizzle_of(side: Side) -> int:
    layout = side.buffer.layout
    swz = getattr(layout, "swizzling", None)
    return 0 if swz is None else swz.mode


def _shared_layout(ctx):
    """The shared side: memory-only layout, a swizzle for elements of the copy's size, and a
    base aligned to the swizzle's repeat."""
    side = Side("dst", ctx.dst) if _is_load(ctx) else Side("src", ctx.src)
    buf, layout = side.buffer, side.buffer.layout
    if layout is not None and layout.thread_axes():
        return False, f"shared buffer {buf.name!r} has a thread-distributed layout"
    swz = getattr(layout, "swizzling", None)
    if swz is None:
        return True
    if swz.dtype_bits != buf.dtype.bits:
        return False, (f"swizzle mismatch: the {swz.mode}B swizzle of {buf.name!r} is laid out "
                       f"for {swz.dtype_bits}-bit elements but the tile is {buf.dtype}; swizzle "
                       f"with dtype_bits={buf.dtype.bits}")
    repeat = tma.swizzle_repeat(swz.mode)
    root = buf.storage_root()  # a view starts where the allocation it views does
    if max(root.align, 16) % repeat:
        return False, (f"{buf.name!r} is {swz.mode}B-swizzled but {root.name!r} is only "
                       f"{max(root.align, 16)}-byte aligned; the copy engine swizzles absolute "
                       f"addresses: allocate it with align={repeat}")
    return True


def _options(ctx):
    """``oob="nan"`` needs a float type; multicast needs a declared cluster."""
    t = ctx.dst.buffer.dtype
    if t.name not in tma.DATA_TYPES:
        return False, f"a tensor map cannot hold {t} elements"
    if ctx.option("oob") == "nan" and t.name not in tma.FLOAT_TYPES:
        return False, f"oob=\"nan\" fills with NaN, which {t} does not have (use oob=\"zero\")"
    op = ctx.option("use_tma_reduce")
    if op is not None and t.name not in tma.REDUCE_TYPES[op]:
        return False, (f"a TMA {op} reduction takes {', '.join(tma.REDUCE_TYPES[op])} "
                       f"elements, not {t}")
    if ctx.option("cta_mask") is not None and ctx.launch.cluster_size == 1:
        return False, ("cta_mask= multicasts into the CTAs of a cluster; declare one with "
                       "T.cta_id_in_cluster([n])")
    return True


def _spec(g: Side, box, swizzle: int, ctx) -> tma.TensorMapSpec:
    strides = global_strides(g)
    check_global(g, strides)
    n = len(g.buffer.shape)
    return tma.TensorMapSpec(
        g.buffer.dtype.name, g.elem_bytes, tuple(reversed(g.buffer.shape)),
        tuple(strides[n - 1 - k] for k in range(1, n)), tuple(reversed(box)), swizzle,
        ctx.option("oob") or "zero",
        tma.DEFAULT_L2_PROMOTION if ctx.option("l2_promotion") is None
        else ctx.option("l2_promotion"))


def _flat_view(s: Side) -> Buffer:
    """The shared buffer seen as its raw, unswizzled elements: TMA destinations are the
    address of a box's first element *before* the swizzle (the engine applies it)."""
    b = s.buffer
    size = storage_size(b.shape, b.layout)
    return Buffer(f"{b.name}_flat", (size,), b.dtype, b.scope, view_of=b.storage_root(),
                  span=b.span)


def _shared_base(s: Side):
    layout = s.buffer.layout.unswizzled() if s.buffer.layout is not None else None
    return memory_offset(layout, s.buffer.shape, [r.start for r in s.region.region])


def _copy(ctx, load: bool, dim: int, dst, tmap: Var, coords) -> Evaluate:
    hint = ctx.option("cache_hint")
    if load:
        mask = ctx.option("cta_mask")
        mask = None if mask is None else Cast(dt.DTYPES["uint16"], const(mask))
        args = [dim, dst, ctx.option("mbar"), tmap, mask, ctx.option("cta_group") or 0, hint]
        op = PTX_OPS["ptx.cp_async.bulk.tensor.g2c"]
    elif ctx.option("use_tma_reduce") is not None:
        args = [dim, dst, tmap, ctx.option("use_tma_reduce"), hint]
        op = PTX_OPS["ptx.cp_async.bulk.tensor.s2g_reduce"]
    else:
        args = [dim, dst, tmap, hint]
        op = PTX_OPS["ptx.cp_async.bulk.tensor.s2g"]
    return Evaluate(op.call(args + list(coords), {}, span=ctx.span), span=ctx.span)


def _coords(g: Side, origin) -> list:
    """The box's tensor coordinates, innermost first, as int32."""
    out = []
    for r, o in zip(reversed(g.region.region), reversed(origin)):
        c = simplify_expr(binop("+", r.start, o))
        out.append(c if c.dtype == dt.int32 else Cast(dt.int32, c))
    return out


def _issues(ctx, plan, g: Side, s: Side, view: Buffer, load: bool, tmap: Var):
    """One copy per box: straight-line, or an unrolled loop over the boxes' grid."""
    base = simplify_expr(_shared_base(s))
    first = plan.issues[0].shared_off
    dim = len(plan.box)

    def one(off, origin):
        dst = AddressOf(view, (simplify_expr(binop("+", base, off)),))
        return _copy(ctx, load, dim, dst, tmap, _coords(g, origin))

    if len(plan.issues) <= UNROLLED:
        return seq(*(one(i.shared_off - first, i.origin) for i in plan.issues))
    steps = _affine_steps(plan)
    if steps is None:
        raise DispatchFail(f"the tile needs {len(plan.issues)} boxes at irregular shared "
                           "offsets; copy it in smaller pieces")
    f = Var("f")
    grid, per_dim, box = steps
    idx = unravel_expr(f, grid)
    off = sum((i * st for i, st in zip(idx, per_dim)), IntImm(0))
    origin = [i * b for i, b in zip(idx, box)]
    return For(f, IntImm(0), IntImm(len(plan.issues)), "unroll", one(off, origin))


def unravel_expr(f, grid) -> list:
    """Mixed-radix digits of loop variable ``f`` over ``grid`` (outermost first)."""
    out, inner = [], 1
    for k in range(len(grid) - 1, -1, -1):
        d = binop("//", f, inner) if inner != 1 else f
        out.append(binop("%", d, grid[k]) if k else d)
        inner *= grid[k]
    return out[::-1]


def _affine_steps(plan):
    """``(grid, shared step per grid dimension, box)`` when the boxes' shared offsets are
    affine in their grid indices (None otherwise)."""
    box = np.asarray(plan.box)
    origins = np.asarray([i.origin for i in plan.issues])
    grid = tuple(int(x) for x in origins.max(axis=0) // box + 1)
    offs = np.asarray([i.shared_off for i in plan.issues]) - plan.issues[0].shared_off
    idx = unravel(np.arange(len(offs)), grid)
    steps = []
    for d in range(len(grid)):
        unit = np.zeros(len(grid), np.int64)
        unit[d] = 1
        k = int(np.ravel_multi_index(tuple(unit), grid)) if grid[d] > 1 else 0
        steps.append(int(offs[k]) if grid[d] > 1 else 0)
    if not (idx @ np.asarray(steps) == offs).all():
        return None
    return grid, steps, tuple(int(b) for b in box)


def _emit(ctx):
    load = _is_load(ctx)
    g, s = ((Side("src", ctx.src), Side("dst", ctx.dst)) if load
            else (Side("dst", ctx.dst), Side("src", ctx.src)))
    swizzle = swizzle_of(s)
    plan = plan_boxes(g, s, swizzle)
    spec = _spec(g, plan.box, swizzle, ctx)
    tmap = ctx.tensor_map(g.buffer, spec)
    view = _flat_view(s)
    n = len(plan.issues)
    ctx.info.append(f"{n} TMA {'load' if load else 'store'}(s) of a {spec.describe()} "
                    f"({spec.box_bytes} bytes each)")
    body = _issues(ctx, plan, g, s, view, load, tmap)
    if ctx.option("prefetch_tensormap"):
        body = seq(Evaluate(PTX_OPS["ptx.prefetch_tensormap"].call([tmap], {}, span=ctx.span),
                            span=ctx.span), body)
    if ctx.scope_kind != "thread":
        body = IfThenElse(cmp("==", ctx.scope_tid, 0), body, span=ctx.span)
    return seq(DeclBuffer(view, span=ctx.span), body)


@register_dispatch("copy_async", "cuda", variant="tma", priority=10,
                   options=(O.MBAR, O.CACHE_HINT, O.CTA_GROUP, O.CTA_MASK, O.OOB,
                            O.L2_PROMOTION, O.PREFETCH_TENSORMAP, O.USE_TMA_REDUCE),
                   declines={
    "prefetch_size": "prefetch_size= is a cp.async hint; TMA takes l2_promotion=",
    "remote_cta_id": "remote_cta_id= names the CTA of a shared -> shared (dsmem) copy",
    **NO_PREDICATE}, when=[
    predicate("target has TMA", P.has_feature, feature="tma",
              what="cp.async.bulk.tensor (TMA)"),
    predicate("operands are regions", P.operands_are_regions),
    predicate("global <-> shared", P.direction, pairs=PAIRS),
    predicate("completion", _completion),
    predicate("cta_group target", P.option_needs_feature, option="cta_group",
              feature="tcgen05", what="TMA cta_group="),
    *ISSUED_BY_ONE_THREAD,
    predicate("shared layout", _shared_layout),
    predicate("options", _options),
])
def tma_copy(ctx):
    return _emit(ctx)
