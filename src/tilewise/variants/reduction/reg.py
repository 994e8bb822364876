"""sum / max / min -> thread, warp, smem: reductions of register tiles (analysis in
:mod:`.plan`), one variant per level of the thread hierarchy the reduced axis spans.

* ``thread`` (priority 40): the reduced axis lies within each thread's registers (a row
  per thread): each partial is a pairwise tree of the thread's registers.
* ``warp`` (priority 30): the reduced axis also spans lanes of a warp: after the
  thread-local trees, ``shfl.sync.bfly`` butterflies (PTX ISA §9.7.9.6, one per reduced
  lane bit, full-warp mask) leave every lane of the group with the same total (the
  combining operators are commutative, so both partners compute the same bits). 32-bit
  types only (``shfl`` moves 32 bits): reduce float32 tiles.
* ``smem`` (priority 20): the reduced axis also spans warps: the first lane of each warp's
  group writes its partial to a shared-memory slot, ``bar.sync 0``, every thread folds the
  slots of its group in one fixed order; a second barrier protects the slots when the call
  sits in a loop. CTA scope, or warpgroup scope in a one-warpgroup CTA (no named barriers
  yet).

Each destination register then takes its total (``accum=True``: combined with the old
value). Summation order is fixed by the IR, so the simulator and the GPU agree bit for bit.
"""

from __future__ import annotations

from tilewise.ir import dtype as dt
from tilewise.ir.expr import BufferLoad, IntImm, Var, binop, cmp
from tilewise.ir.stmt import Buffer, BufferStore, DeclBuffer, IfThenElse, LetStmt, SeqStmt
from tilewise.ptx.table import PTX_OPS
from tilewise.tile import options as O
from tilewise.tile import predicates as P
from tilewise.tile.compute import REDUCTIONS
from tilewise.tile.registry import DispatchFail, predicate, register_dispatch
from tilewise.tile.tilecode import shuffle_mask
from tilewise.variants.reduction.plan import plan

SCOPES = ("thread", "warp", "warpgroup", "cta")


def tree(values: list, combine):
    """A pairwise fold: ``((v0 + v1) + (v2 + v3)) + ...``, the same order everywhere."""
    while len(values) > 1:
        nxt = [combine(values[i], values[i + 1]) for i in range(0, len(values) - 1, 2)]
        values = nxt + ([values[-1]] if len(values) % 2 else [])
    return values[0]


def compress(t, bits: list[int]):
    """The bits ``bits`` of ``t`` packed into a dense number (runs of bits at once)."""
    out, i, k = IntImm(0), 0, 0
    while k < len(bits):
        run = 1
        while k + run < len(bits) and bits[k + run] == bits[k] + run:
            run += 1
        piece = binop("&", binop(">>", t, bits[k]), (1 << run) - 1)
        out = binop("+", out, binop("<<", piece, i) if i else piece)
        i, k = i + run, k + run
    return out


