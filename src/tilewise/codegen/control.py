"""Structured control flow as SSA, for the :class:`~tilewise.codegen.emitter.Emitter`.

Scalars are SSA values: ``LetStmt``/``Assign`` rebind the current value of a local (the
emitter's ``vars``). Here an ``if`` merges the values its branches leave with phi nodes,
and a loop carries the locals its body assigns in phi nodes of its header (and of its latch
and exit when ``continue`` and ``break`` add edges) -- SSA built directly for structured
control flow, no stack slots. An edge is a block and the values of the locals as it ends.

:class:`ControlFlow` is a base of the emitter: the emitter's statement dispatch finds its
``s_*`` methods, and they use the emitter's builder (``b``, ``fn``), its locals (``vars``,
``assigned``, ``nonneg``), ``live`` (False once ``break``/``continue`` left the current
block), ``loops`` and its ``stmt``, ``typed``, ``truth``, ``is_nonneg`` and ``error``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llvmlite import ir

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.visitor import jumps_out, walk
from . import arith


@dataclass
class Loop:
    """Where ``break`` and ``continue`` of the innermost loop go, and the values of the
    locals on each such edge (block, {id(var): value})."""

    exit: ir.Block
    latch: ir.Block
    breaks: list = field(default_factory=list)
    continues: list = field(default_factory=list)


class ControlFlow:
    """``if``, ``while``, ``for``, ``break`` and ``continue`` of the emitter."""

    def _edge(self) -> tuple[ir.Block, dict]:
        """The current block and the values of the locals as it ends."""
        return self.b.block, dict(self.vars)

    def _merge(self, known: dict, edges: list) -> dict:
        """Position at the start of the current (merge) block: the locals of ``known`` take
        one value per incoming edge; where the edges disagree, a phi node."""
        out = {}
        for key in known:
            vals = [e[1][key] for e in edges]
            if all(x is vals[0] for x in vals):
                out[key] = vals[0]
                continue
            phi = self.b.phi(vals[0].type)
            for (block, _), x in zip(edges, vals):
                phi.add_incoming(x, block)
            out[key] = phi
        return out

    def _arrive(self, block: ir.Block, known: dict, edges: list) -> None:
        """Continue in ``block`` with the locals merged from ``edges`` (none: dead code)."""
        self.b.position_at_end(block)
        if not edges:
            self.b.unreachable()
            self.live = False
            return
        self.vars = self._merge(known, edges)
        self.live = True

    def _branch_to(self, block: ir.Block, edges: list) -> None:
        """End the current block (if reachable) with a branch to ``block``, noting the edge."""
        if self.live:
            edges.append(self._edge())
            self.b.branch(block)

    def s_IfThenElse(self, s: S.IfThenElse):
        cond = self.truth(s.cond)
        before = dict(self.vars)
        then_bb = self.fn.append_basic_block("if_then")
        else_bb = self.fn.append_basic_block("if_else") if s.else_body is not None else None
        merge = self.fn.append_basic_block("if_end")
        edges: list = []
        if else_bb is None:
            edges.append(self._edge())
        self.b.cbranch(cond, then_bb, else_bb or merge)
        for bb, body in ((then_bb, s.then_body), (else_bb, s.else_body)):
            if bb is None:
                continue
            self.b.position_at_end(bb)
            self.vars, self.live = dict(before), True
            self.stmt(body)
            self._branch_to(merge, edges)
        self._arrive(merge, before, edges)

    def _carried(self, body: S.Stmt) -> list[int]:
        """The locals defined before a loop that its body assigns."""
        out: list[int] = []
        walk(body, lambda n: out.append(id(n.var)) if isinstance(n, S.Assign)
             and id(n.var) in self.vars and id(n.var) not in out else None)
        return out

    def _loop(self, body: S.Stmt, cond_fn, iv=None, step_fn=None):
        """``head: phis; if cond: body; latch: step; br head`` — ``cond_fn()`` builds the
        condition in the header, ``iv`` is (var, start value) of a counted loop."""
        before = dict(self.vars)
        carried = self._carried(body)
        pre = self.b.block
        head, body_bb, latch, done = (self.fn.append_basic_block(n) for n in (
            "loop_head", "loop_body", "loop_latch", "loop_end"))
        self.b.branch(head)
        self.b.position_at_end(head)
        phis = {}
        for key in carried:
            phis[key] = self.b.phi(self.vars[key].type)
            phis[key].add_incoming(self.vars[key], pre)
        if iv is not None:
            var, start = iv
            phis[id(var)] = self.b.phi(start.type)
            phis[id(var)].add_incoming(start, pre)
        self.vars.update(phis)
        cond = cond_fn()
        head_edge = self._edge()
        self.b.cbranch(cond, body_bb, done)
        loop = Loop(done, latch, [head_edge])
        self.loops.append(loop)
        self.b.position_at_end(body_bb)
        self.live = True
        try:
            self.stmt(body)
        finally:
            self.loops.pop()
        self._branch_to(latch, loop.continues)
        self._arrive(latch, dict(head_edge[1]), loop.continues)
        if self.live:
            if step_fn is not None:
                self.vars[id(iv[0])] = step_fn(self.vars[id(iv[0])])
            for key, phi in phis.items():
                phi.add_incoming(self.vars[key], self.b.block)
            self.b.branch(head)
        self._arrive(done, before, loop.breaks)

    def s_Break(self, s: S.Break):
        self._jump(s, "breaks", "exit")

    def s_Continue(self, s: S.Continue):
        self._jump(s, "continues", "latch")

    def _jump(self, s, edges: str, target: str):
        if not self.loops:
            raise self.error(f"{type(s).__name__.lower()} outside a loop", s)
        loop = self.loops[-1]
        getattr(loop, edges).append(self._edge())
        self.b.branch(getattr(loop, target))
        self.live = False

    def s_While(self, s: S.While):
        self._loop(s.body, lambda: self.truth(s.cond))

    def s_For(self, s: S.For):
        start, extent = E.as_int(s.start), E.as_int(s.extent)
        if (s.kind == "unroll" and start is not None and extent is not None and extent <= 256
                and not jumps_out(s.body)):
            for i in range(start, start + extent):
                self.vars[id(s.var)] = arith.const_int(s.var.dtype, i)
                self.stmt(s.body)
            return
        lo = self.typed(s.start, s.var.dtype)
        hi = self.b.add(lo, self.typed(s.extent, s.var.dtype))
        if self.is_nonneg(s.start) and id(s.var) not in self.assigned:
            self.nonneg.add(id(s.var))
        signed = s.var.dtype.is_signed
        one = ir.Constant(lo.type, 1)

        def cond():
            i = self.vars[id(s.var)]
            return self.b.icmp_signed("<", i, hi) if signed else self.b.icmp_unsigned(
                "<", i, hi)

        self._loop(s.body, cond, iv=(s.var, lo), step_fn=lambda i: self.b.add(i, one))
