"""elementwise -> reg: each thread computes the registers it holds of a register tile.

Serves every elementwise primitive (:data:`tilewise.tile.compute.ELEMENTWISE`) whose
destination is a register tile (a local view whose layout has thread axes, such as the
wgmma accumulator fragment). Algorithm:

1. Accept scope thread / warp / warpgroup / cta with every thread of each scope instance
   active. Evaluate the destination's layout for every thread of the scope instance
   (:class:`tilewise.tile.regtile.RegTile`): thread ``t`` holds one element in each of its
   ``R`` registers.
2. Each source is a scalar; a register tile that holds, in the same thread, the element
   each destination register reads (after broadcasting), in a register that is the same in
   every thread (checked for all threads; else the variant declines naming the register);
   or a region of global / shared memory (compile-time sizes), loaded at the element's
   broadcast coordinates (the layout's per-register digits of ``r`` and of the thread's
   axis values).
3. Emit, per register ``r`` (straight-line code: constant register indices keep the
   fragment in registers), ``dst[r] = f(sources)`` with the operation's scalar IR
   (:meth:`Elementwise.build`). Where two neighbouring registers ``r, r+1`` (``r`` even)
   read neighbouring even-aligned registers of every register source (or a constant), a
   binary/fma op of a 16-bit float type becomes one packed instruction
   (``add.rn.f16x2``, ``fma.rn.bf16x2``, ...; float32 ``.f32x2`` on sm_100+), and a cast
   of float32 to float16/bfloat16 one ``cvt.rn.f16x2.f32``: the PTX ISA rounds each lane
   as the scalar instruction, so the values are the same. The log counts the packed
   instructions.
"""

from __future__ import annotations

from tilewise.ir.expr import BufferLoad, IntImm
from tilewise.ir.stmt import BufferStore, DeclBuffer, SeqStmt
from tilewise.ptx.packed import LANES, packed_name
from tilewise.ptx.table import PTX_OPS
from tilewise.tile import options as O
from tilewise.tile import predicates as P
from tilewise.tile.compute import ELEMENTWISE, FTZ_OPS
from tilewise.tile.regtile import RegTile, is_reg_tile
from tilewise.tile.registry import predicate, register_dispatch
from tilewise.tile.tilecode import Source, packed_constant, plan_sources, vector_view

SCOPES = ("thread", "warp", "warpgroup", "cta")


def dst_is_registers(ctx):
    if is_reg_tile(ctx.dst):
        return True
    return False, (f"dst {ctx.dst.buffer.name!r} is in {ctx.dst.buffer.scope} memory"
                   + (" without thread axes in its layout" if ctx.dst.buffer.scope == "local"
                      else "") + "; this variant computes register tiles")


def no_symbolic_memory(ctx):
    for a in list(ctx.call.args) + [v for _, v in ctx.call.options]:
        b = getattr(a, "buffer", None)
        if b is not None and b.symbolic:
            return False, (f"{b.name!r} has symbolic sizes; register variants read memory "
                           "operands of compile-time sizes")
    return True


def sources(ctx, op, dst: RegTile | None) -> tuple[list[Source], dict]:
    """The sources in the op's operand order, then scale/bias; the options as a dict."""
    opts = dict(ctx.call.options)
    named = list(zip([n for n, _ in op.operands], ctx.call.args[1:]))
    named += [(k, opts.get(k)) for k in ("scale", "bias")]
    return plan_sources(named, dst), opts


def element(op, t, srcs: list[Source], opts: dict, load) -> object:
    """The scalar IR of one element from ``load(source)``."""
    vals = {s.name: load(s) for s in srcs}
    args = [vals[n] for n, _ in op.operands if n in vals]  # zero's src is not read
    opts = {**opts, "scale": vals.get("scale"), "bias": vals.get("bias")}
    return op.build(t, args, opts)


