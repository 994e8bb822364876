"""sum / max / min -> mem: reductions of a tile in global / shared memory (or, in thread
scope, of a per-thread local array).

1. Accept a memory ``src`` (global, shared, or a local array without thread axes in thread
   scope) in scope thread / warp / warpgroup / cta with every thread of each scope instance
   active; ``dst`` in memory, or a register tile.
2. A memory ``dst``: its elements are split over the threads (element ``p = f * T + t``,
   as the elementwise ``mem`` variant); a register ``dst``: every thread computes each
   element it holds (replicas compute the same value).
3. Each destination element is folded from its ``n`` source elements in row-major order
   of the reduced axes, in a loop carrying the partial result (``accum=True``: starting
   from the old value). No barrier: the caller synchronises shared memory before the call
   (the source was written by other threads) and after it, as for ``Tx.copy``.

This is the general variant, not the fast one: a reduction of a large shared tile is
faster loaded into registers and reduced there (the ``thread``/``warp``/``smem`` variants).
"""

from __future__ import annotations

import math

from tilewise.ir.expr import BufferLoad, IntImm, Var, binop
from tilewise.ir.stmt import Assign, BufferStore, DeclBuffer, For, LetStmt, SeqStmt
from tilewise.tile import options as O
from tilewise.tile import predicates as P
from tilewise.tile.compute import REDUCTIONS, reduced_shapes
from tilewise.tile.regtile import RegTile, is_reg_tile
from tilewise.tile.registry import predicate, register_dispatch
from tilewise.tile.tilecode import absolute, guard, in_bounds, linear, unravel
from tilewise.variants.elementwise.mem import positions

SCOPES = ("thread", "warp", "warpgroup", "cta")


def src_is_memory(ctx):
    b = ctx.src.buffer
    if b.scope in ("global", "shared", "shared.dyn"):
        return True
    if b.scope == "local" and not is_reg_tile(ctx.src):
        if ctx.scope_kind == "thread":
            return True
        return False, (f"src {b.name!r} is a per-thread local array; in {ctx.scope_kind} scope "
                       f"write Tx.thread.{ctx.call.op}, or give it a layout with thread axes")
    return False, f"src {b.name!r} is a register tile; this variant reduces memory"


def dst_ok(ctx):
    b = ctx.dst.buffer
    if b.scope == "local" and not is_reg_tile(ctx.dst) and ctx.scope_kind != "thread":
        return False, (f"dst {b.name!r} is a per-thread local array; in {ctx.scope_kind} scope "
                       "give it a layout with thread axes")
    return True


class _Fold:
    def __init__(self, ctx):
        self.ctx = ctx
        self.red = REDUCTIONS[ctx.call.op]
        self.axes = ctx.option("axes")
        self.src = ctx.src
        shape = self.src.shape
        self.kept_shape, _ = reduced_shapes(shape, self.axes)
        self.red_shape = [shape[d] for d in self.axes]
        self.n = math.prod(self.red_shape)

    def src_index(self, out_lin, k):
        kept = [d for d in range(len(self.src.shape)) if d not in self.axes]
        oc = unravel(out_lin, self.kept_shape) if kept else []
        rc = unravel(k, self.red_shape)
        rel = [None] * len(self.src.shape)
        for d, c in zip(kept, oc):
            rel[d] = c
        for d, c in zip(self.axes, rc):
            rel[d] = c
        return absolute(self.src, rel)

    def fold(self, out_lin, init, tag: str):
        """Statements computing the element ``out_lin`` into a local; the local."""
        t = self.src.buffer.dtype
        acc = Var(f"acc_{tag}", t)
        first = BufferLoad(self.src.buffer, self.src_index(out_lin, IntImm(0)))
        start = first if init is None else self.red.combine(init, first)
        stmts = [LetStmt(acc, start, span=self.ctx.span)]
        if self.n > 1:
            k = Var(f"k_{tag}")
            step = Assign(acc, self.red.combine(
                acc, BufferLoad(self.src.buffer, self.src_index(out_lin, k))))
            kind = "unroll" if self.src.buffer.scope == "local" and self.n <= 256 else "serial"
            stmts.append(For(k, IntImm(1), IntImm(self.n - 1), kind, step, span=self.ctx.span))
        return stmts, acc


def mem(ctx):
    f = _Fold(ctx)
    accum = bool(ctx.option("accum"))
    if is_reg_tile(ctx.dst):
        tile = RegTile.of(ctx.dst, ctx.thread_count, "dst")
        flat = tile.flat()
        body = [DeclBuffer(flat)]
        for rd in range(tile.regs):
            lin = linear(tile.coords(rd, ctx.scope_tid), tile.shape)
            old = BufferLoad(flat, (IntImm(rd),)) if accum else None
            stmts, acc = f.fold(lin, old, str(rd))
            body += stmts + [BufferStore(flat, (IntImm(rd),), acc, span=ctx.span)]
        ctx.info.append(f"{tile.regs} register(s) per thread, {f.n} element(s) each")
        return SeqStmt(tuple(body), span=ctx.span)
    dst = ctx.dst
    step, p, steps = positions(ctx, dst.size)
    idx = absolute(dst, unravel(p, dst.shape))
    old = BufferLoad(dst.buffer, idx) if accum else None
    stmts, acc = f.fold(p, old, "m")
    body = guard(in_bounds(dst, idx), SeqStmt(tuple(
        stmts + [BufferStore(dst.buffer, idx, acc, span=ctx.span)])))
    if dst.size % ctx.thread_count:
        body = guard(binop("<", p, dst.size), body)
    ctx.info.append(f"{steps} element(s) per thread, {f.n} source element(s) each")
    if steps == 1:
        return body
    return For(step, IntImm(0), IntImm(steps), "serial", body, span=ctx.span)


def _register(name: str) -> None:
    register_dispatch(name, "cuda", variant="mem", priority=10, options=(O.AXES, O.FOLD), when=[
        predicate("scope", P.scope_in, scopes=SCOPES),
        predicate("all threads active", P.all_active),
        predicate("compile-time sizes", P.static_sizes),
        predicate("memory source", src_is_memory),
        predicate("destination", dst_ok),
    ])(mem)


for _name in REDUCTIONS:
    _register(_name)