class _Emit:
    def __init__(self, ctx, p):
        self.ctx, self.p = ctx, p
        self.red = REDUCTIONS[ctx.call.op]
        self.t = p.src.dtype
        self.stmts: list = []
        self.sflat, self.dflat = p.src.flat(), p.dst.flat()
        self.stmts += [DeclBuffer(self.sflat)]
        if self.dflat.view_of is not self.sflat.view_of or self.dflat.dtype != self.t:
            self.stmts.append(DeclBuffer(self.dflat))
        else:
            self.dflat = self.sflat

    def let(self, name: str, value):
        v = Var(name, self.t)
        self.stmts.append(LetStmt(v, value, span=self.ctx.span))
        return v

    def local(self) -> list:
        return [self.let(f"part{j}", tree([BufferLoad(self.sflat, (IntImm(r),)) for r in g],
                                          self.red.combine))
                for j, g in enumerate(self.p.groups)]

    def shuffle(self, acc: list) -> list:
        shfl = PTX_OPS["ptx.shfl_sync"]
        mask = IntImm(shuffle_mask(self.ctx), dt.uint32) if self.p.lane_bits else None
        for b in self.p.lane_bits:
            acc = [self.let(f"bfly{1 << b}_{j}", self.red.combine(
                a, shfl.call(["bfly", a, 1 << b, 31, mask], {}, self.ctx.span)))
                for j, a in enumerate(acc)]
        return acc

    def through_smem(self, acc: list) -> list:
        p, ctx = self.p, self.ctx
        J, W = len(acc), 1 << len(p.warp_bits)
        smem = Buffer(f"{ctx.src.buffer.name}_{self.red.name}_smem", (p.orbits * J * W,),
                      self.t, "shared", span=ctx.span)
        tid = ctx.scope_tid
        keep = [b for b in range(p.threads.bit_length() - 1) if b not in p.bits]
        orbit, rank = compress(tid, keep), compress(tid, p.warp_bits)
        lane_mask = sum(1 << b for b in p.lane_bits)
        writes = SeqStmt(tuple(
            BufferStore(smem, (binop("+", binop("*", binop("+", binop("*", orbit, J), j), W),
                                     rank),), a) for j, a in enumerate(acc)))
        if lane_mask:
            writes = IfThenElse(cmp("==", binop("&", tid, lane_mask), 0), writes)
        sync = PTX_OPS["cuda.cta_sync"]
        self.stmts += [DeclBuffer(smem), writes, _eval(sync.call([], {}, ctx.span))]
        base = [binop("*", binop("+", binop("*", orbit, J), j), W) for j in range(J)]
        out = [self.let(f"total{j}", tree([BufferLoad(smem, (binop("+", base[j], k),))
                                           for k in range(W)], self.red.combine))
               for j in range(J)]
        if ctx.in_loop:
            self.stmts.append(_eval(sync.call([], {}, ctx.span)))
        return out

    def finish(self, totals: list):
        accum = bool(self.ctx.option("accum"))
        for rd, j in enumerate(self.p.dst_group):
            v = totals[j]
            if accum:
                v = self.red.combine(BufferLoad(self.dflat, (IntImm(rd),)), v)
            self.stmts.append(BufferStore(self.dflat, (IntImm(rd),), v, span=self.ctx.span))
        self.ctx.info.append(self.p.describe())
        return SeqStmt(tuple(self.stmts), span=self.ctx.span)


def _eval(call):
    from tilewise.ir.stmt import Evaluate

    return Evaluate(call)


def _need_32bit(p) -> None:
    if p.src.dtype.bits != 32:
        raise DispatchFail(f"the reduced axis spans lanes and shfl.sync moves 32-bit values; "
                           f"src is {p.src.dtype} (reduce a float32 tile: Tx.cast first)")


def thread_local(ctx):
    p = plan(ctx)
    if p.bits:
        raise DispatchFail(f"the reduced axis spans threads (thread-id bits {p.bits}); this "
                           "variant reduces within each thread's registers")
    e = _Emit(ctx, p)
    return e.finish(e.local())


def warp(ctx):
    p = plan(ctx)
    if not p.lane_bits:
        raise DispatchFail("the reduced axis does not span lanes")
    if p.warp_bits:
        raise DispatchFail(f"the reduced axis spans warps (thread-id bits {p.warp_bits}); "
                           "shuffles reach only the lanes of one warp")
    _need_32bit(p)
    e = _Emit(ctx, p)
    return e.finish(e.shuffle(e.local()))


def smem(ctx):
    p = plan(ctx)
    if not p.warp_bits:
        raise DispatchFail("the reduced axis does not span warps")
    if ctx.scope_kind != "cta" and ctx.thread_count != ctx.launch.block:
        raise DispatchFail(f"a {ctx.scope_kind}-scope reduction across warps needs a barrier "
                           f"of the {ctx.thread_count} threads: a named bar.sync, whose id a "
                           "primitive cannot pick without colliding with the kernel's own; "
                           "reduce at cta scope")
    if p.lane_bits:
        _need_32bit(p)
    e = _Emit(ctx, p)
    return e.finish(e.through_smem(e.shuffle(e.local())))


def _register(name: str) -> None:
    common = [predicate("scope", P.scope_in, scopes=SCOPES),
              predicate("all threads active", P.all_active),
              predicate("register tiles", P.register_tiles)]
    opts = (O.AXES, O.FOLD)
    register_dispatch(name, "cuda", variant="thread", priority=40, when=common,
                      options=opts)(thread_local)
    register_dispatch(name, "cuda", variant="warp", priority=30, when=common, options=opts)(warp)
    register_dispatch(name, "cuda", variant="smem", priority=20, when=common, options=opts)(smem)


for _name in REDUCTIONS:
    _register(_name)