class _Packer:
    """Packed forms for register pairs ``(r, r+1)``."""

    def __init__(self, ctx, op, dst: RegTile, srcs: list[Source]):
        self.dst, self.srcs, self.name, self.lanes = dst, srcs, None, None
        self.cvt = None
        t = dst.dtype
        if op.name == "cast" and t.name in ("float16", "bfloat16") and srcs[0].kind == "reg" \
                and srcs[0].flat.dtype.name == "float32":
            self.cvt = f"ptx.cvt.{'f16x2' if t.name == 'float16' else 'bf16x2'}.f32"
            self.lanes = LANES["f16x2" if t.name == "float16" else "bf16x2"]
            return
        name = packed_name(op.alu, t) if op.alu else None
        if name is None or (PTX_OPS[name].feature and not ctx.target.has(PTX_OPS[name].feature)):
            return
        lanes = LANES[name.split(".")[-1]]
        if not all(s.kind == "reg" or (s.kind == "scalar" and packed_constant(
                s.value, lanes) is not None) for s in srcs):
            return
        self.name, self.lanes = name, lanes

    def pair(self, r: int) -> bool:
        if self.lanes is None or r % 2 or r + 1 >= self.dst.regs:
            return False
        if self.cvt:
            return True
        return all(s.kind == "scalar" or (s.regs[r] % 2 == 0 and s.regs[r + 1] == s.regs[r] + 1)
                   for s in self.srcs)

    def views(self) -> dict:
        bufs = {id(s.flat.view_of): vector_view(s.flat, self.lanes.word) for s in self.srcs
                if s.kind == "reg" and self.cvt is None}
        bufs[id(self.dst.flat().view_of)] = vector_view(self.dst.buffer, self.lanes.word)
        return bufs

    def store(self, r: int, views: dict, dflat):
        word = views[id(dflat.view_of)]
        if self.cvt:
            s = self.srcs[0]
            hi, lo = (BufferLoad(s.flat, (IntImm(s.regs[k]),)) for k in (r + 1, r))
            value = PTX_OPS[self.cvt].call([hi, lo], {})
        else:
            ins = [packed_constant(s.value, self.lanes) if s.kind == "scalar" else
                   BufferLoad(views[id(s.flat.view_of)], (IntImm(s.regs[r] // 2),))
                   for s in self.srcs]
            value = PTX_OPS[self.name].call(ins, {})
        return BufferStore(word, (IntImm(r // 2),), value)


def emit_reg(ctx, op):
    dst = RegTile.of(ctx.dst, ctx.thread_count, "destination")
    srcs, opts = sources(ctx, op, dst)
    flats: dict = {}
    dflat = dst.flat()
    dflat = flats.setdefault((id(dflat.view_of), dflat.dtype.name), dflat)
    for s in srcs:
        if s.kind == "reg":  # one flat view per register array and dtype
            s.flat = flats.setdefault((id(s.flat.view_of), s.flat.dtype.name), s.flat)
    coords = _Coords(dst, ctx.scope_tid)
    packer = _Packer(ctx, op, dst, srcs)
    views = packer.views() if packer.lanes else {}
    body, packed, r = [], 0, 0
    while r < dst.regs:
        if packer.pair(r):
            body.append(packer.store(r, views, dflat))
            packed, r = packed + 1, r + 2
            continue
        value = element(op, dst.dtype, srcs, opts,
                        lambda s, r=r: s.load(r, coords, dst.shape))
        body.append(BufferStore(dflat, (IntImm(r),), value, span=ctx.span))
        r += 1
    decls = [DeclBuffer(b) for b in list(flats.values()) + list(views.values())]
    ctx.info.append(f"{dst.regs} registers per thread" + (
        f", {packed} packed {packer.cvt or packer.name} instructions" if packed else ""))
    return SeqStmt(tuple(decls + body), span=ctx.span)


class _Coords:
    """The destination coordinates of register ``r`` (IR), computed once per register."""

    def __init__(self, dst: RegTile, tid):
        self.dst, self.tid, self.cache = dst, tid, {}

    def __call__(self, r: int):
        if r not in self.cache:
            self.cache[r] = self.dst.coords(r, self.tid)
        return self.cache[r]


def register_each(variant: str, priority: int, when: list, emit) -> None:
    """Register ``emit(ctx, op)`` as ``variant`` of every elementwise primitive; the unary
    math ones honour ``scale=``, ``bias=`` and ``precise=``, ``exp`` and ``exp2`` also
    ``ftz=``."""
    for name, op in ELEMENTWISE.items():
        def impl(ctx, op=op):
            return emit(ctx, op)

        impl.__module__ = emit.__module__
        options = (O.SCALE, O.BIAS, O.PRECISE) if op.unary_math else ()
        options += (O.FTZ,) if name in FTZ_OPS else ()
        register_dispatch(name, "cuda", variant=variant, priority=priority, when=when,
                          options=options)(impl)


register_each("reg", 30, [
    predicate("scope", P.scope_in, scopes=SCOPES),
    predicate("all threads active", P.all_active),
    predicate("register destination", dst_is_registers),
    predicate("compile-time sizes", no_symbolic_memory),
], emit_reg)
