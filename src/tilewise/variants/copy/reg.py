"""copy -> reg: registers <-> global / shared, each thread moving its own elements.

The register side is a local view whose layout has thread axes, e.g.
``A_reg.view(128, 8, layout=S[(128, 8):(1@tid_in_wg, 1)])``: thread ``t`` holds the
elements whose thread-axis places equal ``t``'s, at register index = their place on ``m``.

Algorithm (plain ``ld``/``st``, PTX ISA §9.7.9.8 / §9.7.9.10, one element at a time):

1. Accept exactly one ``local`` side (the whole view) and one global / shared side of the
   same dtype and size, in scope thread / warp / warpgroup / cta with all threads of each
   scope instance active. The register layout must have no replica, be one-to-one, keep
   its thread places inside the scope, and use registers densely (``storage()`` bijective
   on ``m``).
2. Split the layout's iters per dimension. For register index ``r`` (a loop
   ``for r in T.unroll(R)``) and this thread, each iter's digit is
   ``(place // stride) % extent`` with ``place`` = ``r`` for memory iters and the thread's
   axis value (``tid % 128`` for ``tid_in_wg``, ``tid % 32`` for ``laneid`` ...) for thread
   iters; a dimension's coordinate is its digits read as a mixed-radix number.
3. Emit ``dst[coord] = src[coord]`` (the memory side offset by its region start).
"""

from __future__ import annotations

import math

from tilewise.ir.expr import BufferLoad, IntImm, Var
from tilewise.ir.launch import WARP, WARPGROUP
from tilewise.ir.stmt import BufferStore, For
from tilewise.tile import predicates as P
from tilewise.tile.fragment import logical_coords
from tilewise.tile.registry import predicate, register_dispatch

MEMORIES = ("global", "shared*")
PAIRS = tuple(p for mem in MEMORIES for p in (("local", mem), (mem, "local")))
SCOPES = ("thread", "warp", "warpgroup", "cta")


def _axis_limit(name: str, ctx) -> int:
    n = ctx.thread_count
    return {"tid_in_wg": min(n, WARPGROUP), "laneid": min(n, WARP), "warpid": n // WARP,
            "wid_in_wg": min(n // WARP, 4), "wgid": n // WARPGROUP, "tx": n}.get(name, 0)


def _reg_side(ctx):
    return ctx.dst if ctx.dst.buffer.scope == "local" else ctx.src


def register_layout_ok(ctx):
    reg = _reg_side(ctx)
    b, layout = reg.buffer, reg.buffer.layout
    if layout is None or not layout.thread_axes():
        return False, (f"register buffer {b.name!r} has no thread axes in its layout; view it "
                       "with a layout such as S[(128, 8):(1@tid_in_wg, 1)]")
    if reg.shape != b.shape or any(r.start is not None and _nonzero(r.start)
                                   for r in reg.region):
        return False, f"the register side must be the whole view {b.name}"
    if layout.replica or not layout.is_injective():
        return False, f"register layout {layout!r} replicates or overlaps elements"
    if not layout.storage().is_bijective_on("m"):
        return False, f"register layout {layout!r} does not use registers densely"
    for it in layout.shard:
        if it.axis.kind == "thread" and it.last >= _axis_limit(it.axis.name, ctx):
            return False, (f"register layout {layout!r} needs {it.axis.name} up to "
                           f"{it.last}, beyond the {ctx.thread_count} threads of the "
                           f"{ctx.scope_kind}")
    return True


def _nonzero(e) -> bool:
    from tilewise.ir.expr import as_int

    return as_int(e) != 0


@register_dispatch("copy", "cuda", variant="reg", priority=30, when=[
    predicate("operands are regions", P.operands_are_regions),
    predicate("compile-time sizes", P.static_sizes),
    predicate("registers <-> memory", P.direction, pairs=PAIRS),
    predicate("scope", P.scope_in, scopes=SCOPES),
    predicate("all threads active", P.all_active),
    predicate("same dtype", P.same_dtype),
    predicate("same size", P.same_size),
    predicate("register layout", register_layout_ok),
])
def reg(ctx):
    regside = _reg_side(ctx)
    layout = regside.buffer.layout
    n_regs = layout.storage().span("m")
    r = Var("r")
    coords = logical_coords(layout, regside.buffer.shape, r, ctx.tid)
    mem = ctx.src if regside is ctx.dst else ctx.dst
    mem_idx = tuple(rg.start + c for rg, c in zip(mem.region, coords))
    reg_idx = tuple(coords)
    d_idx, s_idx = (reg_idx, mem_idx) if regside is ctx.dst else (mem_idx, reg_idx)
    body = BufferStore(ctx.dst.buffer, d_idx, BufferLoad(ctx.src.buffer, s_idx), span=ctx.span)
    ctx.info.append(f"{n_regs} registers per thread, {math.prod(regside.shape)} elements")
    return For(r, IntImm(0), IntImm(n_regs), "unroll", body, span=ctx.span)
