"""Which scalars are *uniform* — one value for every thread of a CTA — and which loops may
run with only some of their threads.

A value is uniform when it is built from uniform inputs (CTA ids, scalar parameters and
sizes, constants, uniform locals, and loads at uniform indices from a global buffer the
kernel never writes: an expert's row count, a group index) by arithmetic; any other loaded
value or a thread id is not. A
local is uniform when every assignment to it stores a uniform value under uniform control
(no enclosing ``if``/``while`` condition or loop bound that differs between threads, no
loop left early by some threads only). Loop-carried locals make this a fixpoint: start
from "every local is uniform" and drop locals until nothing changes.

A loop is *divergent* when some thread may leave it or skip part of it while others go on:
a ``break``/``continue`` under a condition that is not uniform, or a ``while`` condition or
``for`` bound that is not uniform. Tile calls inside such a loop may run with only some of
the threads (the dispatch pass treats their active set as unknown).
"""

from __future__ import annotations

from ..ir.expr import (AddressOf, BinOp, BufferLoad, BufferRegion, Call, Cast, FloatImm,
                       IntImm, Select, UnaryOp, Var)
from ..ir.stmt import Buffer, BufferStore
from ..ir.launch import CTA_KINDS
from ..ir.stmt import Assign, For, IfThenElse, LetStmt, While
from ..ir.visitor import Visitor, walk


class _Sites(Visitor):
    """Every assignment site with the conditions that guard it, and every loop's jumps."""

    def __init__(self):
        self.sites: list[tuple[Var, object, tuple]] = []  # (var, value, guarding exprs)
        self.guards: list = []
        self.loop_jumps: dict[int, list] = {}  # id(loop) -> guards of its break/continue
        self.loops: list = []
        self.loop_guards: dict[int, list] = {}  # id(loop) -> its own bound/condition exprs

    def visit_LetStmt(self, s: LetStmt):
        self.sites.append((s.var, s.value, tuple(self.guards)))
        self.visit(s.value)

    def visit_Assign(self, s: Assign):
        self.sites.append((s.var, s.value, tuple(self.guards)))

    def visit_IfThenElse(self, s: IfThenElse):
        self.guards.append(s.cond)
        self.visit(s.then_body)
        self.visit(s.else_body)
        self.guards.pop()

    def _loop(self, s, exprs, body):
        self.loop_guards[id(s)] = list(exprs)
        self.loop_jumps[id(s)] = []
        self.loops.append(s)
        self.guards.append(_LoopGuard(s))
        self.visit(body)
        self.guards.pop()
        self.loops.pop()

    def visit_For(self, s: For):
        self.sites.append((s.var, BinOp("+", s.start, s.extent), tuple(self.guards)))
        self._loop(s, (s.start, s.extent), s.body)

    def visit_While(self, s: While):
        self._loop(s, (s.cond,), s.body)

    def visit_Break(self, s):
        if self.loops:
            self.loop_jumps[id(self.loops[-1])].append(tuple(self.guards))

    visit_Continue = visit_Break


class _LoopGuard:
    """A guard meaning "inside loop L" (uniform when L is not divergent)."""

    def __init__(self, loop):
        self.loop = loop


def read_only(func) -> frozenset[int]:
    """ids of the kernel's global buffers it never writes: never stored to, never a region
    or an address operand of a call (a tile primitive or an instruction may write those)."""
    touched = set()

    def look(n):
        if isinstance(n, (BufferStore, BufferRegion, AddressOf)):
            touched.add(id(n.buffer))
    walk(func.body, look)
    return frozenset(id(b) for _, b in func.buffer_map
                     if b.scope == "global" and id(b) not in touched)


def analyse(func) -> tuple[set[int], set[int]]:
    """``(uniform local ids, divergent loop ids)`` of a kernel (launch CTA ids, scalar
    parameters and symbolic sizes are uniform inputs)."""
    sites = _Sites()
    sites.visit(func.body)
    readonly = read_only(func)
    uniform = {id(b.var) for b in func.launch if b.kind in CTA_KINDS}
    uniform |= {id(p) for p in func.params}
    assigned = {id(v) for v, _, _ in sites.sites}
    uniform |= assigned
    while True:
        divergent = {key for key in sites.loop_guards
                     if not _loop_uniform(key, sites, uniform, readonly)}
        drop = {id(v) for v, value, guards in sites.sites
                if id(v) in uniform and not (
                    is_uniform(value, uniform, readonly)
                    and _guards_uniform(guards, uniform, divergent, readonly))}
        if not drop:
            return uniform, divergent
        uniform -= drop


def _loop_uniform(key, sites, uniform, readonly) -> bool:
    if not all(is_uniform(e, uniform, readonly) for e in sites.loop_guards[key]):
        return False
    for guards in sites.loop_jumps[key]:
        inner = guards[next(i for i, g in enumerate(guards)
                            if isinstance(g, _LoopGuard) and id(g.loop) == key) + 1:]
        if not all(is_uniform(g, uniform, readonly) for g in inner
                   if not isinstance(g, _LoopGuard)):
            return False
    return True


def _guards_uniform(guards, uniform, divergent, readonly) -> bool:
    for g in guards:
        if isinstance(g, _LoopGuard):
            if id(g.loop) in divergent:
                return False
        elif not is_uniform(g, uniform, readonly):
            return False
    return True


def is_uniform(e, uniform: set[int], readonly: frozenset[int] = frozenset()) -> bool:
    """Whether expression ``e`` has one value per CTA given the uniform locals and the
    read-only global buffers (a load from one at uniform indices is uniform)."""
    bad = []

    def look(n):
        if isinstance(n, Var) and id(n) not in uniform:
            bad.append(n)
        elif isinstance(n, (BufferLoad, Buffer)):  # walk visits a load's buffer too
            if id(n if isinstance(n, Buffer) else n.buffer) not in readonly:
                bad.append(n)
        elif not isinstance(n, (Var, IntImm, FloatImm, BinOp, UnaryOp, Cast, Select)):
            bad.append(n)
    walk(e, look)
    return not bad and not isinstance(e, Call)

